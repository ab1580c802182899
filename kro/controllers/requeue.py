"""kro.controllers.requeue: when an owner is looked at again, for every owner kind.

An owner that waits on the cluster (a child not ready, data not there yet, a kind not served)
or failed in a way a later pass may fix comes back after a delay that doubles with each
consecutive wait, up to a cap (V-08 for RGD instances, V-60 for `Graph`s); a pass that made
progress ends the streak. Watch events still bring an owner back at once: the delay only bounds
how long a wait that no event ends can last, and a failure that does not heal costs one retry
per cap instead of one per interval.
"""

from __future__ import annotations

from collections.abc import Hashable

import structlog

from kro.runtime.ratelimit import ItemExponentialBackoff
from kro.runtime.reconcile import Result

__all__ = ["RequeueBackoff"]

log = structlog.get_logger(__name__)


class RequeueBackoff:
    """Per owner (any hashable key), the delays of consecutive waits: `interval_s` first,
    doubled up to `cap_s`. An interval of 0 disables delayed requeues (watch events only)."""

    def __init__(self, interval_s: float, cap_s: float) -> None:
        self._delays: ItemExponentialBackoff[Hashable] | None = (
            ItemExponentialBackoff(base_s=interval_s, cap_s=max(interval_s, cap_s))
            if interval_s > 0
            else None
        )

    @property
    def enabled(self) -> bool:
        return self._delays is not None

    def next(self, key: Hashable) -> tuple[float, int] | None:
        """The delay of `key`'s next wait and how many waits in a row that makes."""
        if self._delays is None:
            return None
        return self._delays.when(key), self._delays.num_requeues(key)

    def wait(self, key: Hashable, reason: str) -> Result:
        """The owner waits: come back after the streak's next delay (none when disabled)."""
        scheduled = self.next(key)
        if scheduled is None:
            return Result()
        delay, attempt = scheduled
        log.debug("owner.requeue_scheduled", delay_s=delay, attempt=attempt, reason=reason)
        return Result(requeue_after_s=delay)

    def reset(self, key: Hashable) -> None:
        """A clean pass (or the owner is gone): the next wait starts from the first delay."""
        if self._delays is not None:
            self._delays.forget(key)
