"""kro.runtime.reconcile: the contract between a controller and the code that does the work.

Reconciliation is level-based: a Request names an object, never an event, so a reconciler
re-reads the world and tolerates any number of coalesced or missed events. The controller
(kro.runtime.controller) owns retries: a reconciler returns a `Result` to come back later,
raises any exception to fail (a rate-limited retry), and raises `TerminalError` when no retry
can help.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar


@dataclass(frozen=True, slots=True)
class Request:
    """The object to reconcile; hashable, so it is the work-queue key."""

    namespace: str  # "" for cluster-scoped objects
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    """What to do after a reconcile that did not fail.

    requeue_after_s: look again in this many seconds although nothing we watch changed (e.g.
    waiting on a field no watch reports). It wins over `requeue` and does not count as a retry.
    requeue: come back after a rate-limited delay without reporting an error; rarely what you
    want. Failures are exceptions, not Results, so one code path counts, logs and backs them off.
    background: come back once no other key waits (the queue's background lane), outside the
    rate limiter: follow-up work that must not delay any other object, such as bookkeeping
    written after the object is done. The two above win over it.
    """

    requeue: bool = False
    requeue_after_s: float | None = None
    background: bool = False


class TerminalError(Exception):
    """The object cannot converge until someone edits it: record it, do not retry."""


class ObjectKey(Protocol):
    """What a controller needs of a queue key to label its logs: a namespace and a name.

    `Request` is the usual key; a controller watching many kinds can use its own frozen dataclass
    (say, with a GVR as well) as long as it is hashable and has these two fields.
    """

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...


K_contra = TypeVar("K_contra", contravariant=True)


class Reconciler(Protocol[K_contra]):
    """Drives one object towards its desired state."""

    async def reconcile(self, request: K_contra) -> Result:
        """Converge the object named by `request`; raise to retry, TerminalError to give up."""
        ...
