"""kro.applyset.prune: delete members the last batch did not apply (R-13, N-10, N-11).

A member is an orphan when it carries our `part-of` label but its UID is not among those the
batch just applied (its node was excluded by includeWhen or removed from the graph, or its
collection shrank). Pruning is only safe after a pass in which every node resolved and every
apply succeeded (a node we merely failed to render this time would be deleted otherwise), so
`prune` checks that itself and returns a skipped result instead.

Orphans are deleted in waves by the caller's topological positions, highest first, and those
whose `kro.run/node-id` the caller does not know (node removed) before all others: dependents
before their dependencies. Unlike deletion (D-04) a wave does not wait for the previous one to
disappear; the DELETEs are merely issued in that order. An orphan that says
`deletionPolicy: Orphaned` is released instead (kro.applyset.members, V-34).

After a clean prune (nothing conflicted or failed) the result carries the batch's inventory
for the caller to write with `Applier.ensure_inventory`: only then may the parent forget kinds
and namespaces (N-11). A conflict or failure keeps the superset so the next pass retries.

The prune's list (a label-selector LIST per kind and namespace, which the API server answers
by filtering every object of the kind in the namespace) finds, on a converging instance,
exactly what the pass applied. `MemberLedger` (one fact of kro's one skip memory,
kro.runtime.memory) skips it: members are only ever made by kro's applies, so this process can
know an ApplySet's complete member set (its methods say when), and a pass that applies exactly
that set (same UIDs) does not list. Kept per ApplySet: a 16-byte digest of the sorted UIDs, or
"started"; bounded LRU, in memory only (forgetting, or a restart, costs one list). What it
cannot see (an object someone else labels with the ApplySet's id, an orphan of a parent whose
finalizer was removed by hand created again under the same name) is pruned at the next list.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import structlog

from kro.api.names import LABEL_NODE_ID
from kro.applyset.inventory import Inventory
from kro.applyset.members import (
    Failure,
    Member,
    delete_member,
    is_orphaned,
    list_members,
    release_member,
    settle,
)
from kro.runtime.client import Client
from kro.runtime.memory import UNVERSIONED, Fact, ObjectMemory
from kro.runtime.objectref import ObjectRef

if TYPE_CHECKING:  # the applier keeps the ledger: a runtime import would be circular
    from kro.applyset.applier import ApplyResult

__all__ = ["MemberLedger", "PruneResult", "orphan_waves", "prune"]

log = structlog.get_logger(__name__)

_STARTED = b""


def _digest(uids: Iterable[str]) -> bytes:
    return hashlib.blake2b("\n".join(sorted(uids)).encode(), digest_size=16).digest()


class MemberLedger:
    """ApplySet id -> what this process knows its complete member set to be. Unversioned: only
    kro's own applies and prunes change an ApplySet's members, and this process sees them."""

    def __init__(self, max_entries: int = 16384, *, memory: ObjectMemory | None = None) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._fact: Fact[bytes] = Fact("members", max_entries)
        self.memory = memory if memory is not None else ObjectMemory()
        self._epoch = 0

    def epoch(self, epoch: int) -> None:
        """Forget every ApplySet when `epoch` (the shard ranges' version, kro.runtime.sharding)
        moved: what was known may have changed under another replica meanwhile."""
        if epoch != self._epoch:
            self.memory.clear(self._fact)
            self._epoch = epoch

    def started(self, applyset_id: str) -> None:
        """kro has just written the first inventory of this ApplySet: it has no member yet."""
        self.memory.remember(self._fact, applyset_id, UNVERSIONED, _STARTED)

    def settled(self, applyset_id: str, uids: Iterable[str]) -> None:
        """The ApplySet's members are exactly `uids` (a clean prune, or one skipped here)."""
        self.memory.remember(self._fact, applyset_id, UNVERSIONED, _digest(uids))

    def unpruned(self, applyset_id: str, applied: Iterable[str]) -> None:
        """A pass applied `applied` but did not prune (data pending, or an apply failed): the
        members are now what was known plus `applied`. A new ApplySet's members are exactly
        `applied`; a known set stays known only if `applied` is that same set."""
        entry = self.memory.recall(self._fact, applyset_id, None)
        if entry == _STARTED:
            self.settled(applyset_id, applied)
        elif entry is not None and entry != _digest(applied):
            self.forget(applyset_id)

    def nothing_to_prune(self, applyset_id: str, keep: Iterable[str]) -> bool:
        """Whether every member of the ApplySet is known to be in `keep`."""
        entry = self.memory.recall(self._fact, applyset_id, None)
        return entry is not None and entry in (_STARTED, _digest(keep))

    def knows(self, applyset_id: str) -> bool:
        """Whether this process knows the ApplySet's complete member set (a prune of it will
        list nothing unless the applied set differs)."""
        return self.memory.version(self._fact, applyset_id) is not None

    def forget(self, applyset_id: str) -> None:
        self.memory.forget(self._fact, applyset_id)


@dataclass(frozen=True, slots=True)
class PruneResult:
    """skipped: R-13's preconditions did not hold; nothing was listed or deleted.
    deleted: DELETEs issued (the objects may still be terminating). released: orphans left in
        place without kro's keys. conflicts: UID (or a release's resourceVersion) preconditions
        that failed. failures: other API errors (`Failure.action` names a failed release);
        waves after a failing one were not attempted.
    inventory: the shrunk inventory to record, present only after a clean prune.
    """

    skipped: bool = False
    deleted: tuple[ObjectRef, ...] = ()
    released: tuple[ObjectRef, ...] = ()
    conflicts: tuple[ObjectRef, ...] = ()
    failures: tuple[Failure, ...] = ()
    inventory: Inventory | None = None

    @property
    def changed(self) -> bool:
        """Something was deleted or released (the caller's "cluster mutated")."""
        return bool(self.deleted or self.released)


def _wave_key(member: Member, positions: Mapping[str, int]) -> float:
    position = positions.get(member.labels.get(LABEL_NODE_ID, ""))
    return math.inf if position is None else float(position)


def orphan_waves(orphans: Sequence[Member], positions: Mapping[str, int]) -> list[list[Member]]:
    """Group orphans into deletion waves: unknown node IDs first, then by descending
    topological position. Order inside a wave follows `orphans`."""
    keys = sorted({_wave_key(m, positions) for m in orphans}, reverse=True)
    return [[m for m in orphans if _wave_key(m, positions) == key] for key in keys]


async def prune(
    client: Client,
    result: ApplyResult,
    *,
    positions: Mapping[str, int],
    all_resolved: bool,
    ledger: MemberLedger | None = None,
    members: Sequence[Member] | None = None,
) -> PruneResult:
    """Delete the members of `result`'s ApplySet that `result` did not apply.

    positions: node ID -> topological position (index in the graph's topological order).
    all_resolved: every node of the graph resolved this pass (no data pending, R-13).
    ledger: what this process knows of the ApplySet's members; when it vouches that every
        member is among those applied, nothing is listed (a clean prune that deleted nothing).
    members: the ApplySet's members as the caller listed them at the start of the pass
        (`list_members`), if it did: every member since is one the pass applied (it is in
        `keep`), so that list is complete for the prune and none is made here.
    Raises KubeError if members cannot be listed (nothing is deleted then).
    """
    keep = result.applied_uids
    applyset_id = result.parent.id
    if not all_resolved or result.has_errors:
        if ledger is not None:
            ledger.unpruned(applyset_id, keep)
        return PruneResult(skipped=True)
    if ledger is not None and ledger.nothing_to_prune(applyset_id, keep):
        ledger.settled(applyset_id, keep)
        return PruneResult(inventory=result.batch_inventory)
    if members is None:
        members = await list_members(client, result.parent, result.inventory)
    candidates = [m for m in members if m.ref.uid not in keep and not m.terminating]
    orphaned = [m for m in candidates if is_orphaned(m)]
    releases = await settle(orphaned, partial(release_member, client), "release")  # as ON_PRUNE
    deleted: list[ObjectRef] = []
    conflicts: list[ObjectRef] = list(releases.conflicts)
    failures: list[Failure] = list(releases.failures)  # a release holds back no delete
    for wave in orphan_waves([m for m in candidates if not is_orphaned(m)], positions):
        deletes = await settle(wave, partial(delete_member, client), "prune")
        deleted += deletes.done
        conflicts += deletes.conflicts
        failures += deletes.failures
        for member in (m for m in wave if m.ref in deletes.done):
            log.info(
                "applyset.orphan_pruned",
                gvr=str(member.ref.gvr),
                namespace=member.ref.namespace,
                name=member.ref.name,
                resource_id=member.labels.get(LABEL_NODE_ID, ""),
            )
        if deletes.failures:
            break
    clean = not conflicts and not failures
    if ledger is not None:
        if clean:
            ledger.settled(applyset_id, keep)
        else:
            ledger.forget(applyset_id)
    return PruneResult(
        deleted=tuple(deleted),
        released=releases.done,
        conflicts=tuple(conflicts),
        failures=tuple(failures),
        inventory=result.batch_inventory if clean else None,
    )
