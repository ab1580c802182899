"""Per-instance evaluation on hand-built graphs: includeWhen, data pending, readiness,
forEach expansion, status projection (I-*, F-*, T-04). The builder has its own tests."""

from __future__ import annotations

from typing import Any

import pytest

from kro.cel import CelCompileError, CelEnvironment
from kro.graph.evaluate import EvaluationError, InstanceEvaluation, Pending
from kro.graph.model import ForEachDimension, Graph, Instance, Node, NodeType, TemplateField
from kro.graph.resolver import GVK
from kro.graph.template import FieldPath, extract_fields

SCHEMA = {
    "type": "object",
    "properties": {
        "metadata": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}},
        },
        "spec": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "replicas": {"type": "integer"},
                "enabled": {"type": "boolean"},
                "tiers": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}
CONFIGMAP = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _env() -> CelEnvironment:
    env = CelEnvironment()
    env.declare("schema", SCHEMA)
    env.declare("cm", CONFIGMAP)
    env.declare("deploy", CONFIGMAP)
    env.declare("pods", {"type": "array", "items": CONFIGMAP})
    return env


def _node(
    env: CelEnvironment,
    node_id: str,
    index: int,
    template: dict[str, Any],
    *,
    node_type: NodeType = NodeType.RESOURCE,
    deps: tuple[str, ...] = (),
    include_when: tuple[str, ...] = (),
    ready_when: tuple[str, ...] = (),
    for_each: tuple[tuple[str, str], ...] = (),
) -> Node:
    field_env = env.extend({name: None for name, _ in for_each}) if for_each else env
    fields = tuple(
        TemplateField(
            path=f.path,
            standalone=f.standalone,
            text=f.text,
            expressions=tuple(field_env.compile(e) for e in f.expressions),
        )
        for f in extract_fields(template)
    )
    ready_env = CelEnvironment()
    ready_env.declare("each" if node_type.is_list else node_id, None)
    return Node(
        id=node_id,
        index=index,
        type=node_type,
        gvk=GVK("", "v1", template["kind"]),
        resource=template["kind"].lower() + "s",
        namespaced=True,
        template=template,
        fields=fields,
        include_when=tuple(env.compile(e) for e in include_when),
        ready_when=tuple(ready_env.compile(e) for e in ready_when),
        for_each=tuple(ForEachDimension(n, env.compile(e)) for n, e in for_each),
        dependencies=deps,
    )


def _graph(nodes: list[Node], status: dict[str, str] | None = None) -> Graph:
    env = _env()
    status_fields = tuple(
        TemplateField(
            path=f.path,
            standalone=f.standalone,
            text=f.text,
            expressions=tuple(env.compile(e) for e in f.expressions),
        )
        for f in extract_fields(status or {})
    )
    return Graph(
        rgd_name="test",
        instance=Instance(
            group="kro.run",
            version="v1alpha1",
            kind="App",
            plural="apps",
            namespaced=True,
            crd={},
            spec_schema={},
            status_schema={},
        ),
        nodes={n.id: n for n in nodes},
        topological_order=tuple(n.id for n in nodes),
        status_fields=status_fields,
        conditions=(),
        environment=env,
    )


INSTANCE = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "App",
    "metadata": {"name": "demo", "namespace": "team-a"},
    "spec": {"name": "web", "replicas": 3, "enabled": True, "tiers": ["a", "b"]},
    "status": {"state": "ACTIVE"},
}


def _cm(env: CelEnvironment, **kw: Any) -> Node:
    return _node(
        env,
        "cm",
        0,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.spec.name}-config"},
            "data": {"replicas": "${string(schema.spec.replicas)}"},
        },
        **kw,
    )


def _deploy(env: CelEnvironment, **kw: Any) -> Node:
    """A Deployment named after the ConfigMap `cm`, so it depends on it."""
    template = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "${cm.metadata.name}"},
    }
    return _node(env, "deploy", 1, template, deps=("cm",), **kw)


def test_renders_templates_and_defaults_the_namespace() -> None:
    env = _env()
    evaluation = InstanceEvaluation(_graph([_cm(env)]), INSTANCE)
    assert evaluation.desired("cm") == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "web-config", "namespace": "team-a"},
            "data": {"replicas": "3"},
        }
    ]


def test_an_expression_that_reads_managed_fields_gets_them() -> None:
    """Expressions get objects without managedFields unless the graph may read them
    (Graph.managed_fields_readers): one that does must see them as the API server sent them."""
    env = _env()
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "${cm.metadata.name}-managers"},
        "data": {"managers": "${string(size(cm.metadata.managedFields))}"},
    }
    counter = _node(env, "deploy", 1, template, deps=("cm",))
    graph = _graph([_cm(env), counter])
    assert graph.managed_fields_readers == {"cm"}
    evaluation = InstanceEvaluation(graph, INSTANCE)
    live = {
        "metadata": {
            "name": "web-config",
            "managedFields": [{"manager": "kro.run/applyset"}, {"manager": "kubectl-edit"}],
        }
    }
    evaluation.observe("cm", live)
    assert evaluation.desired("deploy")[0]["data"] == {"managers": "2"}  # type: ignore[index]
    assert len(evaluation.observed("cm")["metadata"]["managedFields"]) == 2  # unchanged


def test_schema_never_exposes_status() -> None:
    with pytest.raises(CelCompileError, match="undefined field 'status'"):
        _env().compile("schema.status.state")


def test_dependent_waits_until_its_dependency_is_observed_and_ready() -> None:
    env = _env()
    deploy = _deploy(env, ready_when=("deploy.status.ready == true",))
    evaluation = InstanceEvaluation(_graph([_cm(env), deploy]), INSTANCE)
    waiting = evaluation.desired("deploy")
    assert isinstance(waiting, Pending)
    assert 'dependent node "cm" not ready' in waiting.reason
    evaluation.observe("cm", {"metadata": {"name": "web-config"}})
    assert evaluation.desired("deploy")[0]["metadata"]["name"] == "web-config"  # type: ignore[index]
    evaluation.observe("deploy", {"status": {}})
    assert not evaluation.readiness("deploy").ready
    evaluation.observe("deploy", {"status": {"ready": False}})
    assert "evaluated to false" in evaluation.readiness("deploy").reason
    evaluation.observe("deploy", {"status": {"ready": True}})
    assert evaluation.readiness("deploy").ready


def test_include_when_false_skips_the_node_and_its_dependents() -> None:
    env = _env()
    cm = _cm(env, include_when=("schema.spec.replicas > 5",))
    deploy = _deploy(env)
    evaluation = InstanceEvaluation(_graph([cm, deploy]), INSTANCE)
    assert evaluation.check_ignored("cm") is True
    assert evaluation.check_ignored("deploy") is True
    assert evaluation.readiness("cm").ready


def test_include_when_on_a_resource_waits_for_it() -> None:
    env = _env()
    deploy = _node(
        env,
        "deploy",
        1,
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}},
        deps=("cm",),
        include_when=("cm.data.enabled == 'true'",),
    )
    evaluation = InstanceEvaluation(_graph([_cm(env), deploy]), INSTANCE)
    assert isinstance(evaluation.check_ignored("deploy"), Pending)
    evaluation.observe("cm", {"data": {}})
    assert isinstance(evaluation.check_ignored("deploy"), Pending)  # missing key is pending
    evaluation.observe("cm", {"data": {"enabled": "true"}})
    assert evaluation.check_ignored("deploy") is False


def test_for_each_is_a_cartesian_product_with_the_first_dimension_outermost() -> None:
    env = _env()
    pods = _node(
        env,
        "pods",
        0,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "${schema.spec.name}-${tier}-${i}"},
        },
        node_type=NodeType.COLLECTION,
        for_each=(("tier", "schema.spec.tiers"), ("i", "['1', '2']")),
    )
    evaluation = InstanceEvaluation(_graph([pods]), INSTANCE)
    names = [o["metadata"]["name"] for o in evaluation.desired("pods")]  # type: ignore[union-attr]
    assert names == ["web-a-1", "web-a-2", "web-b-1", "web-b-2"]


def test_collection_over_the_limit_is_a_fatal_error_naming_the_limit() -> None:
    env = _env()
    pods = _node(
        env,
        "pods",
        0,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "${string(i)}"}},
        node_type=NodeType.COLLECTION,
        for_each=(("i", "lists.range(20)"),),
    )
    evaluation = InstanceEvaluation(_graph([pods]), INSTANCE, max_collection_size=10)
    with pytest.raises(EvaluationError, match="maximum collection size of 10"):
        evaluation.desired("pods")


def test_collection_items_with_the_same_identity_collide() -> None:
    env = _env()
    pods = _node(
        env,
        "pods",
        0,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fixed"}},
        node_type=NodeType.COLLECTION,
        for_each=(("i", "[1, 2]"),),
    )
    with pytest.raises(EvaluationError, match="identity collision"):
        InstanceEvaluation(_graph([pods]), INSTANCE).desired("pods")


def test_collection_is_ready_when_every_item_exists_and_passes_ready_when() -> None:
    env = _env()
    pods = _node(
        env,
        "pods",
        0,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-${string(i)}"}},
        node_type=NodeType.COLLECTION,
        for_each=(("i", "[1, 2]"),),
        ready_when=("each.status.phase == 'Running'",),
    )
    evaluation = InstanceEvaluation(_graph([pods]), INSTANCE)
    evaluation.desired("pods")
    evaluation.observe("pods", [{"status": {"phase": "Running"}}])
    assert "1 of 2" in evaluation.readiness("pods").reason
    evaluation.observe("pods", [{"status": {"phase": "Running"}}, {"status": {"phase": "Pending"}}])
    assert not evaluation.readiness("pods").ready
    evaluation.observe("pods", [{"status": {"phase": "Running"}}] * 2)
    assert evaluation.readiness("pods").ready


def test_status_fields_appear_only_when_their_data_exists() -> None:
    env = _env()
    graph = _graph(
        [_cm(env)],
        status={
            "configName": "${cm.metadata.name}",
            "url": "http://${cm.data.host}:80",
            "endpoints": ["${schema.spec.name}", "${cm.metadata.name}"],
        },
    )
    evaluation = InstanceEvaluation(graph, INSTANCE)
    assert evaluation.status_fields() == {"endpoints": ["web"]}
    evaluation.observe("cm", {"metadata": {"name": "web-config"}, "data": {"host": "h"}})
    assert evaluation.status_fields() == {
        "configName": "web-config",
        "url": "http://h:80",
        "endpoints": ["web", "web-config"],
    }


def test_failing_expression_is_fatal_and_names_the_resource_and_expression() -> None:
    env = _env()
    node = _node(
        env,
        "cm",
        0,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "x"},
            "data": {"v": "${string(schema.spec.replicas / 0)}"},
        },
    )
    with pytest.raises(EvaluationError) as error:
        InstanceEvaluation(_graph([node]), INSTANCE).desired("cm")
    assert error.value.resource_id == "cm"
    assert error.value.expression == "string(schema.spec.replicas / 0)"


def test_field_path_segments_build_nested_status() -> None:
    from kro.graph.evaluate import _set_path

    out: dict[str, Any] = {}
    _set_path(out, FieldPath(("a", "b", 1)), "x")
    assert out == {"a": {"b": [None, "x"]}}
