"""kro.controllers.leadership: one writer for RGDs, GraphRevisions and CRDs among replicas that
all run their controllers (`kro controller --shards=auto`).

With sharding every replica reconciles a share of the instances, so every replica needs what
instance reconciles stand on: the compiled graph of each GraphRevision in its registry
(kro.controllers.registry) and an instance reconciler registered with the dynamic controller for
each generated kind (kro.controllers.instance.kinds). Those are built by the RGD and
GraphRevision controllers, so every replica runs them (`Manager.add_controller(...,
leader_only=False)`). What the issue keeps to one leader, as without sharding, are their
*writes*: finalizers, GraphRevision creation, adoption and garbage collection, CRD creation and
updates, and the status of RGDs and GraphRevisions.

The design is one gate, asked by the two reconcilers, rather than a second pair of controllers:

* `WriteGate.allowed()` is the manager's `may_reconcile` (true while this replica holds the
  leader Lease and renewed it within the renew deadline on its own clock; `KroApp`
  binds it). Without sharding the gate is always open and the controllers are leader-only as
  before, so nothing changes there.
* Each reconcile asks once, at its start, which path to take. The *leader path* is the
  controller as it always was. The *follower path* reads the same objects and changes only this
  process: a GraphRevision is compiled once the leader's status gives its verdict
  (`GraphVerified`), so every replica agrees with the leader on which revisions are Active or
  Failed; an RGD's latest Active revision is registered for its kind once the cluster's CRD is
  what the leader would make it (so a follower never serves a graph before the schema it needs,
  and never writes to make it so); a deleted RGD's kinds are released (drained, then
  deregistered) as on the leader, whose finalizer removal is what lets the RGD go.
* Leadership can end in the middle of a leader path: each write there asks `check()` first,
  which raises `NotLeader` once the gate is closed. The reconcile fails, is retried with back-off
  and the retry takes the follower path. (Losing the Lease also ends the process, as without
  sharding: kro.runtime.manager.)
* Winning the Lease, a replica runs `Promotion` (a leader-only runnable): every RGD and
  GraphRevision in the caches is queued again, and the leader path now writes whatever the
  previous leader left undone (a revision it issued but never compiled, a CRD it never applied,
  a status it never wrote). Instance reconciliation never stops meanwhile: the controllers that
  run it are the same ones, on every replica, whoever leads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)


class NotLeader(Exception):
    """A write only the leader may make, asked for after this replica stopped leading."""


def _always() -> bool:
    return True


class WriteGate:
    """May this replica write RGDs, GraphRevisions and CRDs now? Open until `bind` says
    otherwise (one replica, leader election handled by the controllers being leader-only)."""

    def __init__(self, allowed: Callable[[], bool] = _always) -> None:
        self._allowed = allowed

    def bind(self, allowed: Callable[[], bool]) -> None:
        """Ask `allowed()` from now on (the manager's `may_reconcile`)."""
        self._allowed = allowed

    def allowed(self) -> bool:
        return self._allowed()

    def check(self, write: str) -> None:
        """Raise NotLeader unless writes are allowed; `write` names it for the log."""
        if not self._allowed():
            log.info("leadership.write_refused", write=write)
            raise NotLeader(f"not the leader: {write} left to the leader")


class Promotion:
    """A leader-only runnable: each time this replica starts leading, `on_start()` queues every
    RGD and GraphRevision again so that the leader path writes what followers left alone."""

    def __init__(self, on_start: Callable[[], None]) -> None:
        self._on_start = on_start
        self._stopped = asyncio.Event()

    async def run(self) -> None:
        log.info("leadership.promoted")
        self._on_start()
        await self._stopped.wait()

    def shutdown(self) -> None:
        self._stopped.set()
