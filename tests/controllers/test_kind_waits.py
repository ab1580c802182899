"""Owners whose deferred nodes wait for a kind (DeferredSchemaResolution): remembered per
owner, announced once, woken by a CRD of the kind's group, and retried soon right after one
(discovery lists a kind a moment after its CRD is established)."""

from __future__ import annotations

from kro.api.graph import REASON_DATA_PENDING, REASON_SCHEMA_PENDING
from kro.api.names import NODE_STATE_IN_PROGRESS
from kro.controllers.graph.conditions import converged
from kro.controllers.kind_waits import RECENT_EVENT_S, RETRY_AFTER_EVENT_S, KindWaits
from kro.dynamic import ObjectRef
from kro.engine.results import NodeReason, NodeResult
from kro.runtime.gvk import GVR

WIDGETS = ("deferred.example.com", "Widget")
INSTANCES = GVR("kro.run", "v1alpha1", "installers")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_owner_is_announced_once_per_kind_and_woken_by_its_group() -> None:
    woken: list[ObjectRef] = []
    clock = Clock()
    waits = KindWaits(woken.append, clock=clock)
    one, two = ObjectRef(INSTANCES, "a", "one"), ObjectRef(INSTANCES, "a", "two")
    assert waits.waiting(one, [WIDGETS]) == [WIDGETS]
    assert waits.waiting(one, [WIDGETS]) == []  # the next pass: no second announcement
    assert waits.waiting(two, [("other.example.com", "Gadget")]) != []
    assert waits.retry_after([WIDGETS]) is None  # no CRD event yet: the backoff decides
    assert waits.crd_changed("unrelated.example.com") == 0
    assert waits.crd_changed("deferred.example.com") == 1
    assert woken == [one]
    assert waits.retry_after([WIDGETS]) == RETRY_AFTER_EVENT_S
    clock.now += RECENT_EVENT_S
    assert waits.retry_after([WIDGETS]) is None
    assert waits.waiting(one, []) == []  # served now: it waits no more
    assert waits.crd_changed("deferred.example.com") == 0
    assert waits.waiting(one, [WIDGETS]) == [WIDGETS]  # waits again (CRD deleted): announced
    waits.forget(one)
    waits.forget(two)
    assert len(waits) == 0


def _waiting(node: str, reason: NodeReason, message: str) -> NodeResult:
    return NodeResult(id=node, state=NODE_STATE_IN_PROGRESS, reason=reason, message=message)


def test_a_graph_says_schema_pending_before_data_pending() -> None:
    verdict = converged(
        [
            _waiting("first", NodeReason.WAITING, "data pending"),
            _waiting("claims", NodeReason.SCHEMA_PENDING, "kind Claim of x/v1 is not served yet"),
        ]
    )
    assert (verdict.ok, verdict.reason, verdict.waiting) == (False, REASON_SCHEMA_PENDING, True)
    assert "Claim" in verdict.message
    assert '"claims"' in verdict.message
    only_data = converged([_waiting("first", NodeReason.WAITING, "data pending")])
    assert only_data.reason == REASON_DATA_PENDING
