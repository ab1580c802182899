"""docs/graph.md says what a user can write: every Graph in its YAML blocks compiles (against
the CRDs on the page too), and its table of node kinds and the modifiers each accepts agrees
with the compiler. When the compiler's rules change, these tests fail until the page says so."""

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
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.DOTALL | re.MULTILINE)
NODE_ROW = re.compile(r"^\| `(\w+)` \|.*\| (supported|not yet[^|]*) \|$", re.MULTILINE)


def _documents() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for block in YAML_BLOCK.findall(DOC):
        found.extend(d for d in yaml.safe_load_all(block) if d)
    return found


def _graphs() -> list[dict[str, Any]]:
    return [d for d in _documents() if d.get("kind") == "Graph"]


RESOLVER = OfflineSchemaResolver(
    builtin_bundle(),
    crds=[d for d in _documents() if d.get("kind") == "CustomResourceDefinition"],
)
MODIFIERS = ("includeWhen", "readyWhen", "forEach")


def test_the_page_has_the_four_patterns() -> None:
    names = [g["metadata"]["name"] for g in _graphs()]
    assert names == ["small-quotas", "scrape-sources", "status-page", "config-claims"]


@pytest.mark.parametrize("graph", _graphs(), ids=lambda g: g["metadata"]["name"])
def test_every_graph_on_the_page_compiles(graph: dict[str, Any]) -> None:
    compiled = compile_graph(graph, RESOLVER)
    assert isinstance(compiled, Graph)
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


def test_the_claims_graph_needs_its_crd() -> None:
    """'A Graph created before the CRD is served shows Accepted=False (the kind is unknown)'."""
    (claims,) = (g for g in _graphs() if g["metadata"]["name"] == "config-claims")
    with pytest.raises(GraphError, match="schema not found"):
        compile_graph(claims, OfflineSchemaResolver(builtin_bundle()))


def _minimal(kind: str, modifier: str | None = None) -> dict[str, Any]:
    """The smallest node of each kind, with one modifier when asked (shapes as documented)."""
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    bodies: dict[str, Any] = {
        "template": configmap,
        "ref": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        "def": {"size": 1},
        "patch": {**configmap, "data": {"added": "yes"}},
        "graph": {"nodes": [{"id": "inner", "template": configmap}]},
    }
    node: dict[str, Any] = {"id": "only", kind: bodies[kind]}
    values = {"id": "names", "def": {"list": ["x"]}}
    if modifier == "forEach":
        node["forEach"] = [{"row": "${names.list}"}]
        if kind in ("template", "patch"):
            node[kind] = {**node[kind], "metadata": {"name": "${row}"}}
    elif modifier == "readyWhen":  # a readyWhen reads its own node
        node[modifier] = ["${only.size == 1}" if kind == "def" else "${has(only.metadata)}"]
    elif modifier is not None:
        node[modifier] = ["${names.list.size() > 0}"]
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": "g", "namespace": "team"},
        "spec": {"nodes": [values, node]},
    }


def _table() -> dict[str, set[str]]:
    section = DOC[DOC.index("| Node kind |") :]
    section = section[: section.index("\n\n")]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        kind = cells[0].strip("`")
        rows[kind] = {m.strip() for m in cells[-1].split(",")} & set(MODIFIERS)
    return rows


def test_the_node_kind_table_matches_the_compiler() -> None:
    rows = _table()
    assert set(rows) == {"template", "ref", "def", "patch", "graph"}
    for kind, accepted in rows.items():
        compile_graph(_minimal(kind), RESOLVER)
        for modifier in MODIFIERS:
            if modifier in accepted:
                compile_graph(_minimal(kind, modifier), RESOLVER)
                continue
            with pytest.raises(GraphError, match=f"{modifier} is not supported on {kind} nodes"):
                compile_graph(_minimal(kind, modifier), RESOLVER)


def test_a_computed_kind_compiles_without_a_schema() -> None:
    """'A template, ref or patch whose apiVersion or kind is an expression is dynamic'."""
    graph = _minimal("template")
    graph["spec"]["nodes"] = [
        {"id": "kinds", "def": {"kind": "NoSuchKindAnywhere"}},
        {
            "id": "only",
            "template": {
                "apiVersion": "example.com/v1",
                "kind": "${kinds.kind}",
                "metadata": {"name": "x"},
            },
        },
    ]
    assert "is *dynamic*" in DOC
    compiled = compile_graph(graph, RESOLVER)
    assert list(compiled.topological_order) == ["kinds", "only"]
