"""set_condition is the one door to status conditions: messages go in scrubbed and capped."""

from __future__ import annotations

from typing import Any

from kro.api.conditions import (
    CONDITION_MESSAGE_LIMIT,
    aggregate_ready,
    get_condition,
    set_condition,
)

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"
TOKEN = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.QmFkU2lnbmF0dXJlMTIz"


def test_a_credential_in_a_message_is_redacted() -> None:
    status: dict[str, Any] = {}
    message = f"resource reconciliation failed: GET /x: 'Authorization': 'Bearer {TOKEN}'"
    set_condition(status, "ResourcesReady", "False", now=T0, reason="NotReady", message=message)
    stored = get_condition(status, "ResourcesReady")
    assert stored is not None
    assert TOKEN not in stored["message"]
    assert stored["message"] == (
        "resource reconciliation failed: GET /x: 'Authorization': '[REDACTED]'"
    )


def test_an_ordinary_message_is_stored_as_given() -> None:
    status: dict[str, Any] = {}
    message = (
        'resource reconciliation failed: configmaps "app" is forbidden: User '
        '"system:serviceaccount:kro-system:kro" cannot patch resource "configmaps"'
    )
    set_condition(status, "ResourcesReady", "False", now=T0, reason="NotReady", message=message)
    assert status["conditions"][0]["message"] == message


def test_a_long_message_is_capped_at_the_limit_in_bytes() -> None:
    status: dict[str, Any] = {}
    set_condition(status, "GraphAccepted", "False", now=T0, reason="Invalid", message="é" * 5000)
    stored = status["conditions"][0]["message"]
    assert CONDITION_MESSAGE_LIMIT == 4096
    assert len(stored.encode()) <= CONDITION_MESSAGE_LIMIT
    assert stored.endswith(" [truncated]")


def test_reasserting_a_scrubbed_message_is_no_change() -> None:
    status: dict[str, Any] = {}
    message = f"failed: token={TOKEN} " + "x" * 5000
    assert set_condition(status, "X", "False", now=T0, reason="R", message=message)
    assert not set_condition(status, "X", "False", now=T1, reason="R", message=message)


def test_the_root_condition_copies_an_already_scrubbed_message_unchanged() -> None:
    status: dict[str, Any] = {}
    set_condition(
        status, "ResourcesReady", "False", now=T0, reason="NotReady", message=f"password: {TOKEN}"
    )
    root = aggregate_ready(status["conditions"], ["ResourcesReady"])
    set_condition(
        status,
        "Ready",
        str(root["status"]),
        now=T0,
        reason=str(root["reason"]),
        message=str(root["message"]),
    )
    messages = {c["type"]: c["message"] for c in status["conditions"]}
    assert messages["Ready"] == messages["ResourcesReady"] == "password: [REDACTED]"
