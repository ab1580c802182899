"""kro.applyset.deletion: tear an ApplySet down in reverse apply-order waves (D-02..D-05, N-09).

Deletion must work when nothing else does (the graph revision gone or broken, CEL failing), so
it reads only the parent's inventory (D-02) and the members' own `internal.kro.run/apply-order`
annotations. An inventory it cannot trust blocks deletion (`InvalidInventory`): removing the
finalizer on a guess would leak children for good.

Members that say `deletionPolicy: Orphaned` are released first, in every call, and leave the
candidate set before the wave arithmetic (V-36): a retained object never holds back a lower
wave. One whose release failed or conflicted is still claimed.

One call deletes one wave: the highest apply-order still present (a missing, invalid or
non-positive annotation means wave 0, the last). Lower waves wait until the whole wave has
disappeared, including objects held by someone else's finalizer. The caller requeues until
`done`, then removes its own finalizer (kro.engine.ownership.teardown_step, N-12).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import structlog

from kro.api.names import ANNOTATION_APPLY_ORDER, LABEL_APPLYSET_ID
from kro.applyset.errors import InvalidInventory
from kro.applyset.inventory import Parent, read_inventory
from kro.applyset.members import (
    ON_DELETION,
    Failure,
    Member,
    delete_member,
    is_orphaned,
    list_members,
    release_member,
    settle,
)
from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.runtime.objectref import ObjectRef

__all__ = [
    "DeletionPlan",
    "DeletionProgress",
    "apply_order",
    "delete_next_wave",
    "delete_planned",
    "plan_next_wave",
]

log = structlog.get_logger(__name__)

VALIDATE_CONTEXT = "validate deletion inventory"
_INTEGER = re.compile(r"[+-]?[0-9]+")


def apply_order(member: Member) -> int:
    """The member's deletion wave: its apply-order annotation if a positive integer, else 0."""
    text = member.annotations.get(ANNOTATION_APPLY_ORDER, "")
    return max(int(text), 0) if _INTEGER.fullmatch(text) else 0


@dataclass(frozen=True, slots=True)
class DeletionProgress:
    """done: no member is left; the caller may remove its finalizer. wave: the wave being
    deleted (None when done, or only releasing). deleted, released: this call's DELETEs and
    releases (V-36); waiting: members of the wave already terminating. conflicts: failed
    preconditions, looked at again next time; failures: other API errors (a release's named
    `release orphaned resource`). remaining: members still claimed, this wave included.
    """

    done: bool
    wave: int | None = None
    deleted: tuple[ObjectRef, ...] = ()
    released: tuple[ObjectRef, ...] = ()
    waiting: tuple[ObjectRef, ...] = ()
    conflicts: tuple[ObjectRef, ...] = ()
    failures: tuple[Failure, ...] = ()
    remaining: int = 0


@dataclass(frozen=True, slots=True)
class DeletionPlan:
    """The next deletion step as read from the cluster, before anything is sent: every member
    listed (metadata only); those it releases; the wave it deletes and that wave's members."""

    parent: Parent
    members: tuple[Member, ...]

    @property
    def releases(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if is_orphaned(m))

    @property
    def remaining(self) -> tuple[Member, ...]:
        """Members deleted in waves (everything not released)."""
        return tuple(m for m in self.members if not is_orphaned(m))

    @property
    def wave(self) -> int | None:
        return max((apply_order(m) for m in self.remaining), default=None)

    @property
    def current(self) -> tuple[Member, ...]:
        wave = self.wave
        return tuple(m for m in self.remaining if apply_order(m) == wave)


async def plan_next_wave(
    client: Client, parent_obj: Mapping[str, Any], parent_gvr: GVR, home: str = ""
) -> DeletionPlan:
    """Read what the next `delete_next_wave` acts on, writing nothing (`kro explain`).

    Raises InvalidInventory (context "validate deletion inventory") when the parent's metadata
    is missing or fails validation, and KubeError when members cannot be listed.
    """
    parent = Parent.from_object(parent_obj, parent_gvr, home)
    try:
        inventory = read_inventory(parent_obj, parent)
    except InvalidInventory as err:
        raise InvalidInventory(key=err.key, reason=err.reason, context=VALIDATE_CONTEXT) from err
    if inventory is None:
        raise InvalidInventory(
            key=LABEL_APPLYSET_ID,
            reason=f"missing label {LABEL_APPLYSET_ID}",
            context=VALIDATE_CONTEXT,
        )
    return DeletionPlan(parent, tuple(await list_members(client, parent, inventory)))


async def delete_next_wave(
    client: Client, parent_obj: Mapping[str, Any], parent_gvr: GVR, home: str = ""
) -> DeletionProgress:
    """Delete the highest remaining apply-order wave of the ApplySet parented by `parent_obj`
    (as `plan_next_wave` reads it; raises as it does)."""
    plan = await plan_next_wave(client, parent_obj, parent_gvr, home)
    return await delete_planned(client, plan)


async def delete_planned(
    client: Client, plan: DeletionPlan, *, delete_wave: bool = True
) -> DeletionProgress:
    """Take the step `plan` (read by `plan_next_wave` through `client`): release the orphaned
    members, delete the plan's wave. `delete_wave=False`: release only (across clusters, a
    cluster whose highest wave is below another cluster's waits for it, M-16)."""
    release = partial(release_member, client, action=ON_DELETION)
    releases = await settle(plan.releases, release, "release")
    remaining = len(plan.remaining) + len(releases.conflicts) + len(releases.failures)
    deleting = delete_wave and bool(plan.remaining)
    current = plan.current if deleting else ()
    waiting = tuple(m.ref for m in current if m.terminating)
    targets = [m for m in current if not m.terminating]
    deletes = await settle(targets, partial(delete_member, client), "delete")
    if deleting:
        log.info(
            "applyset.wave_deleting",
            namespace=plan.parent.namespace,
            name=plan.parent.name,
            wave=plan.wave,
            deleted=len(deletes.done),
            waiting=len(waiting),
            released=len(releases.done),
            remaining=remaining,
        )
    return DeletionProgress(
        done=not remaining,
        wave=plan.wave if deleting else None,
        deleted=deletes.done,
        waiting=waiting,
        released=releases.done,
        conflicts=releases.conflicts + deletes.conflicts,
        failures=releases.failures + deletes.failures,
        remaining=remaining,
    )
