"""The instance's built-in conditions on the wire, as upstream lists them (T-07, T-09, V-14):
five after a first clean reconcile, WatchesHealthy between ResourcesReady and Ready."""

from __future__ import annotations

from typing import Any

from kro.api import names
from kro.controllers.instance.status import InstanceStatus

CREATED = "2026-01-01T00:00:00Z"
NOW = "2026-01-01T00:00:05Z"
LATER = "2026-01-01T00:01:00Z"


def _instance(status: dict[str, Any] | None = None, generation: int = 1) -> dict[str, Any]:
    meta = {"name": "a", "generation": generation, "creationTimestamp": CREATED}
    return {"metadata": meta, "status": status or {}}


def _types(status: dict[str, Any]) -> list[str]:
    return [c["type"] for c in status["conditions"]]


def test_a_new_instance_lists_instance_managed_first_whatever_is_set_first() -> None:
    status = InstanceStatus(_instance(), now=NOW)
    # The reconciler resolves the graph before it ensures the instance is managed.
    status.set(names.CONDITION_GRAPH_RESOLVED, "True", names.REASON_RESOLVED)
    status.set(names.CONDITION_RESOURCES_READY, "True", names.REASON_ALL_RESOURCES_READY)
    status.set(names.CONDITION_INSTANCE_MANAGED, "True", names.REASON_MANAGED)
    status.set(names.CONDITION_WATCHES_HEALTHY, "True", names.REASON_ALL_WATCHES_SYNCED)
    wire = status.build("ACTIVE", {})
    assert _types(wire) == [
        "InstanceManaged",
        "GraphResolved",
        "ResourcesReady",
        "WatchesHealthy",
        "Ready",
    ]
    assert {c["observedGeneration"] for c in wire["conditions"]} == {1}


def test_conditions_not_reached_yet_are_initialised_unknown_at_creation_time() -> None:
    status = InstanceStatus(_instance(), now=NOW)
    status.set(names.CONDITION_GRAPH_RESOLVED, "False", "ResolutionFailed", "no revision")
    wire = status.build("ERROR", {})
    assert _types(wire) == [
        "InstanceManaged",
        "ResourcesReady",
        "WatchesHealthy",
        "GraphResolved",
        "Ready",
    ]
    managed = wire["conditions"][0]
    assert managed == {
        "type": "InstanceManaged",
        "status": "Unknown",
        "reason": "AwaitingReconciliation",
        "message": 'condition "InstanceManaged" is awaiting reconciliation',
        "lastTransitionTime": CREATED,
        "observedGeneration": 1,
    }


def test_a_later_transition_moves_a_condition_behind_the_others() -> None:
    first = InstanceStatus(_instance(), now=NOW)
    for kind, reason in (
        (names.CONDITION_INSTANCE_MANAGED, names.REASON_MANAGED),
        (names.CONDITION_GRAPH_RESOLVED, names.REASON_RESOLVED),
        (names.CONDITION_RESOURCES_READY, names.REASON_ALL_RESOURCES_READY),
        (names.CONDITION_WATCHES_HEALTHY, names.REASON_ALL_WATCHES_SYNCED),
    ):
        first.set(kind, "True", reason)
    wire = first.build("ACTIVE", {})
    second = InstanceStatus(_instance(wire, generation=2), now=LATER)
    second.set(names.CONDITION_INSTANCE_MANAGED, "True", names.REASON_MANAGED)
    second.set(names.CONDITION_GRAPH_RESOLVED, "True", names.REASON_RESOLVED)
    second.set(names.CONDITION_RESOURCES_READY, "False", "NotReady", "waiting")
    second.set(names.CONDITION_WATCHES_HEALTHY, "True", names.REASON_ALL_WATCHES_SYNCED)
    after = second.build("IN_PROGRESS", {})
    assert _types(after) == [
        "InstanceManaged",
        "GraphResolved",
        "WatchesHealthy",
        "ResourcesReady",
        "Ready",
    ]
    assert [c["lastTransitionTime"] for c in after["conditions"]] == [NOW, NOW, NOW, LATER, LATER]
    assert {c["observedGeneration"] for c in after["conditions"]} == {2}
