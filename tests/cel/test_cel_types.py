"""Typed declarations from OpenAPI schemas, and output types (kro.cel.types)."""

from __future__ import annotations

from typing import Any

import pytest

from kro.cel import CelCompileError, CelDeclarationError, CelEnvironment, CelType, Value
from kro.cel.types import DYN, INT, STRING, list_of, map_of

META: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": "string", "format": "date-time"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
CONDITION: dict[str, Any] = {
    "type": "object",
    "properties": {"type": {"type": "string"}, "status": {"type": "string"}},
}
DEPLOYMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": META,
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "paused": {"type": "boolean"},
                "ratio": {"type": "number"},
                "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "port": {"x-kubernetes-int-or-string": True},
                "matrix": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": "integer"}},
                },
                "byName": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
                "secret": {"type": "string", "format": "byte"},
                "timeout": {"type": "string", "format": "duration"},
                "odd": {"type": "object", "properties": {"a-b": {"type": "string"}}},
                "anything": {},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "availableReplicas": {"type": "integer"},
                "conditions": {"type": "array", "items": CONDITION},
            },
        },
    },
}
ENV = CelEnvironment(declarations={"deployment": DEPLOYMENT, "items": {
    "type": "array", "items": DEPLOYMENT}})  # fmt: skip

OUTPUT_TYPES = [
    ("deployment.spec.replicas", "int"),
    ("deployment.spec.paused", "bool"),
    ("deployment.spec.ratio", "double"),
    ("deployment.metadata.name", "string"),
    ("deployment.metadata.creationTimestamp", "timestamp"),
    ("deployment.spec.timeout", "duration"),
    ("deployment.spec.secret", "bytes"),
    ("deployment.metadata.labels", "map(string, string)"),
    ("deployment.spec.template", "dyn"),
    ("deployment.spec.template.anything.goes", "dyn"),
    ("deployment.spec.port", "dyn"),
    ("deployment.spec.anything", "dyn"),
    ("deployment.spec.matrix", "list(list(dyn))"),
    ("deployment.spec.byName", "map(string, list(dyn))"),
    ("deployment.spec.odd.a__dash__b", "string"),
    ("deployment.status.conditions.map(c, c.type)", "list(string)"),
    ("items.map(i, i.spec.replicas)", "list(int)"),
    ("deployment.?spec.?replicas", "optional_type(int)"),
    ("[1, 2]", "list(int)"),
    ('{"a": 1}', "map(string, int)"),
    ("null", "null_type"),
    ('quantity("1")', "kubernetes.Quantity"),
]


@pytest.mark.parametrize(("expression", "name"), OUTPUT_TYPES, ids=[o[0] for o in OUTPUT_TYPES])
def test_output_type_name(expression: str, name: str) -> None:
    assert ENV.compile(expression).output_type.cel_name == name


COMPILE_ERRORS = [
    ("deployment.spec.replicsa", "undefined field 'replicsa'"),
    (
        'deployment.spec.replicas + "x"',
        "found no matching overload for '_+_' applied to '(int, string)'",
    ),
    ("deployment.status.conditions[0].typo", "undefined field 'typo'"),
    ('"a-" + deployment.spec.replicas', "applied to '(string, int)'"),
    ("items[0].spec.nope", "undefined field 'nope'"),
]


@pytest.mark.parametrize(
    ("expression", "message"), COMPILE_ERRORS, ids=[c[0] for c in COMPILE_ERRORS]
)
def test_type_errors_fail_at_compile(expression: str, message: str) -> None:
    with pytest.raises(CelCompileError) as info:
        ENV.compile(expression)
    assert message in info.value.message
    assert info.value.expression == expression


def test_reserved_word_field_names_are_selectable() -> None:
    assert ENV.compile("deployment.metadata.namespace").output_type == STRING


def test_object_output_carries_its_schema() -> None:
    out = ENV.compile("deployment.status.conditions").output_type
    assert out.kind == "list"
    assert out.params[0].kind == "object"
    assert out.to_openapi() == {"type": "array", "items": CONDITION}


OPENAPI = [
    (CelType("bool"), {"type": "boolean"}),
    (INT, {"type": "integer"}),
    (CelType("uint"), {"type": "integer"}),
    (CelType("double"), {"type": "number"}),
    (STRING, {"type": "string"}),
    (CelType("bytes"), {"type": "string", "format": "byte"}),
    (CelType("timestamp"), {"type": "string", "format": "date-time"}),
    (DYN, {"x-kubernetes-preserve-unknown-fields": True}),
    (CelType("null"), {"x-kubernetes-preserve-unknown-fields": True}),
    (list_of(INT), {"type": "array", "items": {"type": "integer"}}),
    (map_of(STRING, STRING), {"type": "object", "additionalProperties": {"type": "string"}}),
    (
        CelType("optional", (STRING,)),
        {
            "x-kubernetes-preserve-unknown-fields": True,
            "description": "unknown CEL type: optional_type(string)",
        },
    ),
]


@pytest.mark.parametrize(("cel_type", "schema"), OPENAPI, ids=[o[0].cel_name for o in OPENAPI])
def test_to_openapi(cel_type: CelType, schema: dict[str, Any]) -> None:
    assert cel_type.to_openapi() == schema


def test_declaring_a_cel_type() -> None:
    env = CelEnvironment(declarations={"n": INT, "names": list_of(STRING)})
    assert env.compile("n + size(names)").output_type == INT
    with pytest.raises(CelCompileError):
        env.compile('n + "x"')


def test_bad_variable_name() -> None:
    with pytest.raises(CelDeclarationError):
        CelEnvironment().declare("not-an-identifier")


def test_recursive_schema_maps_to_one_message() -> None:
    node: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}
    node["properties"]["children"] = {"type": "array", "items": node}
    env = CelEnvironment(declarations={"tree": node})
    assert env.compile("tree.children[0].children[0].name").output_type == STRING


def test_extend_adds_variables_without_touching_the_parent() -> None:
    child = ENV.extend({"each": CONDITION})
    assert child.compile("each.status == deployment.metadata.name").output_type.cel_name == "bool"
    with pytest.raises(CelCompileError, match="undeclared reference to 'each"):
        ENV.compile("each.status")


def test_declare_after_compile_rebuilds() -> None:
    env = CelEnvironment(declarations={"a": INT})
    env.compile("a + 1")
    env.declare("b", STRING)
    assert env.compile("string(a) + b").output_type == STRING


def test_typed_values_evaluate_on_plain_dicts() -> None:
    activation = ENV.bind({"deployment": {"spec": {"replicas": 2}}})
    assert ENV.compile("deployment.spec.replicas * 2").evaluate(activation) == Value(4)
