"""kro.engine.applyset_ownership: an owner that keeps its objects as a kubectl ApplySet.

RGD instances own their children this way (R-10..R-13, D-02..D-05): the instance is the
ApplySet parent (its inventory of kinds and namespaces in its labels and annotations), every
child carries `applyset.kubernetes.io/part-of`, and applies go through the long-lived
`kro.applyset.Applier` under the field manager `kro.run/applyset`. The record is the children's
own labels, so a prune and a teardown list them back; the process's skip memory (the applier's)
remembers what each apply left, which saves re-applies and lets a metadata cache answer reads.

Prune waits for a pass in which every node resolved and nothing failed (R-13); teardown deletes
the highest apply-order wave still present per step, after releasing what says
`deletionPolicy: Orphaned` (kro.applyset.deletion).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kro.api.names import FIELD_MANAGER_APPLYSET, LABEL_NODE_ID
from kro.applyset import (
    AppliedResource,
    Applier,
    ApplyResult,
    ApplySetError,
    Desired,
    Member,
    Parent,
    ReleaseFailed,
    apply_order,
    combined,
    delete_next_wave,
    list_members,
    prune,
    read_inventory,
)
from kro.applyset.applier import member_body
from kro.applyset.deletion import plan_next_wave
from kro.applyset.noop import already_applied
from kro.engine.ownership import Held, Listed, PruneOutcome, PruneScope, TeardownStep
from kro.engine.results import ObjectId
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR

__all__ = ["ApplySetOwnership"]


class ApplySetOwnership:
    """`Ownership` of one RGD instance (the ApplySet parent, of resource `gvr`), for one pass
    or one teardown step."""

    def __init__(self, *, applier: Applier, client: Client, gvr: GVR) -> None:
        self.applier = applier
        self.client = client
        self.gvr = gvr
        self._results: list[ApplyResult] = []  # one per wave of the pass
        self._members: list[Member] | None = None

    @property
    def remembers(self) -> bool:
        return self.applier.memory.enabled

    def vouches_for(self, live: Mapping[str, Any]) -> bool:
        return self.applier.vouches_for(live)

    def unchanged(self, owner_obj: Mapping[str, Any], item: Desired) -> bool:
        if item.observed is None:
            return False
        body = member_body(Parent.from_object(owner_obj, self.gvr), item)
        return already_applied(item.observed, body, FIELD_MANAGER_APPLYSET)

    async def begin(self, owner_obj: dict[str, Any]) -> Listed:
        """List the ApplySet's members, bodies included, when this process does not know
        them (kro.applyset.ledger): after a restart, or once the ledger let go of them.

        The prune lists them anyway; listing first lets the same answer serve every child's
        read as well. A restarted controller then confirms a converged owner with one read of
        the owner and one list per child kind (the no-op proof, kro.applyset.noop, needs the
        bodies, which the metadata caches do not hold), where it would otherwise read each
        child and list for the prune afterwards. A new owner's ApplySet is known to be empty
        and is not listed."""
        parent = Parent.from_object(owner_obj, self.gvr)
        if self.applier.members.knows(parent.id):
            return {}
        inventory = read_inventory(owner_obj, parent)
        if inventory is None or not inventory.group_kinds:
            return {}
        self._members = await list_members(self.client, parent, inventory, bodies=True)
        return {
            (m.ref.gvr.group, m.ref.gvr.resource, m.ref.namespace, m.ref.name): m.obj
            for m in self._members
            if m.obj is not None
        }

    async def apply(
        self, owner_obj: dict[str, Any], batch: Sequence[Desired]
    ) -> tuple[dict[str, Any], Sequence[AppliedResource]]:
        result = await self.applier.apply(owner_obj, self.gvr, batch)
        self._results.append(result)
        return result.parent_obj, result.resources

    async def prune(
        self, owner_obj: dict[str, Any], scope: PruneScope
    ) -> tuple[dict[str, Any], PruneOutcome]:
        if not self._results:
            return owner_obj, PruneOutcome()
        result = combined(self._results)
        self.applier.members.epoch(scope.shard_version)
        pruned = await prune(
            self.client,
            result,
            positions=scope.positions,
            all_resolved=not scope.pending and not scope.failed,
            ledger=self.applier.members,
            members=self._members,
        )
        if pruned.inventory is not None:
            parent = result.parent
            written = await self.applier.ensure_inventory(parent, owner_obj, pruned.inventory)
            if written is not None:
                owner_obj = written
        unreleased = [f.message for f in pruned.failures if f.action]
        if unreleased:  # V-36: the pass's error; the inventory was kept, so it is retried
            raise ReleaseFailed(unreleased)
        # upstream requeues on prune conflicts: only a later pass can finish
        return owner_obj, PruneOutcome(
            deleted=pruned.changed, retry=bool(pruned.conflicts or pruned.failures)
        )

    async def teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        try:
            progress = await delete_next_wave(self.client, owner_obj, self.gvr)
        except ApplySetError as error:  # an inventory that cannot be trusted: wait for a fix
            return TeardownStep(False, blocked=str(error))
        except KubeError as error:  # the members cannot be listed (e.g. Forbidden)
            return TeardownStep(False, blocked=str(error), transient=True)
        if progress.failures:
            reason = "; ".join(f.message for f in progress.failures)
            return TeardownStep(False, wave=progress.wave, blocked=reason, transient=True)
        plan = tuple(f"delete {ref}" for ref in progress.deleted) + tuple(
            f"release {ref}" for ref in progress.released
        )
        return TeardownStep(progress.done, wave=None if progress.done else progress.wave, plan=plan)

    async def plan_teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        try:
            found = await plan_next_wave(self.client, owner_obj, self.gvr)
        except ApplySetError as error:
            return TeardownStep(False, blocked=str(error))
        except KubeError as error:
            return TeardownStep(False, blocked=str(error), transient=True)
        plan = tuple(f"release {m.ref}" for m in found.releases) + tuple(
            f"delete {m.ref}" for m in found.current if not m.terminating
        )
        held = sorted(
            (_held(m) for m in found.remaining),
            key=lambda h: (-h.wave, h.obj.kind, h.obj.namespace, h.obj.name),
        )
        return TeardownStep(not found.members, wave=found.wave, plan=plan, held=tuple(held))


def _held(member: Member) -> Held:
    gvk = member.gvk
    return Held(
        obj=ObjectId(gvk.api_version, gvk.kind, member.ref.namespace, member.ref.name),
        node=str(member.labels.get(LABEL_NODE_ID, "")),
        wave=apply_order(member),
        terminating=member.terminating,
        finalizers=member.finalizers,
    )
