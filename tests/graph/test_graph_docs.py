"""docs/graph.md says what a user can write today: every Graph in its YAML blocks compiles, and
its table of node kinds agrees with the compiler about which kinds are supported and which are
refused. When a node kind lands, the second test fails until the page says so."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.graph.errors import GraphError
from kro.graph.graph_kind import compile_graph
from kro.graph.model import Graph
from kro.graph.resolver import OfflineSchemaResolver, builtin_bundle

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "graph.md").read_text()
RESOLVER = OfflineSchemaResolver(builtin_bundle())
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.DOTALL | re.MULTILINE)
NODE_ROW = re.compile(r"^\| `(\w+)` \|.*\| (supported|not yet[^|]*) \|$", re.MULTILINE)


def _documents() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for block in YAML_BLOCK.findall(DOC):
        found.extend(d for d in yaml.safe_load_all(block) if d)
    return found


def _graphs() -> list[dict[str, Any]]:
    return [d for d in _documents() if d.get("kind") == "Graph"]


def test_the_page_has_the_three_supported_patterns() -> None:
    names = [g["metadata"]["name"] for g in _graphs()]
    assert names == ["small-quotas", "scrape-sources", "status-page"]


@pytest.mark.parametrize("graph", _graphs(), ids=lambda g: g["metadata"]["name"])
def test_every_graph_on_the_page_compiles(graph: dict[str, Any]) -> None:
    compiled = compile_graph(graph, RESOLVER)
    assert isinstance(compiled, Graph)
    assert list(compiled.topological_order) != []
    assert set(compiled.topological_order) == {n["id"] for n in graph["spec"]["nodes"]}


def test_the_bundle_orders_as_the_page_says() -> None:
    """'runAs and content first, then web, then frontDoor'."""
    (bundle,) = (g for g in _graphs() if g["metadata"]["name"] == "status-page")
    order = list(compile_graph(bundle, RESOLVER).topological_order)
    assert order.index("web") > max(order.index("runAs"), order.index("content"))
    assert order.index("frontDoor") > order.index("web")


def test_a_typo_in_the_fan_in_is_a_compile_error() -> None:
    """The page says `n.metdata.name` is caught when the Graph compiles."""
    (fan_in,) = (g for g in _graphs() if g["metadata"]["name"] == "scrape-sources")
    text = yaml.safe_dump(fan_in).replace("n.metadata.name", "n.metdata.name")
    with pytest.raises(GraphError, match="metdata"):
        compile_graph(yaml.safe_load(text), RESOLVER)


def _minimal(kind: str) -> dict[str, Any]:
    """The smallest node of each kind (patch and graph shaped as upstream specifies them)."""
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    bodies: dict[str, Any] = {
        "template": configmap,
        "ref": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        "def": {"size": 1},
        "patch": {**configmap, "data": {"added": "yes"}},
        "graph": {"nodes": [{"id": "inner", "template": configmap}]},
    }
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": "g", "namespace": "team"},
        "spec": {"nodes": [{"id": "only", kind: bodies[kind]}]},
    }


def test_the_node_kind_table_matches_the_compiler() -> None:
    rows = dict(NODE_ROW.findall(DOC))
    assert set(rows) == {"template", "ref", "def", "patch", "graph"}
    for kind, support in rows.items():
        if support == "supported":
            compile_graph(_minimal(kind), RESOLVER)
            continue
        with pytest.raises(GraphError, match="not supported by this version of kro-py"):
            compile_graph(_minimal(kind), RESOLVER)


def test_computed_types_are_refused_as_the_page_says() -> None:
    graph = _minimal("template")
    graph["spec"]["nodes"] = [
        {"id": "kinds", "def": {"kind": "ConfigMap"}},
        {
            "id": "only",
            "template": {
                "apiVersion": "v1",
                "kind": "${kinds.kind}",
                "metadata": {"name": "x"},
            },
        },
    ]
    assert "whose `apiVersion` or `kind` is an expression is not supported yet" in DOC
    with pytest.raises(GraphError, match="not supported by this version of kro-py"):
        compile_graph(graph, RESOLVER)
