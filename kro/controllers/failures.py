"""kro.controllers.failures: a failure someone must act on, told in the three places they look.

Conditions say what is wrong to whoever reads the object; an operator watching a whole cluster
needs more. Every failure a user must act on (a child apply refused with 422 or 403, an instance
reconcile that failed, an RGD whose graph is invalid, a CRD that cannot be installed) goes,
through a `FailureReporter`, to:

* the log: one warning line when the cause of an object's failure changes, not one per retry
  (the last cause per object is kept in memory; a recovery is one info line and frees it);
* a Warning Event on the object when the cause changes, as the log line: a retry that fails the
  same way says nothing new, and an Event per retry would grow without end while the object
  waits for someone to act (retries back off, but never stop);
* the counter `<family>_errors_total{rgd, reason}`, every time, with each reason initialised at 0
  when the RGD or its kind is registered (`initialise`), so alerts see the series before the
  first failure.

The reason is the Event's (CamelCase, `ResourceApplyFailed`); the counter's `reason` label is the
same word in snake_case (`resource_apply_failed`), as Prometheus label values usually are.
Messages are the ones the conditions carry. None holds Secret data, and logs and Events are
scrubbed of credentials on their way out as well (kro._redact).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from kro.runtime.events import EventRecorder
from kro.runtime.failurelog import FailureLog
from kro.runtime.metrics import Counter

log = structlog.get_logger(__name__)

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def metric_reason(reason: str) -> str:
    """The counter label for an Event reason: `ResourceApplyFailed` -> `resource_apply_failed`,
    `CRDInstallFailed` -> `crd_install_failed`."""
    return _WORD.sub("_", reason).lower()


@dataclass(frozen=True, slots=True)
class Failure:
    """One failure of one object: the Event reason, the user-facing message, and log fields
    (`resource_id`, `code`, ...) that help an operator find it without reading the message."""

    reason: str
    message: str
    fields: Mapping[str, Any] = field(default_factory=dict)


class FailureReporter:
    """Reports the failures of the objects of one RGD (its instances, or the RGD itself).

    `event`: the structlog event name of the warning line (`instance.failed`, `rgd.failed`);
    the bound context (rgd, namespace, name) comes from the caller's `bound_contextvars`.
    `recorder`: where Warning Events go (None: no Events, e.g. in unit tests).
    """

    def __init__(
        self,
        *,
        rgd: str,
        event: str,
        counter: Counter,
        reasons: Sequence[str],
        recorder: EventRecorder | None = None,
    ) -> None:
        self.rgd = rgd
        self._event = event
        self._recovered = f"{event.partition('.')[0]}.recovered"  # `instance.recovered`
        self._counter = counter
        self._reasons = tuple(reasons)
        self.recorder = recorder
        self._causes = FailureLog(log)

    def initialise(self) -> None:
        """Create every reason's series at 0 (called when the RGD or kind is registered)."""
        for reason in self._reasons:
            self._counter.inc(0, rgd=self.rgd, reason=metric_reason(reason))

    def report(self, key: Hashable, obj: Mapping[str, Any], failure: Failure) -> None:
        """`obj` (known as `key`) failed with `failure`: count it; record the Event and log it
        if its cause changed since the last report."""
        self._counter.inc(rgd=self.rgd, reason=metric_reason(failure.reason))
        if not self._causes.remember(key, (failure.reason, failure.message)):
            return
        if self.recorder is not None:
            self.recorder.record(obj, "Warning", failure.reason, failure.message)
        log.warning(self._event, reason=failure.reason, error=failure.message, **failure.fields)

    def clear(self, key: Hashable) -> None:
        """`key` works again: say so once, and forget its last cause."""
        cause = self._causes.release(key)
        if isinstance(cause, tuple):
            log.info(self._recovered, previous_reason=cause[0])

    def forget(self, key: Hashable) -> None:
        """`key` is gone: forget its last cause without a word."""
        self._causes.release(key)

    def failing(self) -> int:
        """How many objects are failing now (their last cause is kept)."""
        return len(self._causes)
