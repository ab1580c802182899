"""Compiling `Graph` objects (V-42..V-52): node kinds, ids, modifiers, `def` typing, and the
evaluation rule that readyWhen reports without gating. Expected messages are upstream's."""

from __future__ import annotations

from typing import Any

import pytest

from kro.graph.errors import GraphError
from kro.graph.evaluate import InstanceEvaluation, Pending
from kro.graph.graph_kind import compile_graph, patch_endpoint, value_schema
from kro.graph.model import NodeType
from kro.graph.resolver import OfflineSchemaResolver, builtin_bundle

RESOLVER = OfflineSchemaResolver(builtin_bundle())
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
SERVICES_REF = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"selector": {"matchLabels": {"route": "yes"}}},
}


def _graph(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": "g", "namespace": "team", "uid": "u-1"},
        "spec": {"nodes": list(nodes)},
    }


def _error(*nodes: dict[str, Any]) -> str:
    with pytest.raises(GraphError) as caught:
        compile_graph(_graph(*nodes), RESOLVER)
    return str(caught.value)


def test_node_kinds_map_onto_the_engine_model() -> None:
    graph = compile_graph(
        _graph(
            {"id": "services", "ref": SERVICES_REF},
            {
                "id": "one",
                "ref": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
            },
            {
                "id": "names",
                "forEach": [{"s": "${services}"}],
                "def": {"name": "${s.metadata.name}"},
            },
            {"id": "settings", "template": CONFIGMAP},
            {
                "id": "copies",
                "forEach": [{"n": "${names}"}],
                "template": {**CONFIGMAP, "metadata": {"name": "${n.name}"}},
            },
        ),
        RESOLVER,
    )
    types = {n: graph.node(n).type for n in graph.topological_order}
    assert types == {
        "services": NodeType.EXTERNAL_COLLECTION,
        "one": NodeType.EXTERNAL,
        "names": NodeType.VALUE_COLLECTION,
        "settings": NodeType.RESOURCE,
        "copies": NodeType.COLLECTION,
    }
    assert graph.node("copies").dependencies == ("names",)
    assert graph.readiness_gates is False


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (
            {"id": "x", "template": CONFIGMAP, "ref": SERVICES_REF},
            "exactly one of template, ref, def, graph, patch must be set",
        ),
        ({"id": "x"}, "exactly one of template, ref, def, graph, patch must be set"),
        (
            {"id": "x", "watch": SERVICES_REF},  # an early node kind upstream dropped (OQ-7)
            "exactly one of template, ref, def, graph, patch must be set",
        ),
        ({"id": "1x", "template": CONFIGMAP}, 'id "1x" must match ^[A-Za-z][A-Za-z0-9]*$'),
        (
            {"id": "my-node", "template": CONFIGMAP},
            'id "my-node" must match ^[A-Za-z][A-Za-z0-9]*$',
        ),
        ({"id": "spec", "template": CONFIGMAP}, 'id "spec" is reserved'),
        ({"id": "while", "template": CONFIGMAP}, 'id "while" is reserved'),
        (
            {"id": "x", "forEach": [{"s": "${[1]}"}], "ref": SERVICES_REF},
            "forEach is not supported on ref nodes",
        ),
        (
            {"id": "x", "readyWhen": ["${true}"], "patch": CONFIGMAP},
            "readyWhen is not supported on patch nodes",
        ),
        (
            {"id": "x", "includeWhen": ["${true}"], "graph": {"nodes": []}},
            "includeWhen is not supported on graph nodes",
        ),
    ],
)
def test_node_rules(node: dict[str, Any], message: str) -> None:
    assert message in _error(node)


def test_duplicate_ids_and_an_empty_graph() -> None:
    assert 'duplicate node id "a"' in _error(
        {"id": "a", "template": CONFIGMAP}, {"id": "a", "template": CONFIGMAP}
    )
    assert "at least one node" in _error()


def test_uppercase_ids_are_allowed() -> None:
    graph = compile_graph(_graph({"id": "Settings", "template": CONFIGMAP}), RESOLVER)
    assert graph.topological_order == ("Settings",)


def test_iterator_rules() -> None:
    each = {"id": "x", "forEach": [{"each": "${[1]}"}], "def": {"v": "${each}"}}
    assert compile_graph(_graph(each), RESOLVER).node("x").type is NodeType.VALUE_COLLECTION
    clash = {"id": "x", "forEach": [{"x": "${[1]}"}], "def": {"v": "${x}"}}
    assert "conflicts with a node id" in _error(clash)
    reserved = {"id": "x", "forEach": [{"kind": "${[1]}"}], "def": {"v": "1"}}
    assert 'forEach iterator "kind" is reserved' in _error(reserved)


def test_a_def_is_typed_from_its_literals() -> None:
    naming = {"id": "naming", "def": {"prefix": "team-", "replicas": 2}}
    typo = {"id": "cm", "template": {**CONFIGMAP, "metadata": {"name": "${naming.prefxi}"}}}
    assert "prefxi" in _error(naming, typo)
    good = {"id": "cm", "template": {**CONFIGMAP, "metadata": {"name": "${naming.prefix + 'a'}"}}}
    assert compile_graph(_graph(naming, good), RESOLVER).node("cm").dependencies == ("naming",)
    assert value_schema({"a": "x", "n": 1, "b": True, "e": "${x}", "l": [1.5]}) == {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "n": {"type": "integer"},
            "b": {"type": "boolean"},
            "e": {"x-kubernetes-preserve-unknown-fields": True},
            "l": {"type": "array", "items": {"type": "number"}},
        },
    }


def test_a_typo_in_a_referenced_kind_is_a_compile_error() -> None:
    ingress = {
        "id": "ingress",
        "template": {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "edge"},
            "spec": {"rules": "${services.map(s, {'host': string(s.spec.prots[0].port)})}"},
        },
    }
    assert "prots" in _error({"id": "services", "ref": SERVICES_REF}, ingress)


def test_there_is_no_schema_variable() -> None:
    uses_schema = {"id": "cm", "template": {**CONFIGMAP, "data": {"a": "${schema.spec.x}"}}}
    assert "schema" in _error(uses_schema)


CONFIG = {"id": "config", "template": {**CONFIGMAP, "data": {"tier": "gold"}}}


def _backend(*inner: dict[str, Any]) -> dict[str, Any]:
    return {"id": "backend", "graph": {"nodes": list(inner)}}


def test_a_nested_graph_is_a_frame() -> None:
    """V-47/V-49: inner ids are qualified, an inner node may capture an outer one, and outer
    nodes reach inner ones through the graph node's value."""
    deployment = {
        "id": "settings",
        "template": {
            **CONFIGMAP,
            "metadata": {"name": "inner"},
            "data": {"tier": "${config.data.tier}"},
        },
    }
    service = {
        "id": "copy",
        "template": {**CONFIGMAP, "metadata": {"name": "${settings.metadata.name + '-copy'}"}},
    }
    summary = {"id": "summary", "def": {"name": "${backend.copy.metadata.name}"}}
    graph = compile_graph(_graph(CONFIG, _backend(deployment, service), summary), RESOLVER)
    nodes = graph.nodes
    assert set(nodes) == {"config", "backend/settings", "backend/copy", "backend", "summary"}
    assert nodes["backend/settings"].dependencies == ("config",)
    assert nodes["backend/copy"].dependencies == ("backend/settings",)
    assert set(nodes["backend"].dependencies) == {"backend/settings", "backend/copy"}
    assert nodes["summary"].dependencies == ("backend",)
    order = graph.topological_order
    assert order.index("config") < order.index("backend/settings") < order.index("backend")
    assert order.index("backend") < order.index("summary")

    evaluation = InstanceEvaluation(graph, _graph())
    evaluation.observe("config", {**CONFIGMAP, "data": {"tier": "gold"}})
    rendered = evaluation.desired("backend/settings")
    assert not isinstance(rendered, Pending)
    assert rendered[0]["data"] == {"tier": "gold"}
    evaluation.observe("backend/settings", rendered[0])
    copy = evaluation.desired("backend/copy")
    assert not isinstance(copy, Pending)
    assert copy[0]["metadata"]["name"] == "inner-copy"
    evaluation.observe("backend/copy", copy[0])
    value = evaluation.desired("backend")
    assert not isinstance(value, Pending)
    evaluation.observe("backend", value[0])
    assert evaluation.desired("summary") == [{"name": "inner-copy"}]


def test_an_inner_id_shadows_an_outer_one() -> None:
    inner = {"id": "config", "template": {**CONFIGMAP, "metadata": {"name": "inner"}}}
    reader = {
        "id": "reader",
        "template": {**CONFIGMAP, "metadata": {"name": "${config.metadata.name + '-r'}"}},
    }
    graph = compile_graph(_graph(CONFIG, _backend(inner, reader)), RESOLVER)
    assert graph.node("backend/reader").dependencies == ("backend/config",)


def test_one_expression_reads_one_frame() -> None:
    local = {"id": "local", "template": {**CONFIGMAP, "metadata": {"name": "l"}}}
    mixed = {
        "id": "mixed",
        "template": {
            **CONFIGMAP,
            "metadata": {"name": "${config.metadata.name + local.metadata.name}"},
        },
    }
    assert "mixes node references from different graph scopes" in _error(
        CONFIG, _backend(local, mixed)
    )
    assert "at least one node" in _error(_backend())


def test_a_dynamic_kind_is_untyped() -> None:
    """V-48: apiVersion/kind from an expression: no schema check, the kind found per object."""
    kinds = {"id": "kinds", "def": {"kind": "ConfigMap"}}
    dynamic = {
        "id": "t",
        "template": {**CONFIGMAP, "kind": "${kinds.kind}", "data": {"anything": "${kinds.kind}"}},
    }
    graph = compile_graph(_graph(kinds, dynamic), RESOLVER)
    assert graph.node("t").dynamic_type
    assert graph.node("t").type is NodeType.RESOURCE
    assert not graph.node("kinds").dynamic_type
    named = {"id": "n", "template": {**CONFIGMAP, "metadata": {"name": "${kinds.kind}"}}}
    assert not compile_graph(_graph(kinds, named), RESOLVER).node("n").dynamic_type


def test_patch_endpoints() -> None:
    status = {"id": "p", "patch": {**CONFIGMAP, "status": {"x": "y"}}}
    main = {"id": "p", "patch": {**CONFIGMAP, "data": {"a": "b"}}}
    labels = {"id": "p", "patch": {**CONFIGMAP, "metadata": {"name": "s", "labels": {"a": "b"}}}}
    assert patch_endpoint(status["patch"]) == "status"
    assert patch_endpoint(main["patch"]) == ""
    assert patch_endpoint(labels["patch"]) == ""
    assert compile_graph(_graph(main), RESOLVER).node("p").type is NodeType.PATCH


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {**CONFIGMAP, "data": {"a": "b"}, "status": {"x": "y"}},
            "a patch node targets a single endpoint",
        ),
        ({**CONFIGMAP}, "patch node contributes no fields"),
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": {"a": "b"}},
            "metadata.name",
        ),
        ({**CONFIGMAP, "metadata": {"name": "s", "finalizers": ["x"]}}, "metadata.finalizers"),
        (
            {**CONFIGMAP, "metadata": {"name": "s", "ownerReferences": []}, "data": {"a": "b"}},
            "metadata.ownerReferences",
        ),
    ],
)
def test_patch_rules(body: dict[str, Any], message: str) -> None:
    assert message in _error({"id": "p", "patch": body})


def test_a_patch_cannot_be_read() -> None:
    patch = {"id": "p", "patch": {**CONFIGMAP, "data": {"a": "b"}}}
    reader = {"id": "cm", "template": {**CONFIGMAP, "metadata": {"name": "${p.metadata.name}"}}}
    assert (
        'patch node "p" does not publish a value into scope and cannot be referenced in CEL '
        "expressions"
    ) in _error(patch, reader)


def test_ready_when_reports_without_gating() -> None:
    """V-52: a dependent renders as soon as the data it reads exists, ready or not."""
    graph = compile_graph(
        _graph(
            {
                "id": "first",
                "readyWhen": ["${first.data.ready == 'yes'}"],
                "template": {**CONFIGMAP, "data": {"ready": "no"}},
            },
            {
                "id": "second",
                "template": {
                    **CONFIGMAP,
                    "metadata": {"name": "two"},
                    "data": {"from": "${first.data.ready}"},
                },
            },
        ),
        RESOLVER,
    )
    evaluation = InstanceEvaluation(graph, _graph())
    assert isinstance(evaluation.desired("second"), Pending)  # `first` not observed yet
    evaluation.observe("first", {**CONFIGMAP, "data": {"ready": "no"}})
    assert not evaluation.readiness("first").ready
    rendered = evaluation.desired("second")
    assert not isinstance(rendered, Pending)
    assert rendered[0]["data"] == {"from": "no"}
    assert rendered[0]["metadata"]["namespace"] == "team"  # the Graph's namespace
