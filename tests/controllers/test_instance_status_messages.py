"""`ResourcesReady`'s per-node messages: written by the instance adapter from the engine's node
results, and read back by `kro explain` (which cannot send an apply to learn the API server's
answer). Both sides live in kro.controllers.instance.status; these tests hold them together."""

from __future__ import annotations

from typing import Any

from kro.api.names import NODE_STATE_ERROR, NODE_STATE_IN_PROGRESS, NODE_STATE_SYNCED
from kro.controllers.instance.status import (
    AWAITING_PREFIX,
    RESOURCE_ERROR_PREFIX,
    node_reasons,
    recorded_apply_errors,
)
from kro.engine.results import NodeReason, NodeResult


def instance(message: str) -> dict[str, Any]:
    condition = {"type": "ResourcesReady", "status": "False", "reason": "NotReady",
                 "message": message}
    return {"metadata": {"name": "d"}, "status": {"conditions": [condition]}}


def test_what_the_adapter_writes_explain_reads_back_per_node() -> None:
    results = [
        NodeResult("app", NODE_STATE_ERROR, NodeReason.APPLY_FAILED, "422 Invalid: a; b: c"),
        NodeResult("db", NODE_STATE_SYNCED, NodeReason.READY),
        NodeResult("app2", NODE_STATE_ERROR, NodeReason.APPLY_FAILED,
                   "403 Forbidden: configmaps is forbidden"),
        NodeResult("later", NODE_STATE_IN_PROGRESS, NodeReason.WAITING,
                   "waiting for unresolved resource"),
    ]
    message = RESOURCE_ERROR_PREFIX + node_reasons(results)
    assert message == (
        "resource error: app: 422 Invalid: a; b: c; app2: 403 Forbidden: configmaps is "
        "forbidden; later: waiting for unresolved resource"
    )
    recorded = recorded_apply_errors(instance(message), ["app", "app2", "db", "later"])
    assert recorded["app"] == "422 Invalid: a; b: c"
    assert recorded["app2"] == "403 Forbidden: configmaps is forbidden"
    assert "db" not in recorded


def test_a_node_id_that_prefixes_another_is_not_confused_with_it() -> None:
    message = "resource error: db-config: 422 Invalid: x; db: 403 Forbidden"
    recorded = recorded_apply_errors(instance(message), ["db", "db-config"])
    assert recorded == {"db-config": "422 Invalid: x", "db": "403 Forbidden"}


def test_waiting_messages_are_not_errors() -> None:
    message = AWAITING_PREFIX + "app: waiting for unresolved resource"
    assert recorded_apply_errors(instance(message), ["app"]) == {}
