"""kro.engine.ownership: the engine's one plug-in, how an owner keeps what it applies.

A pass decides *what* an owner should have; its ownership *keeps* it: applying a batch (and as
which field manager), the proof that an apply would change nothing, the skip memory, the record
of what was applied, prune, teardown in reverse order, and release instead of deletion.
Implementations, which the pass cannot tell apart: the ApplySet (RGD instances,
kro.engine.applyset_ownership), the status inventory (`Graph`s,
kro.controllers.graph.inventory), and the recording one that wraps either for a dry run
(kro.engine.recording). docs/architecture.md shows how to add one. Every owner kind tears
down through `teardown_step`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kro.api.names import ANNOTATION_ABANDON_CLUSTER
from kro.applyset import AppliedResource, Desired
from kro.engine.results import ObjectId
from kro.runtime.client import Client
from kro.runtime.finalizers import remove_finalizer
from kro.runtime.gvk import GVR

__all__ = [
    "FINALIZER_ATTEMPTS",
    "Held",
    "Listed",
    "Ownership",
    "PruneOutcome",
    "PruneScope",
    "TeardownStep",
    "abandoned_clusters",
    "teardown_step",
]

Listed = Mapping[tuple[str, str, str, str], Mapping[str, Any]]
"""Live objects an ownership listed up front, by (group, resource, namespace, name)."""


@dataclass(frozen=True, slots=True)
class PruneScope:
    """What a pass tells its ownership at the prune: whether a node `failed` (nothing may be
    pruned), the nodes left `pending` (what they rendered may still be theirs), each node's
    topological `positions` (dependents go first), the watch `shard_version` it ran under."""

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
    """An object still held while its owner is torn down: its apply-order `wave` (highest
    first) and others' `finalizers`, which hold a terminating object and so its wave."""

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

    done: nothing the owner applied is left; the owner may let go. wave: the one being deleted.
    blocked: why teardown cannot go on; transient: an API error a retry may fix (otherwise a
        record that cannot be trusted, waiting for a repair).
    plan: what this step deletes or releases. held: what is still held (a planned step only).
    """

    done: bool
    wave: int | None = None
    blocked: str = ""
    transient: bool = False
    plan: tuple[str, ...] = field(default=())
    held: tuple[Held, ...] = field(default=())
    abandoned: tuple[str, ...] = field(default=())
    """Per member cluster given up on (M-16), one line of what was left there."""


def abandoned_clusters(owner_obj: Mapping[str, Any]) -> frozenset[str]:
    """M-16: the member clusters the owner's `kro.run/abandon-cluster` gives up on (never
    automatic): a teardown leaves their objects in place."""
    annotations = (owner_obj.get("metadata") or {}).get("annotations") or {}
    text = str(annotations.get(ANNOTATION_ABANDON_CLUSTER) or "")
    return frozenset(c.strip() for c in text.split(",") if c.strip())


class Ownership(Protocol):
    """How one owner keeps what it applies, for one pass or one teardown step."""

    @property
    def remembers(self) -> bool:
        """Whether the skip memory is on (`--skip-unchanged`)."""

    def vouches_for(self, live: Mapping[str, Any]) -> bool:
        """Whether `live` (maybe metadata only) is what this owner's last apply left."""

    def unchanged(self, owner_obj: Mapping[str, Any], item: Desired) -> bool:
        """Whether `item.observed` provably holds what an apply of `item` would send
        (kro.applyset.cache, as this ownership's field manager)."""

    async def begin(self, owner_obj: dict[str, Any]) -> Listed:
        """Before the pass reads: what this ownership lists anyway, to answer reads with."""

    async def apply(
        self, owner_obj: dict[str, Any], batch: Sequence[Desired]
    ) -> tuple[dict[str, Any], Sequence[AppliedResource]]:
        """Record the batch ahead, apply it; the owner as it now stands, and each outcome
        (neither object nor error: a dry run's create). Raises ApplySetError or KubeError when
        the record cannot be written: nothing was applied then."""

    async def prune(
        self, owner_obj: dict[str, Any], scope: PruneScope
    ) -> tuple[dict[str, Any], PruneOutcome]:
        """Delete (or release) what is recorded and no longer rendered, as far as `scope`
        allows. Raises ReleaseFailed when an orphan could not be released (kept, retried)."""

    async def teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        """One step of deleting everything recorded, in reverse apply order, releasing what
        must be; the adapter removes the owner's finalizer once `done`."""

    async def plan_teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        """The next teardown step as `teardown` would take it, from reads alone."""


FINALIZER_ATTEMPTS = 5
"""Tries to remove a finalizer (status or labels may be written meanwhile: a Conflict)."""


async def teardown_step(
    ownership: Ownership, client: Client, owner: dict[str, Any], gvr: GVR, finalizer: str
) -> TeardownStep:
    """One step of `ownership`'s teardown of `owner` (of resource `gvr`); once nothing is left,
    `finalizer` is removed (a merge patch carrying the resourceVersion, retried on a Conflict)."""
    step = await ownership.teardown(owner)
    if step.done:
        await remove_finalizer(client, gvr, owner, finalizer, attempts=FINALIZER_ATTEMPTS)
    return step
