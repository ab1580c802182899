"""The instance side of the graph: the `schema` variable (C-11, N-25), the spec schema
(G-04), projected status fields and the inferred status schema (T-01..T-03, T-05), author
conditions (K-01..K-03, C-32, C-33), and the generated CRD (S-28)."""

from __future__ import annotations

from typing import Any

import pytest
from test_builder_fixtures import build, build_error, configmap, deployment, resource, rgd

from kro.graph.build_errors import ConditionsError, InstanceSchemaError, StatusSchemaError
from kro.graph.template import FieldPath

CM = configmap("cm")


# --- the `schema` variable -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "${schema.metadata.name}",
        "${schema.metadata.namespace}",
        "${schema.metadata.labels['app']}",
        "${schema.apiVersion + schema.kind}",
        "${string(schema.metadata.generation)}",
        "${schema.spec.tiers[0]}",
        "${schema.spec.config.anything.goes}",
    ],
    ids=["name", "namespace", "labels", "apiversion-kind", "generation", "spec-list",
         "preserve-unknown-spec"],
)  # fmt: skip
def test_schema_exposes_object_meta_and_spec(expression: str) -> None:
    node = build(rgd(configmap("cm", data={"x": expression}))).nodes["cm"]
    # Accepted, as a value read from the instance alone.
    field = next(f for f in node.fields if f.text == expression)
    assert (field.kind, node.dependencies) == ("static", ())


def test_schema_has_no_status() -> None:
    err = build_error(rgd(configmap("cm", data={"x": "${schema.status.state}"})))
    assert "undefined field 'status'" in str(err)


def test_cluster_scoped_instance_has_no_namespace() -> None:
    namespaced = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "y"},
    }
    ok = resource("cm", {**namespaced, "data": {"x": "${schema.metadata.name}"}})
    assert not build(rgd(ok, scope="Cluster")).instance.namespaced
    bad = resource("cm", {**namespaced, "data": {"x": "${schema.metadata.namespace}"}})
    err = build_error(rgd(bad, scope="Cluster"))
    assert "undefined field 'namespace'" in str(err)


def test_environment_declares_schema_and_every_resource() -> None:
    graph = build(rgd(CM, configmap("cms", name="${t}", forEach=[{"t": "${schema.spec.tiers}"}])))
    variables = graph.environment.variables
    assert set(variables) == {"schema", "cm", "cms"}
    assert variables["cm"].kind == "object"
    assert variables["cms"].kind == "list"


@pytest.mark.parametrize(
    ("spec", "detail", "path"),
    [
        ({"a": "int"}, "unknown type: int", "spec.a"),
        ({"a": "string | foo=bar"}, 'invalid marker key "foo": unknown marker: foo', "spec.a"),
        ({"a": 3}, "unexpected type: float64", "spec.a"),
    ],
    ids=["unknown-type", "unknown-marker", "not-a-string"],
)
def test_spec_schema_errors(spec: dict[str, Any], detail: str, path: str) -> None:
    err = build_error(rgd(spec=spec))
    assert isinstance(err, InstanceSchemaError)
    assert str(err) == (
        'failed to build resourcegraphdefinition "test-rgd": '
        f"failed to build OpenAPI schema for instance: field a: {detail}"
    )
    assert (err.rule, err.field_path) == ("G-04", path)


@pytest.mark.parametrize(
    ("spec", "types", "field"),
    [
        ({"imageID": 'string | default = "x"'}, None, "imageID"),
        ({"network": {"cidr": "string | foo=bar"}}, None, "network.cidr"),
        ({"owner": "Person"}, {"Person": {"age": "int"}}, "types.Person"),
    ],
    ids=["spaces-around-equals", "nested", "custom-type"],
)
def test_a_simpleschema_error_names_the_rgd_and_the_field(
    spec: dict[str, Any], types: dict[str, Any] | None, field: str
) -> None:  # issue 26 B3: upstream's prefix and field naming
    extra = {"types": types} if types else {}
    err = build_error(rgd(spec=spec, name="ami", **extra))
    assert isinstance(err, InstanceSchemaError)
    assert str(err).startswith(
        'failed to build resourcegraphdefinition "ami": '
        f"failed to build OpenAPI schema for instance: field {field}: "
    )


def test_a_bare_spec_has_no_rgd_to_name() -> None:
    spec = rgd(spec={"imageID": "int"})["spec"]
    err = build_error(spec)
    assert str(err) == (
        "failed to build OpenAPI schema for instance: field imageID: unknown type: int"
    )


# --- projected status ----------------------------------------------------------------------------


def test_status_schema_is_inferred_from_expression_types() -> None:
    graph = build(
        rgd(
            deployment(),
            CM,
            status={
                "name": "${cm.metadata.name}",
                "replicas": "${deployment.spec.replicas}",
                "ratio": "${schema.spec.ratio}",
                "ready": "${schema.spec.enabled}",
                "nested": {"count": "${size(cm.data)}"},
                "endpoints": ["${cm.metadata.name}", "${schema.spec.name}"],
                "url": "https://${cm.metadata.name}",
                "created": "${cm.metadata.creationTimestamp}",
                "labels": "${cm.metadata.labels}",
                "config": "${schema.spec.config}",
                "maybe": "${cm.data.?x}",
                "selector": "${deployment.spec.selector}",
            },
        )
    )
    properties = graph.instance.status_schema["properties"]
    assert properties["name"] == {"type": "string"}
    assert properties["replicas"] == {"type": "integer"}
    assert properties["ratio"] == {"type": "number"}
    assert properties["ready"] == {"type": "boolean"}
    assert properties["nested"] == {"type": "object", "properties": {"count": {"type": "integer"}}}
    assert properties["endpoints"] == {"type": "array", "items": {"type": "string"}}
    assert properties["url"] == {"type": "string"}
    assert properties["created"] == {"type": "string", "format": "date-time"}
    assert properties["labels"]["type"] == "object"
    assert properties["labels"]["additionalProperties"]["type"] == "string"
    assert properties["config"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert properties["maybe"] == {
        "x-kubernetes-preserve-unknown-fields": True,
        "description": "unknown CEL type: optional_type(string)",
    }
    assert set(properties["selector"]["properties"]) == {"matchLabels", "matchExpressions"}
    assert properties["state"] == {"type": "string"}
    assert properties["conditions"]["type"] == "array"


PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}


def _keywords(schema: Any, found: set[str] | None = None) -> set[str]:
    """Every schema keyword used anywhere below `schema` (property names excluded)."""
    found = set() if found is None else found
    if isinstance(schema, dict):
        for key, value in schema.items():
            found.add(key)
            if key == "properties":
                for sub in value.values():
                    _keywords(sub, found)
            elif key in ("items", "additionalProperties"):
                _keywords(value, found)
    return found


def test_a_copied_deployment_condition_list_is_typed_as_upstream_writes_it() -> None:
    """Issue 26 B4: no descriptions, no `required`, metav1.Time fields preserve-unknown."""
    graph = build(rgd(deployment(), status={"conditions_copy": "${deployment.status.conditions}"}))
    copied = graph.instance.status_schema["properties"]["conditions_copy"]
    assert copied == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "lastTransitionTime": PRESERVE,
                "lastUpdateTime": PRESERVE,
                "message": {"type": "string"},
                "reason": {"type": "string"},
                "status": {"type": "string"},
                "type": {"type": "string"},
            },
        },
    }


def test_a_copied_object_meta_has_no_descriptions_required_or_date_times() -> None:
    status = {"meta": "${cm.metadata}", "created": "${cm.metadata.creationTimestamp}"}
    graph = build(rgd(CM, status=status))
    properties = graph.instance.status_schema["properties"]
    meta = properties["meta"]
    assert meta["properties"]["creationTimestamp"] == PRESERVE
    assert meta["properties"]["deletionTimestamp"] == PRESERVE
    assert meta["properties"]["managedFields"]["items"]["properties"]["time"] == PRESERVE
    assert meta["properties"]["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }
    assert "description" not in _keywords(meta)
    assert "required" not in _keywords(meta)
    # A timestamp projected on its own keeps T-03's string of format date-time.
    assert properties["created"] == {"type": "string", "format": "date-time"}


def test_a_copied_instance_spec_keeps_property_names_that_look_like_keywords() -> None:
    spec = {
        "name": "string",
        "description": 'string | required=true description="what it is"',
        "required": "boolean",
    }
    graph = build(rgd(CM, spec=spec, status={"spec": "${schema.spec}"}))
    copied = graph.instance.status_schema["properties"]["spec"]
    assert copied == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "required": {"type": "boolean"},
        },
    }
    # The instance's own spec schema keeps its markers.
    assert graph.instance.spec_schema["required"] == ["description"]


def test_status_fields_are_relative_to_status() -> None:
    graph = build(rgd(CM, status={"a": {"b": "${cm.metadata.name}"}, "c": "${schema.spec.name}"}))
    assert [(f.path, f.kind) for f in graph.status_fields] == [
        (FieldPath(("a", "b")), "dynamic"),
        (FieldPath(("c",)), "static"),
    ]


def test_author_state_field_shapes_the_crd() -> None:
    graph = build(rgd(CM, status={"state": "${size(cm.data)}"}))
    assert graph.instance.status_schema["properties"]["state"] == {"type": "integer"}


@pytest.mark.parametrize(
    ("status", "detail", "rule"),
    [
        ({"a": "x", "b": {"c": 1}},
         "status fields without expressions are not supported: [status.a status.b.c]", "T-01"),
        ({"a": "${'x'}"}, "instance status field must refer to a resource or schema: status.a",
         "T-02"),
        ({"a": "${runtime.condition(schema, 'Ready').status}"},
         'status field "status.a": references unknown identifiers: [runtime]', "T-02"),
        ({"a": "${each.metadata.name}"},
         'status field "status.a": references unknown identifiers: [each]', "T-02"),
        ({"a": "${nope.x}"}, 'status field "status.a": references unknown identifiers: [nope]',
         "T-02"),
    ],
    ids=["literals", "constant", "runtime", "each", "unknown"],
)  # fmt: skip
def test_status_errors(status: dict[str, Any], detail: str, rule: str) -> None:
    err = build_error(rgd(CM, status=status))
    assert isinstance(err, StatusSchemaError)
    assert str(err) == f"failed to build instance status schema: {detail}"
    assert err.rule == rule


def test_an_unterminated_status_expression_is_a_build_error() -> None:  # V-06
    err = build_error(rgd(CM, status={"ok": "${cm.metadata.name}", "url": "https://${cm.x"}))
    assert isinstance(err, StatusSchemaError)
    assert str(err) == (
        'failed to build instance status schema: status.url: unterminated expression "${cm.x": '
        'missing closing "}"'
    )
    assert err.field_path == "status.url"


def test_status_string_template_parts_must_be_strings() -> None:
    err = build_error(rgd(CM, status={"a": "x-${schema.spec.replicas}"}))
    assert "found no matching overload for '_+_' applied to '(string, int)'" in str(err)
    assert (err.rule, err.field_path) == ("C-03", "status.a")


def test_omit_is_not_allowed_in_status() -> None:
    err = build_error(rgd(CM, status={"a": "${cm.data.?x.orValue(omit())}"}), omit_function=True)
    assert str(err) == (
        "failed to build instance status schema: omit() can only be used in resource template "
        "expressions"
    )


# --- author conditions ---------------------------------------------------------------------------


def new_condition(kind: str, status: str = "'True'") -> str:
    return f"runtime.newCondition({{type: '{kind}', status: {status}}})"


def test_conditions_compile_with_runtime_and_resources() -> None:
    graph = build(
        rgd(
            CM,
            status={
                "conditions": [
                    f"${{{new_condition('A')}}}",
                    f"${{[{new_condition('B', 'cm.data.x')}]}}",
                    "${runtime.condition(schema, 'Ready')}",
                    f"${{true ? {new_condition('C')} : {new_condition('C', repr('False'))}}}",
                    "${runtime.condition(cm, 'Anything')}",
                ]
            },
        )
    )
    assert [c.output_type.cel_name for c in graph.conditions] == [
        "kro.run.Condition",
        "list(kro.run.Condition)",
        "kro.run.Condition",
        "kro.run.Condition",
        "kro.run.Condition",
    ]
    assert graph.status_fields == ()
    assert graph.instance.status_schema["properties"]["conditions"]["type"] == "array"


@pytest.mark.parametrize(
    ("conditions", "detail", "rule"),
    [
        ("x", "status.conditions must be a list, got string", "K-01"),
        ([1], "status.conditions[0] must be a CEL expression string, got float64", "K-01"),
        (["x ${a}"], "status.conditions[0]: only standalone expressions are allowed", "K-01"),
        (["${'x'}"],
         'status.conditions[0]: condition expressions must return runtime.newCondition(...) or '
         'a list of them, got "string"', "K-01"),
        ([f"${{{new_condition('A')}}}", f"${{{new_condition('A', repr('False'))}}}"],
         'status.conditions[1]: condition type "A" is declared by more than one conditions '
         "entry", "K-03"),
        ([f"${{{new_condition('A', repr('Yes'))}}}"],
         "status.conditions[0]: runtime.newCondition: 'status' must be one of True, False, "
         "Unknown, got 'Yes'", "K-01"),
        ([f"${{{new_condition('')}}}"],
         "status.conditions[0]: runtime.newCondition: 'type' must not be empty", "K-01"),
        (["${runtime.newCondition({type: 'A', status: 'True', foo: 'x'})}"],
         'status.conditions[0]: runtime.newCondition: unknown key "foo"', "K-01"),
        ([f"${{{new_condition('A')}}}",
          f"${{{new_condition('B', 'runtime.condition(schema, ' + repr('A') + ').status')}}}"],
         "status.conditions[1]: custom conditions cannot reference each other", "C-33"),
        ([f"${{{new_condition('B', 'runtime.condition(schema, ' + repr('Nope') + ').status')}}}"],
         "status.conditions[0]: unknown condition type; only kro's built-in types (Ready, "
         "InstanceManaged, GraphResolved, ResourcesReady, WatchesHealthy) can be read from "
         "schema", "C-33"),
        ([f"${{{new_condition('B', 'foo.x')}}}"],
         "status.conditions[0]: references unknown identifiers: [foo]", "K-02"),
        ([f"${{{new_condition('B', 'each.x')}}}"],
         "status.conditions[0]: references unknown identifiers: [each]", "K-02"),
    ],
    ids=["not-a-list", "not-a-string", "not-standalone", "wrong-type", "duplicate-type",
         "bad-status", "empty-type", "unknown-key", "cross-reference", "unknown-builtin",
         "unknown-identifier", "each"],
)  # fmt: skip
def test_condition_errors(conditions: Any, detail: str, rule: str) -> None:
    err = build_error(rgd(CM, status={"conditions": conditions}))
    assert isinstance(err, ConditionsError)
    assert str(err) == f"failed to build instance status conditions: {detail}"
    assert err.rule == rule
    assert (err.field_path or "").startswith("status.conditions")


def test_built_in_types_may_be_read_even_when_the_author_declares_them() -> None:
    graph = build(
        rgd(
            CM,
            status={
                "conditions": [
                    f"${{{new_condition('Ready', 'runtime.condition(schema, ' + repr('Ready') + ').status')}}}"  # noqa: E501
                ]
            },
        )
    )
    assert graph.conditions  # the author condition is accepted


# --- the CRD -------------------------------------------------------------------------------------


def test_instance_and_crd() -> None:
    graph = build(rgd(kind="WebApp", group="apps.example.com", shortNames=["wa"]))
    instance = graph.instance
    assert (instance.group, instance.version, instance.kind, instance.plural) == (
        "apps.example.com",
        "v1alpha1",
        "WebApp",
        "webapps",
    )
    assert instance.api_version == "apps.example.com/v1alpha1"
    assert instance.crd["metadata"] == {"name": "webapps.apps.example.com"}
    assert instance.crd["spec"]["names"]["shortNames"] == ["wa"]
    version = instance.crd["spec"]["versions"][0]
    openapi = version["schema"]["openAPIV3Schema"]
    assert openapi["properties"]["spec"] == instance.spec_schema
    assert openapi["properties"]["status"] == instance.status_schema
    assert instance.spec_schema["properties"]["replicas"] == {"type": "integer", "default": 1}
