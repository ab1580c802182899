"""Template values: literals against the kind's OpenAPI schema (G-10..G-12) and expressions
type-checked against the field they fill (G-21, G-22, C-03, N-23), `runtime` (C-15) and
`omit()` (C-31) in templates."""

from __future__ import annotations

from typing import Any

import pytest
from test_builder_fixtures import build, build_error, configmap, network, resource, rgd

from kro.graph.build_errors import ResourceBuildError, ResourceValidationError
from kro.graph.model import NodeType

EXTRACT = (
    'failed to build resource "net": '
    "failed to extract CEL expressions from schema for resource net: "
)


@pytest.mark.parametrize(
    "spec",
    [
        {"replicas": 3, "ratio": 0.5, "enabled": True, "cidrBlocks": ["10.0.0.0/8"]},
        {"ratio": 1},
        {"port": "http"},
        {"port": 8080},
        {"config": {"anything": {"goes": [1, "x", None]}}},
        {"anything": {"a": {"b": 1}}},
        {"labels": {"a": "b"}},
        {"replicas": None, "peer": None},
        {"peers": [{"name": "a", "port": 1}]},
        {"peer": {"name": "${schema.spec.name}-peer"}},
        {"config": {"x": "${schema.spec.replicas}", "y": "a-${schema.spec.name}"}},
    ],
    ids=["scalars", "int-is-a-number", "int-or-string-string", "int-or-string-int",
         "preserve-unknown", "additional-properties-true", "string-map", "nulls",
         "array-of-objects", "string-template-into-string", "expressions-under-preserve-unknown"],
)  # fmt: skip
def test_literals_that_fit_the_schema(spec: dict[str, Any]) -> None:
    assert build(rgd(network(**spec))).nodes["net"].type is NodeType.RESOURCE


@pytest.mark.parametrize(
    ("spec", "detail", "path"),
    [
        ({"foo": "x"},
         "error getting field schema for path spec.foo: schema not found for field foo",
         "spec.foo"),
        ({"peer": {"nmae": "x"}},
         "error getting field schema for path spec.peer.nmae: schema not found for field nmae",
         "spec.peer.nmae"),
        ({"replicas": "3"}, "expected integer type for path spec.replicas, got string",
         "spec.replicas"),
        ({"replicas": 3.0}, "expected integer type for path spec.replicas, got float64",
         "spec.replicas"),
        ({"enabled": "true"}, "expected boolean type for path spec.enabled, got string",
         "spec.enabled"),
        ({"cidrBlocks": "10.0.0.0/8"},
         "expected array type for path spec.cidrBlocks, got string", "spec.cidrBlocks"),
        ({"peer": ["x"]}, "expected object type for path spec.peer, got []interface {}",
         "spec.peer"),
        ({"cidrBlocks": {"a": "b"}},
         "expected array type for path spec.cidrBlocks, got map[string]interface {}",
         "spec.cidrBlocks"),
        ({"port": 1.5}, "expected integer or string type for path spec.port, got float64",
         "spec.port"),
        ({"labels": {"a": 1}}, "expected string type for path spec.labels.a, got int64",
         "spec.labels.a"),
        ({"peers": [{"port": "x"}]},
         "expected integer type for path spec.peers[0].port, got string", "spec.peers[0].port"),
        ({"replicas": "${schema.spec.replicas}-1"},
         "expected integer type for path spec.replicas, got string", "spec.replicas"),
    ],
    ids=["unknown-field", "nested-typo", "string-for-integer", "float-for-integer",
         "string-for-boolean", "string-for-array", "array-for-object", "map-for-array",
         "float-for-int-or-string", "map-value", "array-item-field",
         "string-template-for-integer"],
)  # fmt: skip
def test_literals_that_do_not_fit(spec: dict[str, Any], detail: str, path: str) -> None:
    err = build_error(rgd(network(**spec)))
    assert isinstance(err, ResourceBuildError)
    assert str(err) == EXTRACT + detail
    assert (err.rule, err.resource_id, err.field_path) == ("G-10", "net", path)


def test_nested_expression_is_rejected_with_its_path() -> None:
    err = build_error(rgd(network(peer={"name": "${a ${b}}"})))
    assert str(err) == (
        EXTRACT + "nested expressions are not allowed unless inside string literals"
    )
    assert (err.rule, err.field_path) == ("C-04", "spec.peer.name")


def test_an_unterminated_expression_is_a_build_error_with_its_path() -> None:  # V-06
    err = build_error(rgd(network(peer={"name": "${schema.spec.name"})))
    assert str(err) == EXTRACT + 'unterminated expression "${schema.spec.name": missing closing "}"'
    assert err.field_path == "spec.peer.name"


CRD_TEMPLATE = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "${schema.spec.name}.example.com", "labels": {"a": "${schema.spec.name}"}},
    "spec": {"group": "example.com", "whatever": {"is": ["schemaless"]}},
}


def test_crd_templates_are_schemaless_with_metadata_expressions() -> None:
    node = build(rgd(resource("crd", CRD_TEMPLATE))).nodes["crd"]
    assert [str(f.path) for f in node.fields] == ["metadata.name", "metadata.labels.a"]
    assert not node.namespaced


def test_crd_templates_reject_expressions_outside_metadata() -> None:
    template = {**CRD_TEMPLATE, "spec": {"group": "${schema.spec.name}"}}
    err = build_error(rgd(resource("crd", template)))
    assert str(err) == (
        'failed to build resource "crd": CEL expressions in CRDs are only supported for '
        'metadata fields, found in path "spec.group", resource crd'
    )
    assert (err.rule, err.field_path) == ("G-11", "spec.group")


def test_external_refs_are_serialised_and_schemaless() -> None:
    selector = {
        "matchLabels": {"app": "${schema.spec.name}"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["${schema.spec.tiers[0]}"]}
        ],
    }
    entry: dict[str, Any] = {
        "id": "cms",
        "externalRef": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "namespace": "${schema.spec.name}",
                "selector": selector,
            },
        },
    }
    node = build(rgd(entry)).nodes["cms"]
    assert node.type is NodeType.EXTERNAL_COLLECTION
    assert node.template == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "selector": selector,
            "namespace": "${schema.spec.name}",
        },
    }
    assert [str(f.path) for f in node.fields] == [
        "metadata.selector.matchLabels.app",
        "metadata.selector.matchExpressions[0].values[0]",
        "metadata.namespace",
    ]


@pytest.mark.parametrize(
    ("metadata", "path"),
    [
        ({"name": "${schema.spec.name"}, "metadata.name"),
        ({"name": "x", "namespace": "team-${schema.spec.name"}, "metadata.namespace"),
        ({"selector": {"matchLabels": {"app": "${schema.spec.name"}}},
         "metadata.selector.matchLabels.app"),
        ({"selector": {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["${schema.spec.tiers[0]"]}]}},
         "metadata.selector.matchExpressions[0].values[0]"),
    ],
    ids=["name", "namespace", "selector-label", "selector-expression"],
)  # fmt: skip
def test_an_unterminated_expression_in_an_external_ref_is_a_build_error(
    metadata: dict[str, Any], path: str
) -> None:  # V-06
    entry = {"id": "cms", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": metadata}}  # fmt: skip
    err = build_error(rgd(entry))
    assert str(err).startswith('failed to build resource "cms": ')
    assert 'unterminated expression "${schema.spec.' in str(err)
    assert err.field_path == path


def test_scalar_external_ref_node() -> None:
    entry = {
        "id": "cfg",
        "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}},
    }
    node = build(rgd(entry)).nodes["cfg"]
    assert (node.type, node.resource, node.namespaced) == (NodeType.EXTERNAL, "configmaps", True)
    assert node.template == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "shared"},
    }


# --- expression types (G-21, G-22) ---------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"replicas": "${schema.spec.replicas}"},
        {"ratio": "${schema.spec.ratio}"},
        {"cidrBlocks": "${schema.spec.tiers}"},
        {"labels": "${schema.spec.labels}"},
        {"port": "${schema.spec.name}"},
        {"port": "${schema.spec.replicas}"},
        {"config": "${schema.spec.labels}"},
        {"peer": "${schema.spec.config}"},
        {"peer": "${{'name': 'a', 'port': 1}}"},
        {"replicas": "${schema.spec.?replicas}"},
        {"replicas": "${null}"},
        {"cidrBlocks": "${schema.spec.tiers.map(t, t + '-x')}"},
        {"peers": "${schema.spec.tiers.map(t, {'name': t, 'port': 1})}"},
    ],
    ids=["int", "double", "list-string", "map-string", "int-or-string-from-string",
         "int-or-string-from-int", "preserve-unknown-target", "dyn-source", "map-of-dyn",
         "optional-unwrapped", "null", "map-macro", "list-of-maps"],
)  # fmt: skip
def test_expression_types_that_fit(spec: dict[str, Any]) -> None:
    graph = build(rgd(network(**spec)))
    assert all(n.fields for n in graph.nodes.values())  # accepted with its expressions


def test_struct_output_fields_must_be_a_subset_of_the_target() -> None:
    # A Service's spec.selector is map(string, string); a Deployment's matchLabels fits.
    svc = resource(
        "svc",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "x"},
            "spec": {"selector": "${net.spec.labels}"},
        },
    )
    build(rgd(network(), svc))
    same_kind = network("copy", peer="${net.spec.peer}", peers="${net.spec.peers}")
    build(rgd(network(), same_kind))


@pytest.mark.parametrize(
    ("spec", "output", "expected", "reason"),
    [
        ({"replicas": "${schema.spec.name}"}, "string", "int", "kind mismatch: string is not int"),
        ({"ratio": "${schema.spec.replicas}"}, "int", "double",
         "kind mismatch: int is not double"),
        ({"cidrBlocks": "${schema.spec.ports}"}, "list(int)", "list(string)",
         "kind mismatch: int is not string"),
        ({"enabled": "${schema.spec.tiers}"}, "list(string)", "bool",
         "kind mismatch: list(string) is not bool"),
        ({"peer": "${{'name': 'x'}}"}, "map(string, string)", "__type_net.spec.peer",
         'field "port": kind mismatch: string is not int'),
    ],
    ids=["string-into-int", "int-into-number", "list-elements", "list-into-bool",
         "map-into-struct"],
)  # fmt: skip
def test_type_mismatch(spec: dict[str, Any], output: str, expected: str, reason: str) -> None:
    err = build_error(rgd(network(**spec)))
    ((path, value),) = spec.items()
    expression = value[2:-1]
    assert isinstance(err, ResourceValidationError)
    assert str(err) == (
        f'failed to validate resource "net": type mismatch in resource "net" at path '
        f'"spec.{path}": expression "{expression}" returns type "{output}" but expected '
        f'"{expected}": {reason}'
    )
    assert (err.rule, err.field_path, err.expression) == ("G-21", f"spec.{path}", expression)


def test_struct_with_extra_field_is_rejected() -> None:
    # A container has far more fields than a Network peer.
    deploy = resource(
        "deploy",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "x"},
            "spec": {"selector": {}, "template": {"spec": {"containers": []}}},
        },
    )
    err = build_error(rgd(deploy, network(peer="${deploy.spec.template.spec.containers[0]}")))
    assert "exists in output but not in expected type" in str(err)
    assert err.rule == "G-21"


def test_field_typo_in_expression() -> None:
    err = build_error(rgd(network(replicas="${schema.spec.replicsa}")))
    assert isinstance(err, ResourceValidationError)
    assert str(err).startswith(
        'failed to validate resource "net": failed to type-check template expression '
        '"schema.spec.replicsa" at path "spec.replicas": '
    )
    assert "undefined field 'replicsa'" in str(err)


def test_timestamps_are_not_strings() -> None:
    # N-20: metadata.creationTimestamp is a CEL timestamp.
    err = build_error(rgd(network(peer={"name": "${schema.metadata.creationTimestamp}"})))
    assert 'returns type "timestamp" but expected "string"' in str(err)
    build(rgd(network(peer={"name": "${string(schema.metadata.creationTimestamp)}"})))


def test_string_template_parts_must_be_strings() -> None:
    err = build_error(rgd(network(peer={"name": "${schema.spec.replicas}-x"})))
    assert isinstance(err, ResourceValidationError)
    assert str(err).startswith(
        'failed to validate resource "net": failed to type-check template expression '
        '"${schema.spec.replicas}-x" at path "spec.peer.name": '
    )
    assert "found no matching overload for '_+_' applied to '(int, string)'" in str(err)
    assert err.rule == "C-03"
    build(rgd(network(peer={"name": "${string(schema.spec.replicas)}-x"})))


def test_string_template_compiles_each_part() -> None:
    field = build(rgd(network(peer={"name": "a-${schema.spec.name}-${schema.spec.image}"})))
    (compiled,) = [f for f in field.nodes["net"].fields if str(f.path) == "spec.peer.name"]
    assert not compiled.standalone
    assert [e.expression for e in compiled.expressions] == ["schema.spec.name", "schema.spec.image"]
    assert compiled.text == "a-${schema.spec.name}-${schema.spec.image}"


# --- runtime and omit() --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "${runtime.condition(schema, 'Ready').status}",
        "${runtime.newCondition({type: 'A', status: 'True'}).type}",
        "${runtime.foo}",
    ],
    ids=["condition", "new-condition", "bare"],
)
def test_runtime_is_only_for_conditions(expression: str) -> None:
    err = build_error(rgd(configmap("cm", data={"a": expression})))
    assert str(err) == (
        'failed to validate resource "cm": runtime is only available in status.conditions '
        "expressions"
    )
    assert (err.rule, err.field_path) == ("C-15", "data.a")


def test_omit_requires_the_feature_gate() -> None:
    obj = rgd(network(replicas="${schema.spec.?replicas.orValue(omit())}"))
    err = build_error(obj)
    assert "omit() requires the CELOmitFunction feature gate to be enabled" in str(err)
    graph = build(obj, omit_function=True)
    (field,) = [f for f in graph.nodes["net"].fields if str(f.path) == "spec.replicas"]
    assert field.expressions[0].uses_omit


@pytest.mark.parametrize(
    ("entry", "scope", "path"),
    [
        (configmap("cm", name="${omit()}"), None, "metadata.name"),
        (
            resource("cm", {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "x", "namespace": "${omit()}"}}),
            "Cluster",
            "metadata.namespace",
        ),
    ],
    ids=["name", "namespace-of-cluster-scoped-instance"],
)  # fmt: skip
def test_omit_is_forbidden_on_identity_fields(
    entry: dict[str, Any], scope: str | None, path: str
) -> None:
    err = build_error(rgd(entry, scope=scope), omit_function=True)
    assert str(err) == (
        f'failed to validate resource "cm": omit() cannot be used at path "{path}" — the field '
        "is required and must resolve to a concrete value"
    )
    assert (err.rule, err.field_path) == ("C-31", path)


def test_omit_on_namespace_of_namespaced_instance_is_allowed() -> None:
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "${omit()}"},
    }
    node = build(rgd(resource("cm", template)), omit_function=True).nodes["cm"]
    assert [f.text for f in node.fields] == ["${omit()}"]


def test_omit_in_string_template_is_rejected() -> None:
    err = build_error(rgd(configmap("cm", data={"a": "x-${omit()}"})), omit_function=True)
    assert err.rule == "C-31"
    assert "omit() can only be used in resource template expressions" in str(err)
