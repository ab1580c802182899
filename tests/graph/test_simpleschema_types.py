"""SimpleSchema type grammar: S-01..S-09 and S-29 (reference §1.C)."""

from typing import Any

import pytest
import yaml

from kro.graph import simpleschema
from kro.graph.errors import SchemaError, TypeSyntaxError
from kro.graph.simpleschema import (
    ArrayType,
    AtomicType,
    CustomType,
    MapType,
    custom_type_names,
    parse_field,
    parse_type,
    to_openapi_spec,
)


def field_schema(type_text: str, types: dict[str, Any] | None = None) -> Any:
    return to_openapi_spec({"f": type_text}, types)["properties"]["f"]


STRING = {"type": "string"}
INTEGER = {"type": "integer"}


@pytest.mark.parametrize(
    ("type_text", "expected"),
    [
        pytest.param("string", STRING, id="S-01 string"),
        pytest.param("integer", INTEGER, id="S-02 integer"),
        pytest.param("boolean", {"type": "boolean"}, id="S-03 boolean"),
        pytest.param("float", {"type": "number"}, id="S-04 float is number"),
        pytest.param(
            "object",
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            id="S-05 object preserves unknown fields",
        ),
        pytest.param("[]string", {"type": "array", "items": STRING}, id="S-06 array"),
        pytest.param(
            "[][]integer",
            {"type": "array", "items": {"type": "array", "items": INTEGER}},
            id="S-06 array of arrays",
        ),
        pytest.param(
            "[]map[string]string",
            {"type": "array", "items": {"type": "object", "additionalProperties": STRING}},
            id="S-06 array of maps",
        ),
        pytest.param("[] string", {"type": "array", "items": STRING}, id="S-06 space after []"),
        pytest.param(
            "  []string  ", {"type": "array", "items": STRING}, id="S-06 surrounding space"
        ),
        pytest.param(
            "map[string]string",
            {"type": "object", "additionalProperties": STRING},
            id="S-07 map",
        ),
        pytest.param(
            "map[string][]string",
            {"type": "object", "additionalProperties": {"type": "array", "items": STRING}},
            id="S-07 map of arrays",
        ),
        pytest.param(
            "map[string]map[string]string",
            {
                "type": "object",
                "additionalProperties": {"type": "object", "additionalProperties": STRING},
            },
            id="S-07 map of maps",
        ),
        pytest.param(
            "map[string]object",
            {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                },
            },
            id="S-07 map of objects",
        ),
    ],
)
def test_type_expression_becomes_openapi(type_text: str, expected: Any) -> None:
    assert field_schema(type_text) == expected


@pytest.mark.parametrize(
    ("type_text", "message"),
    [
        pytest.param("int", "unknown type: int", id="S-02 int is not a keyword"),
        pytest.param("bool", "unknown type: bool", id="S-02 bool is not a keyword"),
        pytest.param("number", "unknown type: number", id="S-04 number is not a keyword"),
        pytest.param("array", "unknown type: array", id="S-02 array is not a keyword"),
        pytest.param("String", "unknown type: String", id="keywords are case-sensitive"),
        pytest.param("", "unknown type: ", id="empty type"),
        pytest.param("[]", "empty slice element type", id="S-06 bare []"),
        pytest.param("[]  ", "empty slice element type", id="S-06 [] then spaces"),
        pytest.param("[][]", "empty slice element type", id="S-06 nested bare []"),
        pytest.param("[]int", "unknown type: int", id="S-06 unknown element"),
        pytest.param("map[integer]string", "map key must be string", id="S-07 integer key"),
        pytest.param("map[]string", "map key must be string", id="S-07 empty key"),
        pytest.param("map[string]", "map value type is required", id="S-07 no value type"),
        pytest.param("map[string]  ", "map value type is required", id="S-07 blank value type"),
        pytest.param(
            "map[string",
            "invalid map type map[string: missing closing bracket",
            id="S-07 unclosed key bracket",
        ),
        pytest.param("[]" * 17 + "string", "type nesting too deep (max 16)", id="S-08 17 arrays"),
        pytest.param(
            "map[string]" * 17 + "string",
            "type nesting too deep (max 16)",
            id="S-08 17 maps",
        ),
        pytest.param(
            "[]map[string]" * 9 + "string",
            "type nesting too deep (max 16)",
            id="S-08 mixed 18 levels",
        ),
    ],
)
def test_bad_type_expression_is_rejected(type_text: str, message: str) -> None:
    with pytest.raises(TypeSyntaxError) as info:
        field_schema(type_text)
    assert str(info.value) == message
    assert info.value.field_path == "spec.f"


def test_sixteen_levels_of_nesting_are_allowed() -> None:
    schema = field_schema("[]" * 16 + "string")
    for _ in range(16):
        assert schema["type"] == "array"
        schema = schema["items"]
    assert schema == STRING


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("string", AtomicType("string"), id="atomic"),
        pytest.param("Person", CustomType("Person"), id="custom"),
        pytest.param("[]Person", ArrayType(CustomType("Person")), id="array"),
        pytest.param(
            "map[string][]float",
            MapType(ArrayType(AtomicType("float"))),
            id="map of arrays",
        ),
        pytest.param("map[ string ]string", MapType(AtomicType("string")), id="spaced key"),
    ],
)
def test_parse_type_builds_the_expression_tree(text: str, expected: Any) -> None:
    assert parse_type(text) == expected


@pytest.mark.parametrize(
    ("text", "names"),
    [
        pytest.param("string", set(), id="atomic"),
        pytest.param("Person", {"Person"}, id="custom"),
        pytest.param("map[string][]Person", {"Person"}, id="wrapped custom"),
    ],
)
def test_custom_type_names(text: str, names: set[str]) -> None:
    assert custom_type_names(parse_type(text)) == names


def test_type_is_text_before_the_first_bar() -> None:
    spec = parse_field("  []string   |  minItems=1 ")
    assert spec.type == ArrayType(AtomicType("string"))
    assert [(m.key.value, m.value) for m in spec.markers] == [("minItems", "1")]


def test_field_without_bar_has_no_markers() -> None:
    assert parse_field("integer").markers == ()


def test_nested_map_is_an_object_with_properties() -> None:  # S-09
    schema = to_openapi_spec({"ingress": {"enabled": "boolean", "host": "string"}})
    assert schema["properties"]["ingress"] == {
        "type": "object",
        "properties": {"enabled": {"type": "boolean"}, "host": STRING},
    }


def test_empty_spec_is_an_empty_object() -> None:
    assert to_openapi_spec({}) == {"type": "object"}
    assert to_openapi_spec(None) == {"type": "object"}


@pytest.mark.parametrize(
    ("value", "go_type"),
    [
        pytest.param(3, "float64", id="integer"),
        pytest.param(1.5, "float64", id="float"),
        pytest.param(True, "bool", id="bool"),
        pytest.param(["a"], "[]interface {}", id="list"),
        pytest.param(None, "<nil>", id="null"),
    ],
)
def test_non_string_leaf_is_unexpected(value: Any, go_type: str) -> None:
    with pytest.raises(SchemaError) as info:
        to_openapi_spec({"nested": {"f": value}})
    assert str(info.value) == f"unexpected type: {go_type}"
    assert info.value.field_path == "spec.nested.f"


def test_spec_that_is_not_a_map_is_unexpected() -> None:
    with pytest.raises(SchemaError, match=r"^unexpected type: string$"):
        to_openapi_spec("string")


def test_absurdly_deep_objects_fail_cleanly() -> None:
    spec: dict[str, Any] = {"leaf": "string"}
    for _ in range(200):
        spec = {"n": spec}
    with pytest.raises(SchemaError, match="schema nesting too deep"):
        to_openapi_spec(spec)


# S-29: YAML parsing caveats of the type strings themselves.


def test_unquoted_array_type_is_not_valid_yaml() -> None:  # S-29
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load("tags: []string")


def test_quoted_array_type_and_unquoted_map_type_parse() -> None:  # S-29
    spec = yaml.safe_load("tags: '[]string'\nlabels: map[string]string\n")
    schema = to_openapi_spec(spec)
    assert schema["properties"]["tags"] == {"type": "array", "items": STRING}
    assert schema["properties"]["labels"] == {"type": "object", "additionalProperties": STRING}


def test_yaml_flow_sequence_value_is_unexpected_type() -> None:  # S-29
    spec = yaml.safe_load("tags: []")
    with pytest.raises(SchemaError, match=r"^unexpected type: \[\]interface \{\}$"):
        to_openapi_spec(spec)


def isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_public_names_are_exported_sorted() -> None:
    assert simpleschema.__all__ == sorted(simpleschema.__all__, key=isort_key)
    for name in simpleschema.__all__:
        assert hasattr(simpleschema, name)
