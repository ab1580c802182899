"""References between resources: unknown names (G-13), dependency inference (G-14), cycles
(G-15), declaration-order topological sort (G-16), apply-order waves (G-17), variable kinds
(G-28) — plus a property test over random dependency graphs."""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_builder_fixtures import build, build_error, configmap, network, rgd

from kro.graph.build_errors import DependencyGraphError, GraphCycleError


def cm(rid: str, *refs: str, **extra: Any) -> dict[str, Any]:
    """A ConfigMap whose data reads `<ref>.metadata.name` for each ref."""
    return configmap(rid, name=rid, data={r: f"${{{r}.metadata.name}}" for r in refs}, **extra)


@pytest.mark.parametrize(
    ("entry", "detail"),
    [
        (cm("a", "b"), 'resource "a" at path "data.b": references unknown identifiers: [b]'),
        (
            configmap("a", data={"x": "${foo.bar + baz}"}),
            'resource "a" at path "data.x": references unknown identifiers: [foo baz]',
        ),
        (
            configmap("a", data={"x": "${each.metadata.name}"}),
            'resource "a" at path "data.x": references unknown identifiers: [each]',
        ),
        (
            configmap("a", data={"x": "${unknownFn(schema.spec.name)}"}),
            'resource "a" at path "data.x": uses unknown functions: [unknownFn]',
        ),
        (
            configmap("a", data={"x": "${string(math.greatest(1, 2))}"}),
            'resource "a" at path "data.x": uses unknown functions: [math.greatest]',
        ),
        (
            configmap("a", includeWhen=["${b.data.x == 'y'}"]),
            'resource "a" includeWhen: references unknown identifiers: [b]',
        ),
    ],
    ids=["unknown-resource", "several", "each-outside-readywhen", "unknown-function",
         "disabled-library", "include-when"],
)  # fmt: skip
def test_unknown_references(entry: dict[str, Any], detail: str) -> None:
    err = build_error(rgd(entry))
    assert isinstance(err, DependencyGraphError)
    assert str(err) == f"failed to build dependency graph: {detail}"
    assert (err.rule, err.resource_id) == ("G-13", "a")


def test_comprehension_variables_are_local() -> None:
    graph = build(rgd(configmap("a", data={"x": "${schema.spec.tiers.map(t, t).join(',')}"})))
    assert graph.nodes["a"].dependencies == ()


@pytest.mark.parametrize(
    "entry",
    [
        cm("a", "a"),
        configmap("a", includeWhen=["${a.data.x == 'y'}"]),
        configmap("a", name="${x}", forEach=[{"x": "${a.map(i, i.metadata.name)}"}]),
    ],
    ids=["template", "include-when", "for-each"],
)
def test_self_references(entry: dict[str, Any]) -> None:
    err = build_error(rgd(entry))
    assert (
        str(err)
        == 'failed to build dependency graph: resource "a": self references are not allowed'
    )
    assert (err.rule, err.resource_id) == ("G-14", "a")


def test_dependencies_come_from_templates_for_each_and_include_when_not_ready_when() -> None:
    graph = build(
        rgd(
            cm("a"),
            cm("b"),
            cm("c"),
            cm("d"),
            configmap(
                "e",
                name="${tier}",
                data={"x": "${a.metadata.name}"},
                forEach=[{"tier": "${[b.metadata.name]}"}],
                includeWhen=["${c.metadata.name != ''}"],
                readyWhen=["${each.metadata.name != ''}"],
            ),
        )
    )
    assert graph.nodes["e"].dependencies == ("a", "b", "c")
    assert graph.dependents_of("a") == ("e",)
    assert graph.resources_status() == [
        {"id": "e", "dependencies": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}
    ]


def test_dependencies_are_in_declaration_order() -> None:
    graph = build(rgd(cm("z"), cm("y"), cm("x", "y", "z")))
    assert graph.nodes["x"].dependencies == ("z", "y")


@pytest.mark.parametrize(
    ("resources", "cycle"),
    [
        ([cm("a", "b"), cm("b", "a")], "a -> b -> a"),
        ([cm("a", "c"), cm("b", "a"), cm("c", "b")], "a -> c -> b -> a"),
        (
            [cm("a"), cm("b", includeWhen=["${c.metadata.name != ''}"]), cm("c", "b")],
            "b -> c -> b",
        ),
    ],
    ids=["two", "three", "via-include-when"],
)
def test_cycles(resources: list[dict[str, Any]], cycle: str) -> None:
    err = build_error(rgd(*resources))
    assert isinstance(err, GraphCycleError)
    assert str(err) == f"failed to build dependency graph: graph contains a cycle: {cycle}"
    assert err.rule == "G-15"
    assert " -> ".join(err.cycle) == cycle


def test_ready_when_does_not_create_cycles() -> None:
    graph = build(rgd(cm("a", "b", readyWhen=["${a.metadata.name != ''}"]), cm("b")))
    assert graph.topological_order == ("b", "a")


def test_topological_order_breaks_ties_by_declaration_order() -> None:
    # G-16's example: [b -> a, a, c] gives [a, b, c].
    graph = build(rgd(cm("b", "a"), cm("a"), cm("c")))
    assert graph.topological_order == ("a", "b", "c")
    assert list(graph.nodes) == ["a", "b", "c"]


def test_apply_order_waves() -> None:
    # G-17's example: b->a, c->a, d->{b,c} gives a:1, b:2, c:2, d:3; isolated nodes get the max.
    graph = build(rgd(cm("a"), cm("b", "a"), cm("c", "a"), cm("d", "b", "c"), cm("e")))
    assert {n: graph.nodes[n].apply_order for n in graph.topological_order} == {
        "a": 1, "b": 2, "c": 2, "d": 3, "e": 3,
    }  # fmt: skip


def test_variable_kinds() -> None:
    graph = build(
        rgd(
            cm("a"),
            configmap(
                "b",
                name="${schema.spec.name}-${tier}",
                data={"static": "${schema.spec.name}", "dynamic": "${a.metadata.name}"},
                forEach=[{"tier": "${schema.spec.tiers}"}],
            ),
        )
    )
    kinds = {str(f.path): f.kind for f in graph.nodes["b"].fields}
    assert kinds == {
        "metadata.name": "iteration",
        "data.static": "static",
        "data.dynamic": "dynamic",
    }


def test_nodes_carry_kind_scope_and_schema() -> None:
    graph = build(rgd(network(replicas=2), cm("cfg")))
    node = graph.nodes["net"]
    assert (node.gvk.group, node.gvk.version, node.gvk.kind) == ("example.com", "v1", "Network")
    assert (node.resource, node.namespaced, node.index) == ("networks", True, 0)
    assert node.schema["properties"]["spec"]["properties"]["replicas"] == {"type": "integer"}
    assert graph.node("cfg").index == 1


def test_spec_hash_ignores_resource_order() -> None:
    first = build(rgd(cm("a"), cm("b")))
    second = build(rgd(cm("b"), cm("a")))
    assert first.spec_hash == second.spec_hash
    assert len(first.spec_hash) == 16


# --- property: random dependency graphs ----------------------------------------------------------


@st.composite
def dependency_graphs(draw: st.DrawFn) -> dict[str, list[str]]:
    size = draw(st.integers(min_value=1, max_value=7))
    ids = [f"r{i}" for i in range(size)]
    return {
        rid: draw(st.lists(st.sampled_from([o for o in ids if o != rid] or [rid]), unique=True))
        if size > 1
        else []
        for rid in ids
    }


def _expected_order(deps: dict[str, list[str]]) -> list[str] | None:
    """Kahn with a min-heap on declaration index, written independently of kro.graph.dag."""
    index = {rid: i for i, rid in enumerate(deps)}
    waiting = {rid: len(set(d)) for rid, d in deps.items()}
    ready = [(index[r], r) for r, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, rid = heapq.heappop(ready)
        order.append(rid)
        for other, other_deps in deps.items():
            if rid in other_deps:
                waiting[other] -= 1
                if waiting[other] == 0:
                    heapq.heappush(ready, (index[other], other))
    return order if len(order) == len(deps) else None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dependency_graphs())
def test_random_graphs_sort_or_report_a_real_cycle(deps: dict[str, list[str]]) -> None:
    obj = rgd(*(cm(rid, *refs) for rid, refs in deps.items()))
    expected = _expected_order(deps)
    if expected is None:
        err = build_error(obj)
        assert isinstance(err, GraphCycleError)
        cycle = err.cycle
        assert len(cycle) >= 3
        assert cycle[0] == cycle[-1]
        for dependent, dependency in itertools.pairwise(cycle):
            assert dependency in deps[dependent]
        return
    graph = build(obj)
    assert list(graph.topological_order) == expected
    for rid, refs in deps.items():
        assert set(graph.nodes[rid].dependencies) == set(refs)
        for ref in refs:
            assert graph.nodes[ref].apply_order < graph.nodes[rid].apply_order


def test_metadata_only_lists_the_resources_nothing_reads_beyond_metadata() -> None:
    graph = build(
        rgd(
            cm("named"),
            configmap("content", data={"x": "y"}),
            cm("labelled"),
            configmap("unread"),
            cm("reader", "named"),
            configmap("dataReader", data={"x": "${content.data.x}"}),
            configmap("labelReader", data={"x": "${labelled.metadata.labels.team}"}),
            configmap("ready", readyWhen=["${ready.metadata.name != ''}"]),
            configmap("statusRead"),
            configmap("fieldsRead"),
            configmap("wholeRead"),
            configmap("wholeReader", data={"x": "${wholeRead == wholeRead ? 'y' : 'n'}"}),
            configmap(
                "fieldsReader", data={"x": "${string(size(fieldsRead.metadata.managedFields))}"}
            ),
            status={"s": "${statusRead.data.x}"},
        )
    )
    # Content is read by an expression of another resource, of the status, or as a whole
    # (`wholeRead == wholeRead`); managedFields are not kept by a metadata-only cache.
    assert graph.metadata_only == {
        "named",
        "labelled",
        "unread",
        "reader",
        "dataReader",
        "labelReader",
        "ready",
        "wholeReader",
        "fieldsReader",
    }


def test_managed_fields_readers_are_whole_reads_metadata_reads_and_managed_fields_reads() -> None:
    graph = build(
        rgd(
            configmap("named"),
            configmap("fieldsRead"),
            configmap("wholeRead"),
            configmap("metadataRead"),
            configmap(
                "reader",
                data={
                    "a": "${named.metadata.name}",
                    "b": "${string(size(fieldsRead.metadata.managedFields))}",
                    "c": "${wholeRead == wholeRead ? 'y' : 'n'}",
                    "d": "${metadataRead.metadata == metadataRead.metadata ? 'y' : 'n'}",
                    "e": "${schema.metadata.name}",
                },
            ),
        )
    )
    assert graph.managed_fields_readers == {"fieldsRead", "wholeRead", "metadataRead"}
