"""kro.controllers.instance.options: the instance reconcilers' flags, apart from the reconciler.

`kro controller` sets them at start-up; the reconciler (and through it the graph evaluator and
the CEL engine) is imported only when the first RGD's kind is served.
"""

from __future__ import annotations

from dataclasses import dataclass

from kro.runtime.ratelimit import ItemExponentialBackoff


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


Key = tuple[str, str]
"""An instance's (namespace, name)."""


class RequeueBackoff:
    """The delays of instances that wait or fail (V-08): `--instance-requeue-interval` first,
    doubled per consecutive wait up to the cap, forgotten when a pass makes progress. None of
    it when the interval is 0 (watch events only)."""

    def __init__(self, interval_s: float, cap_s: float) -> None:
        self._delays: ItemExponentialBackoff[Key] | None = (
            ItemExponentialBackoff(base_s=interval_s, cap_s=max(interval_s, cap_s))
            if interval_s > 0
            else None
        )

    @classmethod
    def of(cls, options: InstanceOptions) -> RequeueBackoff:
        return cls(options.requeue_interval_s, options.requeue_max_interval_s)

    @property
    def enabled(self) -> bool:
        return self._delays is not None

    def next(self, key: Key) -> tuple[float, int] | None:
        """The delay of `key`'s next wait and how many waits in a row that makes."""
        if self._delays is None:
            return None
        return self._delays.when(key), self._delays.num_requeues(key)

    def reset(self, key: Key) -> None:
        if self._delays is not None:
            self._delays.forget(key)
