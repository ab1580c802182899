"""The conditions of an RGD whose graph does not build, as upstream lists them (T-07, T-09,
P-06, P-08; issue 26 B1): all five, the three nobody could evaluate `Unknown` with reason
`AwaitingReconciliation` and message `condition "<Type>" is awaiting reconciliation` (stamped
with the RGD's creationTimestamp), then `GraphAccepted=False`, then `Ready=False`, both with
reason `InvalidResourceGraph`. Also the ordering rule behind that list."""

from __future__ import annotations

from typing import Any

from controllers_fakes import DictClient, greeter_rgd, unserved_rgd_reconciler

from kro.api.conditions import ordered_conditions
from kro.controllers.rgd import RGDS
from kro.runtime.reconcile import Request

CREATED = "2026-01-02T03:04:05Z"


def _invalid_rgd() -> dict[str, Any]:
    rgd = greeter_rgd(text="${schema.spec.nope}")
    rgd["metadata"]["creationTimestamp"] = CREATED
    return rgd


async def test_an_rgd_whose_graph_fails_to_build_lists_five_conditions_as_upstream() -> None:
    client = DictClient()
    client.seed(RGDS, _invalid_rgd())
    await unserved_rgd_reconciler(client).reconcile(Request("", "greeter"))
    status = client.objects[(RGDS, "greeter")]["status"]
    conditions = status["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        ("GraphRevisionsResolved", "Unknown", "AwaitingReconciliation"),
        ("KindReady", "Unknown", "AwaitingReconciliation"),
        ("ControllerReady", "Unknown", "AwaitingReconciliation"),
        ("GraphAccepted", "False", "InvalidResourceGraph"),
        ("Ready", "False", "InvalidResourceGraph"),
    ]
    for placeholder in conditions[:3]:
        assert placeholder["message"] == (
            f'condition "{placeholder["type"]}" is awaiting reconciliation'
        )
        assert placeholder["lastTransitionTime"] == CREATED
        assert placeholder["observedGeneration"] == 1
    accepted, ready = conditions[3], conditions[4]
    assert "nope" in accepted["message"]
    assert ready["message"] == accepted["message"]
    assert status["state"] == "Inactive"


async def test_a_retry_that_fails_the_same_way_writes_nothing() -> None:
    client = DictClient()
    client.seed(RGDS, _invalid_rgd())
    reconciler = unserved_rgd_reconciler(client)
    await reconciler.reconcile(Request("", "greeter"))
    writes = len(client.writes)
    await reconciler.reconcile(Request("", "greeter"))
    assert client.writes[writes:] == []


async def test_a_status_with_duplicate_types_is_written_with_one_of_each() -> None:
    """V-05: the API server refuses two conditions of one type in a list map keyed on type."""
    rgd = _invalid_rgd()
    stale = {"type": "GraphAccepted", "status": "True", "reason": "Valid",
             "lastTransitionTime": CREATED}  # fmt: skip
    rgd["status"] = {"conditions": [stale, dict(stale)]}
    client = DictClient()
    client.seed(RGDS, rgd)
    await unserved_rgd_reconciler(client).reconcile(Request("", "greeter"))
    types = [c["type"] for c in client.objects[(RGDS, "greeter")]["status"]["conditions"]]
    assert sorted(types) == sorted(set(types))
    assert types.count("GraphAccepted") == 1


def test_placeholders_precede_what_a_pass_set_in_the_same_second() -> None:
    now = "2026-01-02T03:04:05Z"
    conditions: list[Any] = [
        {"type": "GraphAccepted", "status": "False", "reason": "InvalidResourceGraph",
         "lastTransitionTime": now},
        {"type": "GraphRevisionsResolved", "status": "Unknown",
         "reason": "AwaitingReconciliation", "lastTransitionTime": now},
        {"type": "Ready", "status": "False", "reason": "InvalidResourceGraph",
         "lastTransitionTime": now},
        {"type": "KindReady", "status": "Unknown", "reason": "AwaitingReconciliation",
         "lastTransitionTime": now},
    ]  # fmt: skip
    dependents = ("GraphRevisionsResolved", "GraphAccepted", "KindReady")
    ordered = ordered_conditions(conditions, dependents=dependents, awaiting_first=True)
    assert [c["type"] for c in ordered] == [
        "GraphRevisionsResolved",
        "KindReady",
        "GraphAccepted",
        "Ready",
    ]
    # Without the flag, ties keep the dependents' order (the instances' rule).
    plain = ordered_conditions(conditions, dependents=dependents)
    assert [c["type"] for c in plain] == [
        "GraphRevisionsResolved",
        "GraphAccepted",
        "KindReady",
        "Ready",
    ]
