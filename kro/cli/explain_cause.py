"""kro.cli.explain_cause: read what kro recorded on an instance and pick the first root cause.

kro writes its verdict into the instance's status (reference §1.J); the nodes' states come from
the engine's dry run (`explain_dryrun`). The root cause is the one line a user reads first: the
first thing, in the order a user would fix them (docs/explain.md lists it), that keeps the
instance from being ACTIVE. A node waiting on another node only echoes it, so is never one.

A deleting instance is summarised from the teardown's own plan (`explain_dryrun.
planned_deletion`): the wave in progress and what holds it up. Members whose object says
`deletionPolicy: Orphaned` are released, never deleted, so they hold nothing up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kro.api.conditions import conditions_of, get_condition
from kro.api.names import (
    ANNOTATION_RECONCILE,
    CONDITION_GRAPH_RESOLVED,
    CONDITION_INSTANCE_MANAGED,
    CONDITION_READY,
    CONDITION_RESOURCES_READY,
    FINALIZER,
    INSTANCE_STATE_ACTIVE,
    STATUS_FALSE,
    STATUS_TRUE,
)
from kro.api.objects import metadata as _meta
from kro.cli.explain_report import (
    ConditionReport,
    DeletionReport,
    MemberReport,
    NodeReport,
    NodeStatus,
    held_label,
)
from kro.controllers.instance.status import PASS_FAILED_PREFIX, is_suspended

_PHRASES: Final = {
    NodeStatus.ERROR: "failed",
    NodeStatus.NOT_READY: "is not ready",
    NodeStatus.WAITING: "is waiting",
    NodeStatus.MISSING: "does not exist",
    NodeStatus.DELETING: "is being deleted",
    NodeStatus.UNKNOWN: "cannot be checked",
}


def condition_reports(instance: Mapping[str, Any]) -> tuple[ConditionReport, ...]:
    """The instance's conditions in wire order."""
    return tuple(
        ConditionReport(
            type=str(c.get("type", "")),
            status=str(c.get("status", "")),
            reason=str(c.get("reason", "")),
            message=str(c.get("message", "")),
            observed_generation=c.get("observedGeneration"),
        )
        for c in conditions_of(instance.get("status"))
    )


def generation_of(obj: Mapping[str, Any]) -> int | None:
    generation = _meta(obj).get("generation")
    return generation if isinstance(generation, int) else None


def describe_node(node: NodeReport) -> str:
    """`node "x" (Kind ns/name) is not ready: <reason>[: <message>]`."""
    where = f" ({node.objects[0]})" if len(node.objects) == 1 else ""
    if len(node.objects) > 1:
        where = f" ({len(node.objects)} {node.kind} objects)"
    text = f'node "{node.id}"{where} {_PHRASES.get(node.status, str(node.status))}'
    return ": ".join([text, *(part for part in (node.reason, node.message) if part)])


def first_problem(nodes: Sequence[NodeReport]) -> NodeReport | None:
    """An error first, else the first node (topological order) with a problem of its own."""
    error = next((node for node in nodes if node.status is NodeStatus.ERROR), None)
    return error or next((node for node in nodes if node.is_root_cause), None)


def instance_problem(instance: Mapping[str, Any]) -> str:
    """A reason kro does not reconcile the instance's resources at all, or ""."""
    status = instance.get("status")
    for kind, what in (
        (CONDITION_GRAPH_RESOLVED, "kro cannot resolve the instance's graph"),
        (CONDITION_INSTANCE_MANAGED, "kro does not manage the instance"),
    ):
        condition = get_condition(status, kind)
        if condition is not None and condition.get("status") == STATUS_FALSE:
            return f"{what}: {condition.get('message') or condition.get('reason')}"
    if is_suspended(instance):
        return (
            f"reconciliation is suspended by the annotation {ANNOTATION_RECONCILE}: kro leaves "
            "this instance's resources alone until it is removed"
        )
    return ""


def one_line(text: str) -> str:
    """The first line of a message: CEL compile errors add a source excerpt with a caret on
    the lines below, which the detail sections show but a one-line cause cannot."""
    return text.strip().split("\n", 1)[0].rstrip()


def root_cause(
    instance: Mapping[str, Any],
    nodes: Sequence[NodeReport],
    *,
    deletion: DeletionReport | None = None,
    source_problem: str = "",
) -> str:
    """The one line printed first; see the module docstring for the order."""
    if deletion is not None:
        if deletion.blockers:
            wave = f"wave {deletion.wave}: " if deletion.wave is not None else ""
            return one_line(f"deletion is blocked at {wave}{deletion.blockers[0]}")
        if deletion.wave is None:
            return "deletion: every child is gone; kro removes its finalizer next"
        return f"deletion in progress: kro is deleting apply-order wave {deletion.wave}"
    node = first_problem(nodes)
    problem = instance_problem(instance) or source_problem or (describe_node(node) if node else "")
    return one_line(problem or _status_cause(instance, nodes))


def unreported(owner: Mapping[str, Any], what: str, hint: str) -> str:
    """kro has not reported on the owner's generation yet (no Ready condition, or one of an
    older generation), or ""."""
    generation = _meta(owner).get("generation")
    ready = get_condition(owner.get("status"), CONDITION_READY)
    seen = (ready or {}).get("observedGeneration")
    if ready is not None and (generation is None or seen is None or seen == generation):
        return ""
    last = seen if seen is not None else "never"
    return (
        f"kro has not reported on generation {generation} of this {what} yet "
        f"(last reported: {last}); {hint}"
    )


def _status_cause(instance: Mapping[str, Any], nodes: Sequence[NodeReport]) -> str:
    status = instance.get("status") or {}
    if (failed := _recorded(instance, PASS_FAILED_PREFIX)) is not None:
        return f"kro's last reconcile failed: {failed}"
    if late := unreported(instance, "instance", "is the kro controller running?"):
        return late
    ready = get_condition(status, CONDITION_READY) or {}
    state = str(status.get("state") or "none")
    reported = f"state {state}: {ready.get('message') or 'no message'}"
    unread = [n for n in nodes if n.status is NodeStatus.UNKNOWN]
    if state == INSTANCE_STATE_ACTIVE and ready.get("status") == STATUS_TRUE:
        unchecked = ", ".join(n.id for n in unread)
        if unchecked:
            unchecked = f" (not checked: {unchecked}, not readable with your permissions)"
        return f"no problem found: the instance is ACTIVE and every resource is ready{unchecked}"
    if unread:
        return f"{describe_node(unread[0])}; kro reports {reported}"
    return f"every resource is ready, but kro reports {reported}" if nodes else reported


BLOCKED_PREFIX: Final = "deletion blocked: "


@dataclass(frozen=True, slots=True)
class LiveMembers:
    """The members found, and what could not be listed (then the picture is incomplete)."""

    members: tuple[MemberReport, ...] = ()
    errors: tuple[str, ...] = ()
    inventory_error: str = ""


def _recorded(instance: Mapping[str, Any], prefix: str) -> str | None:
    """What kro wrote into `ResourcesReady` after `prefix` (a failed pass, a delete that
    failed: `deletion blocked: <error>`), or None."""
    condition = get_condition(instance.get("status"), CONDITION_RESOURCES_READY) or {}
    message = str(condition.get("message") or "")
    return message.removeprefix(prefix) if message.startswith(prefix) else None


def summarize_deletion(instance: Mapping[str, Any], live: LiveMembers) -> DeletionReport:
    """The wave in progress and its blockers, from the listed members (pure)."""
    finalizers = tuple(str(f) for f in (instance.get("metadata") or {}).get("finalizers") or ())
    recorded = _recorded(instance, BLOCKED_PREFIX) or ""
    blockers: list[str] = []
    if live.inventory_error:
        blockers.append(
            f"kro does not trust the instance's ApplySet inventory and will not delete on a "
            f"guess: {live.inventory_error}"
        )
    wave = max((m.wave for m in live.members), default=None)
    for member in (m for m in live.members if m.wave == wave):
        if member.terminating and member.finalizers:
            blockers.append(
                f"{held_label(member)} is terminating but held by finalizer(s) "
                f"{', '.join(member.finalizers)}, which kro does not own: whoever added them "
                "must finish (or remove them) before kro can delete the next wave"
            )
        elif not member.terminating and recorded:
            blockers.append(f"{held_label(member)} could not be deleted: {recorded}")
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
