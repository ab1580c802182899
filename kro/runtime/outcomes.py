"""kro.runtime.outcomes: how a controller judged one reconcile, for whoever keeps score.

kro.runtime.Controller decides what happens to a key after its reconcile (forget, requeue,
back off, drop); this module names those decisions (`Outcome`) and lets a controller's owner
watch them (`ReconcileObserver`) without re-implementing the judgement. The controller's own
controller-runtime metrics are one such score; a controller that hosts many kinds (kro's
dynamic controller) keeps per-kind families the same way.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Generic, TypeVar

BUG_TYPES: Final[tuple[type[BaseException], ...]] = (
    AssertionError,
    AttributeError,
    LookupError,
    NameError,
    TypeError,
    ArithmeticError,
    RecursionError,
)
"""Exceptions that signal a bug in the reconciler rather than a failure of the world: Python's
stand-in for Go's panics (controller_runtime_reconcile_panics_total counts them)."""


def is_bug(error: BaseException) -> bool:
    """Is `error` a reconciler's bug (a "panic") rather than a failure of the world?"""
    return isinstance(error, BUG_TYPES)


class Outcome(StrEnum):
    """What the controller did with a key after its reconcile."""

    SUCCESS = "success"  # Result(): failures forgotten
    REQUEUE_AFTER = "requeue_after"  # Result(requeue_after_s=d): back in d seconds
    REQUEUE = "requeue"  # Result(requeue=True): rate-limited re-add, not an error
    BACKGROUND = "background"  # Result(background=True): back once no other key waits
    TERMINAL = "terminal"  # TerminalError: forgotten, never retried
    RETRY = "retry"  # another exception: rate-limited re-add
    DROPPED = "dropped"  # another exception after max_retries: dropped until its next event

    @property
    def failed(self) -> bool:
        """Did the reconcile raise?"""
        return self in (Outcome.TERMINAL, Outcome.RETRY, Outcome.DROPPED)

    @property
    def result_label(self) -> str:
        """controller-runtime's `result` label of controller_runtime_reconcile_total (which
        has no value of its own for a background re-add: it is a requeue)."""
        if self.failed:
            return "error"
        return Outcome.REQUEUE.value if self is Outcome.BACKGROUND else self.value


K_contra = TypeVar("K_contra", contravariant=True)


class ReconcileObserver(Generic[K_contra]):
    """Told about every key a worker takes and every judged reconcile; override what you need.

    Called on the worker's task, so keep it cheap and never raise (a raising observer is
    logged as the controller's own bug, and the key is handled as judged).
    """

    def taken(self, item: K_contra) -> None:
        """A worker took `item` from the queue (before the work gate and the shard are asked)."""

    def reconciled(
        self, item: K_contra, outcome: Outcome, seconds: float, error: Exception | None
    ) -> None:
        """`item` was reconciled in `seconds` and judged `outcome` (`error`: what it raised)."""


class Observers(ReconcileObserver[K_contra]):
    """Several observers told in turn, so a controller can serve more than one score keeper
    (its owner's, and the builder's Warning Events on failed reconciles); one that raises is
    the controller's to log, as for a single observer."""

    def __init__(self, *observers: ReconcileObserver[K_contra]) -> None:
        self.observers = observers

    def taken(self, item: K_contra) -> None:
        for observer in self.observers:
            observer.taken(item)

    def reconciled(
        self, item: K_contra, outcome: Outcome, seconds: float, error: Exception | None
    ) -> None:
        for observer in self.observers:
            observer.reconciled(item, outcome, seconds, error)
