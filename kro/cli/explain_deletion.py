"""kro.cli.explain_deletion: where an instance's deletion stands, and what holds it up.

kro deletes an instance's children in reverse apply-order waves (`kro.applyset.deletion`): it
reads only the instance's ApplySet inventory, lists the members, deletes the highest wave
still present, and touches the next wave only once every member of that one is gone — so one
child held by somebody else's finalizer stops the whole deletion, and the instance keeps
`kro.run/finalizer` until then. This module lists the members the same way (read-only,
metadata only: a Secret member's data is never fetched) and names the blockers:

* a member of the current wave that is terminating but held by finalizers (not kro's: kro
  puts none on children);
* a member kro could not delete (the error kro recorded, `deletion blocked: ...`, D-06);
* an inventory kro refuses to trust (it will not delete on a guess);
* finalizers of others on the instance itself, once kro's own is gone.

Members whose object says `deletionPolicy: Orphaned` are left out, as kro's deletion leaves
them out of its waves: they are released, never deleted, and hold nothing up (a release that
failed shows as the error kro recorded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kro.api.conditions import get_condition
from kro.api.names import (
    CONDITION_RESOURCES_READY,
    FINALIZER,
    LABEL_APPLYSET_PART_OF,
    LABEL_NODE_ID,
)
from kro.applyset import InvalidInventory, Member, Parent, apply_order, read_inventory
from kro.applyset.members import resolve_group_kind
from kro.applyset.release import is_orphaned
from kro.cli.explain_report import DeletionReport, MemberReport, ObjectId
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR

BLOCKED_PREFIX: Final = "deletion blocked: "


@dataclass(frozen=True, slots=True)
class LiveMembers:
    """The members found, and what could not be listed (then the picture is incomplete)."""

    members: tuple[MemberReport, ...] = ()
    errors: tuple[str, ...] = ()
    inventory_error: str = ""


def member_report(obj: Mapping[str, Any], member: Member) -> MemberReport:
    metadata = obj.get("metadata") or {}
    return MemberReport(
        obj=ObjectId(
            member.gvk.api_version, member.gvk.kind, member.ref.namespace, member.ref.name
        ),
        node=str(member.labels.get(LABEL_NODE_ID, "")),
        wave=apply_order(member),
        terminating=member.terminating,
        finalizers=tuple(str(f) for f in metadata.get("finalizers") or ()),
    )


async def read_members(client: Client, instance: Mapping[str, Any], gvr: GVR) -> LiveMembers:
    """List the instance's ApplySet members as kro's deletion does (metadata only)."""
    parent = Parent.from_object(instance, gvr)
    try:
        inventory = read_inventory(instance, parent)
    except InvalidInventory as error:
        return LiveMembers(inventory_error=str(error))
    if inventory is None:
        return LiveMembers()
    selector = f"{LABEL_APPLYSET_PART_OF}={inventory.applyset_id}"
    found: list[MemberReport] = []
    errors: list[str] = []
    for group_kind in sorted(inventory.group_kinds):
        info = await resolve_group_kind(client, group_kind)
        if info is None:
            continue
        namespaces: Sequence[str | None] = (
            inventory.namespaces(parent) if info.namespaced else [None]
        )
        for namespace in namespaces:
            try:
                items, _ = await client.list_all(
                    info.gvr, namespace=namespace, label_selector=selector, metadata_only=True
                )
            except KubeError as error:
                errors.append(f"cannot list {info.gvr.resource}: {error}")
                continue
            members = [Member.from_metadata(i, info) for i in items]
            found += [
                member_report(i, m)
                for i, m in zip(items, members, strict=True)
                if not is_orphaned(m)
            ]
    found.sort(key=lambda m: (-m.wave, m.obj.kind, m.obj.namespace, m.obj.name))
    return LiveMembers(tuple(found), tuple(errors))


def recorded_blocker(instance: Mapping[str, Any]) -> str:
    """What kro wrote when a delete failed (`deletion blocked: <error>`), or ""."""
    condition = get_condition(instance.get("status"), CONDITION_RESOURCES_READY)
    message = str((condition or {}).get("message") or "")
    return message.removeprefix(BLOCKED_PREFIX) if message.startswith(BLOCKED_PREFIX) else ""


def summarize_deletion(instance: Mapping[str, Any], live: LiveMembers) -> DeletionReport:
    """The wave in progress and its blockers, from the listed members (pure)."""
    finalizers = tuple(str(f) for f in (instance.get("metadata") or {}).get("finalizers") or ())
    recorded = recorded_blocker(instance)
    blockers: list[str] = []
    if live.inventory_error:
        blockers.append(
            f"kro does not trust the instance's ApplySet inventory and will not delete on a "
            f"guess: {live.inventory_error}"
        )
    wave = max((m.wave for m in live.members), default=None)
    current = [m for m in live.members if m.wave == wave]
    for member in current:
        blockers += _member_blockers(member, recorded)
    if recorded and not blockers:
        blockers.append(f"kro could not delete a child: {recorded}")
    blockers += [f"the picture is incomplete: {e}" for e in live.errors]
    foreign = [f for f in finalizers if f != FINALIZER]
    if foreign and FINALIZER not in finalizers:
        blockers.append(
            f"kro is done, but the instance itself is held by finalizer(s) {', '.join(foreign)}"
        )
    return DeletionReport(
        wave=wave,
        members=live.members,
        blockers=tuple(blockers),
        instance_finalizers=finalizers,
        recorded=recorded,
    )


def _member_blockers(member: MemberReport, recorded: str) -> list[str]:
    node = f' (node "{member.node}")' if member.node else ""
    if member.terminating and member.finalizers:
        return [
            f"{member.obj}{node} is terminating but held by finalizer(s) "
            f"{', '.join(member.finalizers)}, which kro does not own: whoever added them must "
            "finish (or remove them) before kro can delete the next wave"
        ]
    if not member.terminating and recorded:
        return [f"{member.obj}{node} could not be deleted: {recorded}"]
    return []
