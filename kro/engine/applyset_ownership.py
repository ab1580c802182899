"""kro.engine.applyset_ownership: an owner that keeps its objects as a kubectl ApplySet.

RGD instances own their children this way (R-10..R-13, D-02..D-05): the instance is the
ApplySet parent, every child carries `applyset.kubernetes.io/part-of`, and applies go through
the long-lived `kro.applyset.Applier` as `kro.run/applyset`. The record is the children's own
labels, listed back by prune and teardown. Prune waits for a pass in which every node resolved
and nothing failed (R-13); teardown deletes the highest apply-order wave left per step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import structlog

from kro.api.names import ANNOTATION_ABANDON_CLUSTER, FIELD_MANAGER_APPLYSET, LABEL_NODE_ID
from kro.api.objects import metadata as _meta
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
    list_members,
    prune,
    read_inventory,
)
from kro.applyset.applier import member_body
from kro.applyset.cache import already_applied
from kro.applyset.deletion import DeletionPlan, delete_planned, plan_next_wave
from kro.applyset.prune import PruneResult
from kro.engine.ownership import (
    Held,
    Listed,
    PruneOutcome,
    PruneScope,
    TeardownStep,
    abandoned_clusters,
)
from kro.engine.places import Places
from kro.engine.results import ObjectId
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR

__all__ = ["ApplySetOwnership"]

log = structlog.get_logger(__name__)


class ApplySetOwnership:
    """`Ownership` of one RGD instance (the ApplySet parent, of resource `gvr`), for one pass
    or one teardown step."""

    def __init__(
        self, *, applier: Applier, client: Client, gvr: GVR, places: Places | None = None
    ) -> None:
        self.applier = applier
        self.client = client
        self.gvr = gvr
        self.places = places
        self.home = places.own if places is not None and places.own != places.hub else ""
        """The member the instance lives in (M-21): part of its ApplySet's ID."""
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
        body = member_body(Parent.from_object(owner_obj, self.gvr, self.home), item)
        return already_applied(item.observed, body, FIELD_MANAGER_APPLYSET)

    async def begin(self, owner_obj: dict[str, Any]) -> Listed:
        """List the ApplySet's members, bodies included, when this process does not know them
        (after a restart): the prune lists them anyway, and the same answer serves every
        child's read, so a converged owner costs one list per child kind instead of a read per
        child. A new owner's ApplySet is known to be empty and is not listed."""
        parent = Parent.from_object(owner_obj, self.gvr, self.home)
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
        clients = self.places.client if self.places is not None else None
        result = await self.applier.apply(
            owner_obj, self.gvr, batch, clients=clients, home=self.home
        )
        self._results.append(result)
        return result.parent_obj, result.resources

    async def prune(
        self, owner_obj: dict[str, Any], scope: PruneScope
    ) -> tuple[dict[str, Any], PruneOutcome]:
        if not self._results:
            return owner_obj, PruneOutcome()
        result = combined(self._results)
        self.applier.members.epoch(scope.shard_version)
        all_resolved = not scope.pending and not scope.failed
        pruned = await prune(
            self.client,
            _in_cluster(result, ""),
            positions=scope.positions,
            all_resolved=all_resolved,
            ledger=self.applier.members,
            members=self._members,
        )
        outcomes = [pruned]
        members = sorted(result.inventory.clusters) if all_resolved and not pruned.skipped else []
        for cluster in members:  # M-15: each member's own members (its client only then)
            outcomes.append(
                await prune(
                    self._client(cluster),
                    _in_cluster(result, cluster),
                    positions=scope.positions,
                    all_resolved=all_resolved,
                )
            )
        if all(o.inventory is not None for o in outcomes):  # clean everywhere: shrink
            written = await self.applier.ensure_inventory(
                result.parent, owner_obj, result.batch_inventory
            )
            if written is not None:
                owner_obj = written
        if len(outcomes) > 1:
            pruned = _merged(outcomes)
        unreleased = [f.message for f in pruned.failures if f.action]
        if unreleased:  # V-36: the pass's error; the inventory was kept, so it is retried
            raise ReleaseFailed(unreleased)
        # upstream requeues on prune conflicts: only a later pass can finish
        return owner_obj, PruneOutcome(
            deleted=pruned.changed, retry=bool(pruned.conflicts or pruned.failures)
        )

    def _client(self, cluster: str) -> Client:
        if not cluster or self.places is None:
            return self.client
        return self.places.client(cluster)

    async def teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        return await self._step(owner_obj, act=True)

    async def plan_teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        return await self._step(owner_obj, act=False)

    async def _step(self, owner_obj: dict[str, Any], *, act: bool) -> TeardownStep:
        """One teardown step over the instance's cluster and the member clusters its ApplySet
        records (M-16): what says `deletionPolicy: Orphaned` is released, and the highest
        apply-order wave left anywhere is deleted (reverse dependency order across clusters).
        A member that cannot be reached holds the deletion, naming it, unless the instance's
        `kro.run/abandon-cluster` gives it up (its objects are left). `act=False`: the same
        step planned, nothing sent (`plan_teardown`)."""
        clusters = _member_clusters(owner_obj, self.gvr, self.home)
        abandoned = [c for c in clusters if c in abandoned_clusters(owner_obj)]
        left = _left_in(owner_obj, self.gvr, self.home, abandoned)
        plans = await self._plans(owner_obj, [c for c in ["", *clusters] if c not in abandoned])
        if isinstance(plans, TeardownStep):
            return plans
        if not any(p.members for p in plans.values()):
            return TeardownStep(True, abandoned=left)
        highest = max((p.wave for p in plans.values() if p.wave is not None), default=None)
        plan: list[str] = [f"abandon cluster {c}" for c in abandoned]
        failures: list[str] = []
        done = act
        for cluster, found in plans.items():
            deleting = found.wave == highest
            if found.members and not deleting and not found.releases:
                done = False  # a lower wave waits for the higher ones elsewhere
            if not found.members or not (deleting or found.releases):
                continue
            where = f"{cluster}: " if cluster else ""
            if act:
                progress = await delete_planned(self._client(cluster), found, delete_wave=deleting)
                failures.extend(f.message for f in progress.failures)
                deleted, released, done = (
                    progress.deleted,
                    progress.released,
                    done and progress.done,
                )
            else:
                released = tuple(m.ref for m in found.releases)
                deleted = tuple(m.ref for m in found.current if deleting and not m.terminating)
            plan.extend(f"delete {where}{ref}" for ref in deleted)
            plan.extend(f"release {where}{ref}" for ref in released)
        if failures:
            return TeardownStep(False, wave=highest, blocked="; ".join(failures), transient=True)
        for cluster in abandoned if act else ():
            name = _meta(owner_obj).get("name")
            log.warning("applyset.cluster_abandoned", cluster=cluster, name=name)
        held = () if act else _held_in(plans)
        wave = None if done else highest
        return TeardownStep(done, wave=wave, plan=tuple(plan), held=held, abandoned=left)

    async def _plans(
        self, owner_obj: dict[str, Any], clusters: Sequence[str]
    ) -> dict[str, DeletionPlan] | TeardownStep:
        """Each cluster's next deletion step, read there; or the step that holds it up (an
        inventory that cannot be trusted waits for a fix; an API error may pass)."""
        plans: dict[str, DeletionPlan] = {}
        for cluster in clusters:
            try:
                if cluster and self.places is not None:
                    await self.places.admit(cluster)
                plans[cluster] = await plan_next_wave(
                    self._client(cluster), owner_obj, self.gvr, self.home
                )
            except ApplySetError as error:
                return TeardownStep(False, blocked=str(error))
            except KubeError as error:
                blocked = str(error)
                if cluster:
                    blocked = (
                        f'cluster "{cluster}" cannot be reached: {error} (annotate the instance'
                        f" {ANNOTATION_ABANDON_CLUSTER}={cluster} to leave its objects there)"
                    )
                return TeardownStep(False, blocked=blocked, transient=True)
        return plans


def _in_cluster(result: ApplyResult, cluster: str) -> ApplyResult:
    """`result` as one cluster's ApplySet sees it: the resources applied there."""
    if not result.inventory.clusters:
        return result  # one cluster: nothing to split (every pass of every instance)
    return replace(
        result,
        resources=tuple(r for r in result.resources if r.cluster == cluster),
    )


def _merged(outcomes: Sequence[PruneResult]) -> PruneResult:
    return PruneResult(
        skipped=any(o.skipped for o in outcomes),
        deleted=tuple(r for o in outcomes for r in o.deleted),
        released=tuple(r for o in outcomes for r in o.released),
        conflicts=tuple(r for o in outcomes for r in o.conflicts),
        failures=tuple(f for o in outcomes for f in o.failures),
    )


def _member_clusters(owner_obj: Mapping[str, Any], gvr: GVR, home: str) -> list[str]:
    """The member clusters the instance's inventory records (M-15); none if unreadable."""
    try:
        inventory = read_inventory(owner_obj, Parent.from_object(owner_obj, gvr, home))
    except ApplySetError:
        return []
    return sorted(inventory.clusters) if inventory is not None else []


def _left_in(
    owner_obj: Mapping[str, Any], gvr: GVR, home: str, clusters: Sequence[str]
) -> tuple[str, ...]:
    """Per abandoned cluster, the kinds and namespaces the record says may be left there."""
    if not clusters:
        return ()
    parent = Parent.from_object(owner_obj, gvr, home)
    inventory = read_inventory(owner_obj, parent)
    kinds = ", ".join(sorted(str(gk) for gk in inventory.group_kinds)) if inventory else ""
    namespaces = ", ".join(inventory.namespaces(parent)) if inventory else ""
    return tuple(
        f'cluster "{c}": objects of {kinds or "no recorded kind"} in {namespaces or "-"}'
        for c in clusters
    )


def _held(member: Member, cluster: str = "") -> Held:
    gvk = member.gvk
    return Held(
        obj=ObjectId(gvk.api_version, gvk.kind, member.ref.namespace, member.ref.name),
        node=str(member.labels.get(LABEL_NODE_ID, "")),
        wave=apply_order(member),
        terminating=member.terminating,
        finalizers=member.finalizers,
        cluster=cluster,
    )


def _held_in(plans: Mapping[str, DeletionPlan]) -> tuple[Held, ...]:
    """What each cluster's plan still holds, highest wave first (a planned step's `held`)."""
    held = [_held(m, cluster) for cluster, found in plans.items() for m in found.remaining]
    held.sort(key=lambda h: (-h.wave, h.cluster, h.obj.kind, h.obj.namespace, h.obj.name))
    return tuple(held)
