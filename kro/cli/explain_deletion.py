"""kro.cli.explain_deletion: where an instance's deletion stands, and what holds it up.

kro deletes an instance's children in reverse apply-order waves: it reads only the instance's
ApplySet inventory, lists the members, deletes the highest wave still present, and touches the
next wave only once every member of that one is gone, so one child held by somebody else's
finalizer stops the whole deletion, and the instance keeps `kro.run/finalizer` until then.
This module does not list anything itself: it asks the controller's own teardown for its next
step as a plan (the recording ownership over the instance's ApplySet ownership,
kro.engine.recording: the same reads, metadata only, nothing sent), and names the blockers:

* a member of the current wave that is terminating but held by finalizers (not kro's: kro
  puts none on children);
* a member kro could not delete (the error kro recorded, `deletion blocked: ...`, D-06);
* an inventory kro refuses to trust (it will not delete on a guess);
* finalizers of others on the instance itself, once kro's own is gone.

Members whose object says `deletionPolicy: Orphaned` are not in the plan's waves: they are
released, never deleted, and hold nothing up (a release that failed shows as the error kro
recorded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.api.conditions import get_condition
from kro.api.names import (
    CONDITION_RESOURCES_READY,
    FINALIZER,
)
from kro.applyset import Applier, ApplierOptions
from kro.cli.explain_report import DeletionReport, MemberReport
from kro.engine.applyset_ownership import ApplySetOwnership
from kro.engine.recording import RecordingOwnership
from kro.runtime.client import Client
from kro.runtime.gvk import GVR

BLOCKED_PREFIX: Final = "deletion blocked: "


@dataclass(frozen=True, slots=True)
class LiveMembers:
    """The members found, and what could not be listed (then the picture is incomplete)."""

    members: tuple[MemberReport, ...] = ()
    errors: tuple[str, ...] = ()
    inventory_error: str = ""


async def read_members(client: Client, instance: Mapping[str, Any], gvr: GVR) -> LiveMembers:
    """The members the controller's next teardown step would act on, as it plans it."""
    ownership = ApplySetOwnership(
        applier=Applier(client, ApplierOptions(tooling="kro explain")), client=client, gvr=gvr
    )
    step = await RecordingOwnership(ownership).teardown(dict(instance))
    if step.blocked and not step.transient:
        return LiveMembers(inventory_error=step.blocked)
    if step.blocked:
        return LiveMembers(errors=(f"cannot list the members: {step.blocked}",))
    return LiveMembers(step.held)


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
