"""Conditions follow apimachinery's rules: lastTransitionTime moves only when the status moves,
and re-asserting a condition is no change (so no status write follows)."""

from __future__ import annotations

import re
from typing import Any

from kro.runtime.conditions import (
    get_condition,
    is_condition_true,
    now_rfc3339,
    remove_condition,
    set_condition,
)

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def test_a_new_condition_gets_the_current_time() -> None:
    status: dict[str, Any] = {}
    assert set_condition(status, "Ready", "False", reason="Waiting", now=T0)
    assert status["conditions"] == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "Waiting",
            "message": "",
            "lastTransitionTime": T0,
        }
    ]


def test_reasserting_the_same_condition_is_no_change() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Ready", "True", reason="Done", observed_generation=3, now=T0)
    assert not set_condition(status, "Ready", "True", reason="Done", observed_generation=3, now=T1)
    assert get_condition(status, "Ready") == {
        "type": "Ready",
        "status": "True",
        "reason": "Done",
        "message": "",
        "observedGeneration": 3,
        "lastTransitionTime": T0,
    }


def test_a_new_reason_or_message_keeps_the_transition_time() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Ready", "False", reason="Pulling", now=T0)
    assert set_condition(status, "Ready", "False", reason="Starting", message="1/2", now=T1)
    condition = get_condition(status, "Ready")
    assert condition is not None
    assert (condition["reason"], condition["message"]) == ("Starting", "1/2")
    assert condition["lastTransitionTime"] == T0


def test_a_status_change_moves_the_transition_time() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Ready", "False", now=T0)
    set_condition(status, "Ready", "True", now=T1)
    set_condition(status, "Ready", "True", reason="Still", now=T2)
    condition = get_condition(status, "Ready")
    assert condition is not None
    assert condition["lastTransitionTime"] == T1


def test_conditions_keep_their_order_and_others_are_untouched() -> None:
    status: dict[str, Any] = {"conditions": [{"type": "A", "status": "True"}], "replicas": 2}
    set_condition(status, "B", "True", now=T0)
    set_condition(status, "A", "False", now=T1)
    assert [c["type"] for c in status["conditions"]] == ["A", "B"]
    assert status["replicas"] == 2
    assert remove_condition(status, "A")
    assert not remove_condition(status, "A")
    assert [c["type"] for c in status["conditions"]] == ["B"]


def test_is_condition_true_can_require_the_current_generation() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "Ready", "True", observed_generation=1, now=T0)
    assert is_condition_true(status, "Ready")
    assert is_condition_true(status, "Ready", generation=1)
    assert not is_condition_true(status, "Ready", generation=2)
    assert not is_condition_true(None, "Ready")


def test_now_is_metav1_time() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now_rfc3339())
