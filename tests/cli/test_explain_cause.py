"""`kro explain`: the root cause line and deletion blockers (kro.cli.explain_cause,
kro.cli.explain_cause's deletion summary)."""

from __future__ import annotations

from typing import Any

import pytest

from kro.cli.explain_cause import LiveMembers, root_cause, summarize_deletion
from kro.cli.explain_report import MemberReport, NodeReport, NodeStatus, ObjectId


def instance(
    conditions: list[dict[str, Any]] | None = None,
    *,
    state: str = "IN_PROGRESS",
    generation: int = 1,
    **metadata: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1", "kind": "Demo",
        "metadata": {"name": "d", "namespace": "ns", "generation": generation, **metadata},
        "status": {"state": state, "conditions": conditions or []},
    }


def cond(kind: str, status: str, message: str = "", generation: int = 1) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "R", "message": message,
            "observedGeneration": generation}


def node(node_id: str, status: NodeStatus, **details: Any) -> NodeReport:
    return NodeReport(id=node_id, type="Resource", api_version="v1", kind="ConfigMap", wave=1,
                      dependencies=(), status=status,
                      objects=(ObjectId("v1", "ConfigMap", "ns", f"d-{node_id}"),), **details)


READY = [cond("Ready", "True"), cond("ResourcesReady", "True")]


@pytest.mark.parametrize(
    ("obj", "nodes", "expected"),
    [
        (
            instance([cond("GraphResolved", "False", "latest issued graph revision 2 failed")]),
            [node("a", NodeStatus.ERROR, reason="x")],
            "kro cannot resolve the instance's graph: latest issued graph revision 2 failed",
        ),
        (
            instance([cond("InstanceManaged", "False", 'ResourceGraphDefinition "x" was '
                                                       "deleted")]),
            [],
            'kro does not manage the instance: ResourceGraphDefinition "x" was deleted',
        ),
        (
            instance(annotations={"kro.run/reconcile": "Suspended"}),
            [node("a", NodeStatus.MISSING, reason="not created yet")],
            "reconciliation is suspended by the annotation kro.run/reconcile: kro leaves this "
            "instance's resources alone until it is removed",
        ),
        (
            instance(),
            [node("a", NodeStatus.NOT_READY, reason='readyWhen "x" is false'),
             node("b", NodeStatus.ERROR, reason="the API server refused it", message="422 x")],
            'node "b" (ConfigMap ns/d-b) failed: the API server refused it: 422 x',
        ),
        (
            instance(),
            [node("a", NodeStatus.APPLIED),
             node("b", NodeStatus.WAITING, reason="waits", waiting_on="c"),
             node("c", NodeStatus.NOT_READY, reason='readyWhen "c.ok" is false')],
            'node "c" (ConfigMap ns/d-c) is not ready: readyWhen "c.ok" is false',
        ),
        (
            instance([cond("ResourcesReady", "False",
                           "resource reconciliation failed: 403 Forbidden: nope")]),
            [node("a", NodeStatus.APPLIED)],
            "kro's last reconcile failed: 403 Forbidden: nope",
        ),
        (
            instance([cond("Ready", "True", generation=1)], generation=2),
            [node("a", NodeStatus.APPLIED)],
            "kro has not reported on generation 2 of this instance yet (last reported: 1); is "
            "the kro controller running?",
        ),
        (
            instance(READY, state="ACTIVE"),
            [node("a", NodeStatus.APPLIED), node("b", NodeStatus.EXCLUDED)],
            "no problem found: the instance is ACTIVE and every resource is ready",
        ),
    ],
    ids=["graph-unresolved", "unmanaged", "suspended", "error-first", "first-own-problem",
         "pass-failed", "stale-generation", "active"],
)
def test_root_cause(obj: dict[str, Any], nodes: list[NodeReport], expected: str) -> None:
    assert root_cause(obj, nodes) == expected


def test_a_graph_problem_comes_before_node_problems() -> None:
    cause = root_cause(instance(), [node("a", NodeStatus.MISSING)], source_problem="no graph")
    assert cause == "no graph"


def member(name: str, wave: int, *, terminating: bool = False, finalizers: tuple[str, ...] = ()
           ) -> MemberReport:
    return MemberReport(ObjectId("v1", "ConfigMap", "ns", name), name, wave, terminating,
                        finalizers)


def deleting(conditions: list[dict[str, Any]] | None = None,
             finalizers: tuple[str, ...] = ("kro.run/finalizer",)) -> dict[str, Any]:
    return instance(conditions, state="DELETING", deletionTimestamp="2024-01-01T00:00:00Z",
                    finalizers=list(finalizers))


def test_a_foreign_finalizer_on_a_child_of_the_current_wave_blocks_deletion() -> None:
    live = LiveMembers((member("held", 2, terminating=True, finalizers=("example.com/hold",)),
                        member("base", 1)))
    report = summarize_deletion(deleting(), live)
    assert report.wave == 2
    assert report.blockers == (
        'ConfigMap ns/held (node "held") is terminating but held by finalizer(s) '
        "example.com/hold, which kro does not own: whoever added them must finish (or remove "
        "them) before kro can delete the next wave",
    )
    assert root_cause(deleting(), [], deletion=report).startswith(
        "deletion is blocked at wave 2: ConfigMap ns/held"
    )


def test_a_delete_kro_could_not_issue_is_reported_with_its_error() -> None:
    blocked = cond("ResourcesReady", "Unknown", "deletion blocked: 403 Forbidden: no delete")
    report = summarize_deletion(deleting([blocked]), LiveMembers((member("a", 1),)))
    assert report.blockers == ('ConfigMap ns/a (node "a") could not be deleted: 403 Forbidden: '
                               "no delete",)


def test_a_terminating_child_without_finalizers_is_progress_not_a_blocker() -> None:
    report = summarize_deletion(deleting(), LiveMembers((member("a", 1, terminating=True),)))
    assert report.blockers == ()
    assert root_cause(deleting(), [], deletion=report) == (
        "deletion in progress: kro is deleting apply-order wave 1"
    )


def test_an_untrusted_inventory_blocks_deletion() -> None:
    report = summarize_deletion(deleting(), LiveMembers(inventory_error="label mismatch"))
    assert report.wave is None
    assert "will not delete on a guess: label mismatch" in report.blockers[0]


def test_foreign_finalizers_on_the_instance_after_kro_is_done() -> None:
    report = summarize_deletion(deleting(finalizers=("example.com/audit",)), LiveMembers())
    assert report.blockers == (
        "kro is done, but the instance itself is held by finalizer(s) example.com/audit",
    )


def test_no_child_left_means_kro_removes_its_finalizer_next() -> None:
    report = summarize_deletion(deleting(), LiveMembers())
    assert root_cause(deleting(), [], deletion=report) == (
        "deletion: every child is gone; kro removes its finalizer next"
    )


def test_the_root_cause_is_one_line_even_for_multi_line_messages() -> None:
    cause = root_cause(instance(), [], source_problem="bad field\n | schema.x\n | ..^")
    assert cause == "bad field"


def test_an_unreadable_node_is_named_only_when_nothing_else_explains_the_state() -> None:
    unread = node("creds", NodeStatus.UNKNOWN, reason="cannot read the live object: 403")
    active = instance(READY, state="ACTIVE")
    assert root_cause(active, [node("a", NodeStatus.APPLIED), unread]) == (
        "no problem found: the instance is ACTIVE and every resource is ready (not checked: "
        "creds, not readable with your permissions)"
    )
    stuck = instance([cond("Ready", "False", "awaiting resource readiness")])
    assert root_cause(stuck, [unread]) == (
        'node "creds" (ConfigMap ns/d-creds) cannot be checked: cannot read the live object: '
        "403; kro reports state IN_PROGRESS: awaiting resource readiness"
    )
    missing = node("a", NodeStatus.MISSING, reason="not created yet")
    assert root_cause(stuck, [unread, missing]).startswith('node "a"')
