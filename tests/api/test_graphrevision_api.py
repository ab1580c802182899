"""kro.api.graphrevision: GraphRevision manifests (§1.B)."""

from __future__ import annotations

from typing import Any

import pytest

from kro.api.graphrevision import parse_graph_revision
from kro.api.v1alpha1 import InvalidObjectError


def graph_revision(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "internal.kro.run/v1alpha1",
        "kind": "GraphRevision",
        "metadata": {"name": "web-r00001", "labels": {"kro.run/graph-revision-hash": "0" * 16}},
        "spec": {
            "revision": 1,
            "snapshot": {
                "name": "web",
                "generation": 4,
                "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Web"}},
            },
            **spec,
        },
    }


def test_graph_revision_parses_with_nested_rgd_defaults() -> None:
    gr = parse_graph_revision(graph_revision())
    assert gr.spec.revision == 1
    assert gr.spec.snapshot.generation == 4
    assert gr.spec.snapshot.spec.schema_.group == "kro.run"
    assert gr.to_dict()["spec"]["snapshot"]["spec"]["schema"]["scope"] == "Namespaced"


def test_status_parses() -> None:
    doc = graph_revision()
    doc["status"] = {
        "topologicalOrder": ["a", "b"],
        "resources": [{"id": "b", "dependencies": [{"id": "a"}]}],
        "conditions": [{"type": "GraphVerified", "status": "True", "reason": "Verified"}],
    }
    gr = parse_graph_revision(doc)
    assert gr.status is not None
    assert gr.status.topological_order == ["a", "b"]


@pytest.mark.parametrize(
    ("spec", "cause_path", "message"),
    [
        ({"revision": 0}, "spec.revision", "greater than or equal to 1"),
        (
            {"snapshot": {"name": "", "spec": {"schema": {"apiVersion": "v1", "kind": "W"}}}},
            "spec.snapshot.name",
            "at least 1 character",
        ),
        (
            {"snapshot": {"name": "w", "spec": {"schema": {"apiVersion": "v1", "kind": "w"}}}},
            "spec.snapshot.spec.schema.kind",
            "should match",
        ),
    ],
    ids=["revision-zero", "empty-rgd-name", "invalid-snapshot-spec"],
)
def test_invalid_graph_revisions_are_rejected(
    spec: dict[str, Any], cause_path: str, message: str
) -> None:
    with pytest.raises(InvalidObjectError) as caught:
        parse_graph_revision(graph_revision(**spec))
    causes = dict(caught.value.causes)
    assert message in causes[cause_path]
    assert str(caught.value).startswith('GraphRevision "web-r00001" is invalid: ')
