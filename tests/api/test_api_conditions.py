"""kro.api.conditions: condition bookkeeping on status dicts (T-07..T-09, P-08)."""

from __future__ import annotations

from typing import Any

from kro.api import names
from kro.api.conditions import (
    Condition,
    aggregate_ready,
    awaiting_reconciliation,
    conditions_of,
    get_condition,
    is_condition_true,
    ordered_conditions,
    remove_condition,
    set_condition,
)

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def test_set_condition_creates_the_list_and_stamps_the_time() -> None:
    status: dict[str, Any] = {}
    assert set_condition(status, "KindReady", "True", now=T0, reason="Ready", message="ok")
    assert status["conditions"] == [
        {
            "type": "KindReady",
            "status": "True",
            "reason": "Ready",
            "message": "ok",
            "lastTransitionTime": T0,
        }
    ]


def test_reasserting_keeps_the_transition_time_and_reports_no_change() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "X", "True", now=T0, reason="A")
    assert not set_condition(status, "X", "True", now=T1, reason="A")
    assert set_condition(status, "X", "True", now=T1, reason="B")
    condition = get_condition(status, "X")
    assert condition is not None
    assert condition["lastTransitionTime"] == T0
    assert condition["reason"] == "B"


def test_a_status_flip_moves_the_transition_time() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "X", "True", now=T0)
    set_condition(status, "X", "False", now=T1, observed_generation=3)
    condition = get_condition(status, "X")
    assert condition == {
        "type": "X",
        "status": "False",
        "reason": "",
        "message": "",
        "observedGeneration": 3,
        "lastTransitionTime": T1,
    }


def test_is_condition_true_checks_observed_generation_when_asked() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Ready", "True", now=T0, observed_generation=2)
    assert is_condition_true(status, "Ready")
    assert is_condition_true(status, "Ready", generation=2)
    assert not is_condition_true(status, "Ready", generation=3)
    assert not is_condition_true(status, "Missing")
    assert not is_condition_true(None, "Ready")


def test_remove_condition() -> None:
    status: dict[str, Any] = {"conditions": [{"type": "A"}, {"type": "B"}, {"type": "A"}]}
    assert remove_condition(status, "A")
    assert status["conditions"] == [{"type": "B"}]
    assert not remove_condition(status, "A")
    assert not remove_condition({}, "A")


def test_conditions_of_tolerates_garbage() -> None:
    assert conditions_of({"conditions": "nope"}) == []
    assert conditions_of({"conditions": [1, {"type": "A"}]}) == [{"type": "A"}]


def test_aggregate_all_true_at_generation_is_ready_with_empty_message() -> None:
    conditions: list[Condition] = [
        {"type": t, "status": "True", "observedGeneration": 5}
        for t in names.INSTANCE_DEPENDENT_CONDITIONS
    ]
    ready = aggregate_ready(conditions, names.INSTANCE_DEPENDENT_CONDITIONS, generation=5)
    assert ready == {"type": "Ready", "status": "True", "reason": "Ready", "message": ""}


def test_aggregate_copies_the_most_recent_false_dependent() -> None:
    conditions: list[Condition] = [
        {"type": "A", "status": "False", "reason": "Old", "message": "o", "lastTransitionTime": T0},
        {"type": "B", "status": "False", "reason": "New", "message": "n", "lastTransitionTime": T2},
        {"type": "C", "status": "Unknown", "reason": "U", "lastTransitionTime": T2},
    ]
    ready = aggregate_ready(conditions, ["A", "B", "C"])
    assert ready == {"type": "Ready", "status": "False", "reason": "New", "message": "n"}


def test_aggregate_falls_back_to_the_most_recent_unknown() -> None:
    conditions: list[Condition] = [
        {"type": "A", "status": "True"},
        {
            "type": "B",
            "status": "Unknown",
            "reason": "Wait",
            "message": "w",
            "lastTransitionTime": T1,
        },
    ]
    ready = aggregate_ready(conditions, ["A", "B"])
    assert ready == {"type": "Ready", "status": "Unknown", "reason": "Wait", "message": "w"}


def test_aggregate_treats_missing_and_stale_dependents_as_unknown() -> None:
    ready = aggregate_ready([], ["GraphResolved"])
    assert ready["status"] == "Unknown"
    assert ready["reason"] == names.REASON_AWAITING_RECONCILIATION
    assert ready["message"] == 'condition "GraphResolved" is awaiting reconciliation'
    stale: list[Condition] = [{"type": "A", "status": "True", "observedGeneration": 1}]
    assert aggregate_ready(stale, ["A"], generation=2)["status"] == "Unknown"


def test_awaiting_reconciliation_placeholder() -> None:
    assert awaiting_reconciliation("KindReady") == {
        "type": "KindReady",
        "status": "Unknown",
        "reason": "AwaitingReconciliation",
        "message": 'condition "KindReady" is awaiting reconciliation',
    }


def test_wire_order_is_by_transition_time_with_ready_last() -> None:
    conditions: list[Condition] = [
        {"type": "Ready", "lastTransitionTime": T0},
        {"type": "B", "lastTransitionTime": T2},
        {"type": "A", "lastTransitionTime": T1},
    ]
    assert [c["type"] for c in ordered_conditions(conditions)] == ["A", "B", "Ready"]


def test_conditions_set_in_the_same_second_keep_the_dependents_order() -> None:
    """Upstream initialises dependents in order, so tied times read in that order (T-09)."""
    conditions: list[Condition] = [
        {"type": "Ready", "lastTransitionTime": T0},
        {"type": "ResourcesReady", "lastTransitionTime": T0},
        {"type": "GraphResolved", "lastTransitionTime": T0},
        {"type": "InstanceManaged", "lastTransitionTime": T0},
    ]
    wire = ordered_conditions(conditions, dependents=names.INSTANCE_DEPENDENT_CONDITIONS)
    assert [c["type"] for c in wire] == [
        "InstanceManaged",
        "GraphResolved",
        "ResourcesReady",
        "Ready",
    ]


def test_a_later_transition_still_sorts_after_the_dependents_order() -> None:
    conditions: list[Condition] = [
        {"type": "InstanceManaged", "lastTransitionTime": T1},
        {"type": "GraphResolved", "lastTransitionTime": T0},
        {"type": "Custom", "lastTransitionTime": T0},
        {"type": "Ready", "lastTransitionTime": T0},
    ]
    wire = ordered_conditions(conditions, dependents=names.INSTANCE_DEPENDENT_CONDITIONS)
    assert [c["type"] for c in wire] == ["GraphResolved", "Custom", "InstanceManaged", "Ready"]
