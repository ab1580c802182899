"""`target` blocks at build time (M-10, M-11): the MultiCluster gate, their shape, an RGD-wide
target that may read `schema` only, a resource's own target overriding it, and the target
compiled as a field of the node (typed, a dependency, per forEach row)."""

from __future__ import annotations

from typing import Any

import pytest
from test_builder_fixtures import build, build_error, configmap, rgd

from kro.api.names import ANNOTATION_TARGET_CLUSTER
from kro.api.v1alpha1 import ResourceGraphDefinitionSpec
from kro.graph.build_errors import RGDValidationError


def _target(name: str, namespace: str | None = None) -> dict[str, Any]:
    cluster: dict[str, Any] = {"kubeconfigSecretName": name}
    if namespace is not None:
        cluster["kubeconfigSecretNamespace"] = namespace
    return {"cluster": cluster}


def _with_target(obj: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["target"] = target
    return obj


def _annotation(graph: Any, node_id: str) -> Any:
    return graph.node(node_id).template["metadata"]["annotations"][ANNOTATION_TARGET_CLUSTER]


def test_gate_off_refuses_a_target_naming_the_gate() -> None:
    err = build_error(rgd(configmap("cm", target=_target("member-1"))))
    assert isinstance(err, RGDValidationError)
    assert "MultiCluster feature gate" in str(err)
    assert err.resource_id == "cm"
    err = build_error(_with_target(rgd(configmap("cm")), _target("member-1")))
    assert "spec.target requires the MultiCluster feature gate" in str(err)


def test_gate_off_leaves_rgds_without_targets_alone() -> None:
    graph = build(rgd(configmap("cm")))
    assert ANNOTATION_TARGET_CLUSTER not in (
        graph.node("cm").template["metadata"].get("annotations") or {}
    )


def test_spec_wide_target_reaches_every_resource_and_a_resource_overrides_it() -> None:
    obj = _with_target(
        rgd(configmap("a"), configmap("b", name="${schema.spec.name}-b", target=_target("other"))),
        _target("${schema.spec.name}"),
    )
    graph = build(obj, multi_cluster=True)
    assert _annotation(graph, "a") == "${schema.spec.name}"
    assert _annotation(graph, "b") == "other"


def test_spec_wide_target_may_read_schema_only() -> None:
    obj = _with_target(
        rgd(configmap("a"), configmap("b", name="${schema.spec.name}-b")),
        _target("${a.metadata.name}"),
    )
    err = build_error(obj, multi_cluster=True)
    assert "may only read schema" in str(err)
    assert err.field_path == "spec.target.cluster.kubeconfigSecretName"


def test_a_resource_target_reading_another_resource_depends_on_it() -> None:
    obj = rgd(
        configmap("a"),
        configmap("b", name="${schema.spec.name}-b", target=_target("${a.metadata.name}")),
    )
    graph = build(obj, multi_cluster=True)
    assert "a" in graph.node("b").dependencies


def test_a_target_must_be_a_string_expression() -> None:
    err = build_error(rgd(configmap("cm", target=_target("${1 + 2}"))), multi_cluster=True)
    assert err.resource_id == "cm"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ({"cluster": {}}, "kubeconfigSecretName must be a non-empty string"),
        ({"cluster": {"kubeconfigSecretName": ""}}, "must be a non-empty string"),
        ({"cluster": {"name": "x"}}, "may only set kubeconfigSecretName"),
        ({"clusters": {}}, "exactly one key, cluster"),
        ("member-1", "exactly one key, cluster"),
    ],
)
def test_a_malformed_target_names_its_path(target: Any, message: str) -> None:
    err = build_error(rgd(configmap("cm", target=target)), multi_cluster=True)
    assert message in str(err)
    assert err.resource_id == "cm"
    assert str(err.field_path).startswith("target")


def test_the_secret_namespace_may_only_be_the_registry_namespace() -> None:
    obj = rgd(configmap("cm", target=_target("member-1", "elsewhere")))
    err = build_error(obj, multi_cluster=True, cluster_secrets_namespace="kro-system")
    assert 'registry\'s namespace "kro-system"' in str(err)
    fine = rgd(configmap("cm", target=_target("member-1", "kro-system")))
    assert build(fine, multi_cluster=True, cluster_secrets_namespace="kro-system")


def test_the_api_model_keeps_targets() -> None:
    obj = _with_target(rgd(configmap("a", target=_target("x"))), _target("y"))
    spec = ResourceGraphDefinitionSpec.model_validate(obj["spec"]).to_dict()
    assert spec["target"] == _target("y")
    assert spec["resources"][0]["target"] == _target("x")


def _graph_with_target(target: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "fan-out"},
        "spec": {
            "nodes": [
                {
                    "id": "members",
                    "ref": {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {
                            "namespace": "kro-system",
                            "selector": {"matchLabels": {"m": "1"}},
                        },
                    },
                },
                {
                    "id": "bundle",
                    "forEach": [{"m": "${members}"}],
                    "target": target,
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${m.metadata.name}", "namespace": "default"},
                    },
                },
            ]
        },
    }


def test_a_graph_node_target_is_gated_and_computed_per_row() -> None:
    """M-11: a forEach row over the registry Secrets computes its own target."""
    from kro.graph.errors import GraphError
    from kro.graph.graph_kind import compile_graph
    from kro.graph.options import BuildOptions
    from kro.graph.resolver import OfflineSchemaResolver, builtin_bundle

    resolver = OfflineSchemaResolver(builtin_bundle())
    graph = _graph_with_target(_target("${m.metadata.name}"))
    with pytest.raises(GraphError, match="MultiCluster feature gate"):
        compile_graph(graph, resolver)
    compiled = compile_graph(graph, resolver, options=BuildOptions(multi_cluster=True))
    assert _annotation(compiled, "bundle") == "${m.metadata.name}"
    assert "members" in compiled.node("bundle").dependencies
    refused = _graph_with_target(_target("x", "elsewhere"))
    options = BuildOptions(multi_cluster=True, cluster_secrets_namespace="kro-system")
    with pytest.raises(GraphError, match="registry's namespace"):
        compile_graph(refused, resolver, options=options)


def test_a_row_that_targets_its_own_cluster_may_keep_one_name() -> None:
    """M-11 with G-20: one name in every member a forEach fans out to is one object each; an
    iterator used neither in the identity nor in the target is still refused."""
    fanned = configmap(
        "bundle",
        name="bundle",
        forEach=[{"c": "${schema.spec.clusters}"}],
        target=_target("${c}"),
    )
    spec = {"name": "string", "clusters": "[]string"}
    graph = build(rgd(fanned, spec=spec), multi_cluster=True)
    assert _annotation(graph, "bundle") == "${c}"
    unused = configmap(
        "bundle", name="bundle", forEach=[{"c": "${schema.spec.clusters}"}], target=_target("x")
    )
    err = build_error(rgd(unused, spec=spec), multi_cluster=True)
    assert "unique resource identity" in str(err)
