"""kro.controllers.instance.options: the instance reconcilers' flags, apart from the reconciler.

`kro controller` sets them at start-up; the reconciler (and through it the graph evaluator and
the CEL engine) is imported only when the first RGD's kind is served.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class InstanceOptions:
    """requeue_interval_s: `--instance-requeue-interval` (0 disables delayed requeues).
    condition_events: one Event per condition change (feature gate InstanceConditionEvents);
        Warnings kro-py adds of its own (a field fight) are recorded regardless."""

    requeue_interval_s: float = 3.0
    max_collection_size: int = 1000
    condition_events: bool = False
