"""kro.engine.ownership: the engine's one plug-in, how an owner keeps what it applies.

A pass (kro.engine.graph_pass) decides *what* an owner should have: which nodes are included,
what they render, what is ready. Everything about *keeping* it is the owner's ownership: how a
batch is applied and under which field manager, the proof that an apply would change nothing,
the skip memory that lets a read or an apply be saved, the record of what was applied, the
prune of what is no longer rendered, teardown in reverse order, and release (an object whose
`deletionPolicy` is `Orphaned`, a patch node's contribution) instead of deletion.

Three implementations, and the pass cannot tell them apart:

- the ApplySet one (kro.engine.applyset_ownership): RGD instances; kubectl's ApplySet labels
  and annotations on the instance and its children, field manager `kro.run/applyset`;
- the status-inventory one (kro.controllers.graph.inventory): `Graph`s; the record is the
  Graph's own `status.managedResources` and `status.contributions`;
- the recording one (kro.engine.recording): wraps either for a dry run (`kro explain`); it
  reads, judges with the wrapped ownership's own proof, and writes nothing.

A new way to keep objects (a member cluster as the target, say) is a new implementation; a
new owner kind picks one of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kro.api.names import ANNOTATION_ABANDON_CLUSTER
from kro.applyset import AppliedResource, Desired
from kro.engine.results import ObjectId

__all__ = [
    "Held",
    "Listed",
    "Ownership",
    "PruneOutcome",
    "PruneScope",
    "TeardownStep",
    "abandoned_clusters",
]

Listed = Mapping[tuple[str, str, str, str], Mapping[str, Any]]
"""Live objects an ownership listed up front, by (group, resource, namespace, name)."""


@dataclass(frozen=True, slots=True)
class PruneScope:
    """What a pass tells its ownership at the prune.

    failed: a node failed (an expression, an apply): nothing may be pruned on this pass.
    pending: nodes the pass could not resolve: what they rendered before may still be theirs.
    positions: each node's topological position (dependents are pruned before dependencies).
    shard_version: the watch shard layout the pass ran under (memories keyed by it).
    """

    failed: bool
    pending: frozenset[str]
    positions: Mapping[str, int]
    shard_version: int = 0


@dataclass(frozen=True, slots=True)
class PruneOutcome:
    """deleted: something was deleted or released. retry: only a later pass can finish
    (a conflict, a failure the ownership keeps for that pass)."""

    deleted: bool = False
    retry: bool = False


@dataclass(frozen=True, slots=True)
class Held:
    """An object an owner still holds while it is torn down, as its teardown sees it.
    wave: its apply-order wave (deleted highest first). finalizers: others' finalizers on it,
    which hold a terminating object (and so the wave) until whoever added them is done."""

    obj: ObjectId
    node: str
    wave: int
    terminating: bool
    finalizers: tuple[str, ...] = ()
    cluster: str = ""
    """The member cluster it lives in (M-16); "" for the owner's own cluster."""


@dataclass(frozen=True, slots=True)
class TeardownStep:
    """One step of an owner's teardown.

    done: nothing the owner applied is left (deleted, or released); the owner may let go.
    wave: the apply-order wave being deleted, while not done and not blocked.
    blocked: why teardown cannot go on ("" when it can).
    transient: the block is an API error a retry may fix, not a record that cannot be trusted
        (which waits for someone to repair it).
    plan: what this step deletes or releases (a dry run's whole answer: nothing is sent).
    held: what is still held and deleted in waves (a planned step only), highest wave first.
    """

    done: bool
    wave: int | None = None
    blocked: str = ""
    transient: bool = False
    plan: tuple[str, ...] = field(default=())
    held: tuple[Held, ...] = field(default=())
    abandoned: tuple[str, ...] = field(default=())
    """Member clusters this step gave up on (`kro.run/abandon-cluster`, M-16), each with what
    was left there, as one line: the owner's adapter reports them."""


def abandoned_clusters(owner_obj: Mapping[str, Any]) -> frozenset[str]:
    """M-16: the member clusters the owner's `kro.run/abandon-cluster` gives up on (an
    operator's explicit choice, never automatic): a teardown leaves their objects in place."""
    annotations = (owner_obj.get("metadata") or {}).get("annotations") or {}
    text = str(annotations.get(ANNOTATION_ABANDON_CLUSTER) or "")
    return frozenset(c.strip() for c in text.split(",") if c.strip())


class Ownership(Protocol):
    """How one owner keeps what it applies, for one pass or one teardown step."""

    @property
    def remembers(self) -> bool:
        """Whether the skip memory is on (`--skip-unchanged`): a cached object this ownership
        vouches for may answer a read, and a proven no-op is not applied."""

    def vouches_for(self, live: Mapping[str, Any]) -> bool:
        """Whether `live`, even from a metadata-only cache, is exactly what this owner's last
        apply of it left (same uid and resourceVersion, nothing contested)."""

    def unchanged(self, owner_obj: Mapping[str, Any], item: Desired) -> bool:
        """Whether the live object `item.observed` provably holds what an apply of `item` for
        `owner_obj` would send (kro.applyset.noop, judged by the field manager this ownership
        applies as)."""

    async def begin(self, owner_obj: dict[str, Any]) -> Listed:
        """Before the pass reads: what this ownership lists anyway (its members, bodies
        included) and may answer the pass's reads with; empty when it lists nothing."""

    async def apply(
        self, owner_obj: dict[str, Any], batch: Sequence[Desired]
    ) -> tuple[dict[str, Any], Sequence[AppliedResource]]:
        """Record the batch ahead, apply it; the owner as it now stands, and each outcome (an
        outcome with neither object nor error: the object would be created, in a dry run).

        Raises ApplySetError or KubeError when the record cannot be written: nothing of the
        batch was applied then."""

    async def prune(
        self, owner_obj: dict[str, Any], scope: PruneScope
    ) -> tuple[dict[str, Any], PruneOutcome]:
        """Delete (or release) what is recorded and no longer rendered, as far as `scope`
        allows; the owner as it now stands. Raises ReleaseFailed when an orphan could not be
        released (the record keeps it, so the next pass retries)."""

    async def teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        """One step of deleting everything recorded, in reverse apply order, releasing what
        must be released. The owner's finalizer is its adapter's to remove once `done`."""

    async def plan_teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        """The next teardown step as `teardown` would take it (what it deletes or releases,
        what blocks it), from reads alone: `kro explain`'s deletion report."""
