"""kro.runtime.failureevents: a Warning Event on the object whose reconcile failed.

A failed reconcile is logged and retried by the controller, which helps whoever reads the
operator's logs; the person who owns the object runs `kubectl describe` instead. So every
controller the builder makes tells them, as kopf does for every handler error: a Warning Event
on the object, reason `ReconcileFailed`, message the error (scrubbed of credentials by the
recorder). Retries of the same error fold into one Event with a count, near-repeats whose text
changes are combined, and a burst is rate limited per object (kro.runtime.events), so a key
that fails for an hour is one Event, not hundreds.

The object comes from the controller's cache: an object that is gone has nobody to tell, and
the controller's log still has the failure. Opt out per controller with the builder's
`failure_events(False)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from .cache import InformerCache
from .discovery import RESTMapper
from .errors import NoKindMatch
from .events import Recorder
from .outcomes import Outcome, ReconcileObserver
from .reader import Kind, gvr_of
from .reconcile import Request

__all__ = ["REASON", "FailureEvents", "cached_object", "failure_message"]

REASON: Final = "ReconcileFailed"
Lookup = Callable[[Request], Mapping[str, Any] | None]

_AFTERWARDS: Final = {
    Outcome.RETRY: "will retry",
    Outcome.TERMINAL: "not retried until the object changes",
    Outcome.DROPPED: "retries exhausted until the object changes",
}


def failure_message(error: BaseException, outcome: Outcome) -> str:
    """What the Event says: the error, then what the controller does next. Constant for one
    error, so repeats fold into one Event."""
    text = str(error) or "(no message)"
    return f"{type(error).__name__}: {text} ({_AFTERWARDS.get(outcome, outcome.value)})"


def cached_object(cache: InformerCache, kind: Kind, mapper: RESTMapper | None) -> Lookup:
    """The primary a request names, from whichever synced informer of `cache` holds it."""

    def lookup(request: Request) -> Mapping[str, Any] | None:
        try:
            gvr = gvr_of(kind, mapper)
        except NoKindMatch:
            return None
        namespace = request.namespace or None
        informer, _complete = cache.holding(gvr, namespace)
        return None if informer is None else informer.store.get_by(namespace, request.name)

    return lookup


class FailureEvents(ReconcileObserver[Request]):
    """Records a Warning Event about the object of every failed reconcile (module doc)."""

    def __init__(self, recorder: Recorder, lookup: Lookup) -> None:
        self._recorder = recorder
        self._lookup = lookup

    def reconciled(
        self, item: Request, outcome: Outcome, seconds: float, error: Exception | None
    ) -> None:
        if error is None or not outcome.failed:
            return
        obj = self._lookup(item)
        if obj is not None:
            self._recorder.record(obj, "Warning", REASON, failure_message(error, outcome))
