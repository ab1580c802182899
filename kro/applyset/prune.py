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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import structlog

from kro.api.names import LABEL_NODE_ID
from kro.applyset.applier import ApplyResult
from kro.applyset.cache import MemberLedger
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
from kro.runtime.objectref import ObjectRef

__all__ = ["PruneResult", "orphan_waves", "prune"]

log = structlog.get_logger(__name__)


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
