"""kro.controllers.instance.options: the instance reconcilers' flags, apart from the reconciler.

`kro controller` sets them at start-up; the reconciler (and through it the graph evaluator and
the CEL engine) is imported only when the first RGD's kind is served.
"""

from __future__ import annotations

from dataclasses import dataclass

from kro.controllers.requeue import RequeueBackoff


@dataclass(frozen=True, kw_only=True)
class InstanceOptions:
    """requeue_interval_s: `--instance-requeue-interval`, the first delay of an instance that
        waits or fails; consecutive waits double it up to `requeue_max_interval_s` (0 disables
        delayed requeues: watch events only).
    requeue_max_interval_s: the cap of that doubling (`--instance-requeue-max-interval`,
        5 minutes as upstream's fixed cap).
    condition_events: one Event per condition change (feature gate InstanceConditionEvents);
        Warnings kro-py adds of its own (a field fight) are recorded regardless."""

    requeue_interval_s: float = 3.0
    requeue_max_interval_s: float = 300.0
    max_collection_size: int = 1000
    condition_events: bool = False

    def backoff(self) -> RequeueBackoff:
        """The delays of an RGD's instances that wait or fail (V-08)."""
        return RequeueBackoff(self.requeue_interval_s, self.requeue_max_interval_s)
