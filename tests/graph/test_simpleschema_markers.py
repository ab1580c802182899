"""SimpleSchema markers: tokenizer S-27 and semantics S-14..S-26 (reference §1.C)."""

from typing import Any

import pytest

from kro.graph.errors import MarkerError
from kro.graph.simpleschema import MarkerKey, parse_markers, to_openapi_spec


def tokens(text: str) -> list[tuple[str, str]]:
    return [(m.key.value, m.value) for m in parse_markers(text)]


def field_schema(text: str, types: dict[str, Any] | None = None) -> Any:
    return to_openapi_spec({"f": text}, types)["properties"]["f"]


# --- S-27 tokenizer ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("required=true", [("required", "true")], id="S-27 one marker"),
        pytest.param(
            "  required=true    default=3  ",
            [("required", "true"), ("default", "3")],
            id="S-27 whitespace separates",
        ),
        pytest.param(
            "required=true\tdefault=3", [("required", "true"), ("default", "3")], id="S-27 tab"
        ),
        pytest.param(
            'description="1-10 unique tags"',
            [("description", "1-10 unique tags")],
            id="S-27 quoted value keeps spaces",
        ),
        pytest.param(
            'description="say \\"hi\\""',
            [("description", 'say "hi"')],
            id="S-27 escaped quote inside quotes",
        ),
        pytest.param(
            'description="a\\\\b"', [("description", "a\\b")], id="S-27 escaped backslash"
        ),
        pytest.param(
            'description="a\\nb"', [("description", "a\\nb")], id="S-27 other escapes verbatim"
        ),
        pytest.param(
            'default={"a": "b"}', [("default", '{"a": "b"}')], id="S-27 JSON object with space"
        ),
        pytest.param('default=["a", "b c"]', [("default", '["a", "b c"]')], id="S-27 JSON array"),
        pytest.param(
            'default={"a": [1, {"b": "}"}]}',
            [("default", '{"a": [1, {"b": "}"}]}')],
            id="S-27 nested brackets and quoted brace",
        ),
        pytest.param(
            'validation="self == oldSelf"',
            [("validation", "self == oldSelf")],
            id="S-27 = inside quotes",
        ),
        pytest.param("default=a=b", [("default", "a=b")], id="S-27 second = is value"),
        pytest.param("default=", [("default", "")], id="S-27 empty value"),
        pytest.param('default=""', [("default", "")], id="S-27 empty quoted value"),
        pytest.param(
            "listMapKey=name listMapKey=port",
            [("listMapKey", "name"), ("listMapKey", "port")],
            id="S-26 repeatable",
        ),
    ],
)
def test_markers_tokenize(text: str, expected: list[tuple[str, str]]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "marker key '' without a value", id="S-27 empty section"),
        pytest.param("   ", "marker key '' without a value", id="S-27 blank section"),
        pytest.param("required", "marker key 'required' without a value", id="S-27 bare word"),
        pytest.param(
            "required=true optional",
            "marker key 'optional' without a value",
            id="S-27 trailing bare word",
        ),
        pytest.param("default = 3", "marker key 'default' without a value", id="S-27 spaced ="),
        pytest.param(
            "required=true | default=3",
            "marker key '|' without a value",
            id="S-27 second bar separator",
        ),
        pytest.param("=v", "empty marker key", id="S-27 empty key"),
        pytest.param(
            "foo=bar", 'invalid marker key "foo": unknown marker: foo', id="S-27 unknown key"
        ),
        pytest.param(
            "Required=true",
            'invalid marker key "Required": unknown marker: Required',
            id="S-27 keys are case-sensitive",
        ),
        pytest.param('description="open', "unclosed quote", id="S-27 unclosed quote"),
        pytest.param('default={"a": 1', "unclosed bracket/brace", id="S-27 unclosed brace"),
        pytest.param("default=[1, 2", "unclosed bracket/brace", id="S-27 unclosed bracket"),
        pytest.param("default=1]", "unmatched closing bracket/brace", id="S-27 stray ]"),
        pytest.param("default=}", "unmatched closing bracket/brace", id="S-27 stray }"),
    ],
)
def test_malformed_markers_are_rejected(text: str, message: str) -> None:
    with pytest.raises(MarkerError) as info:
        parse_markers(text)
    assert str(info.value) == message


def test_empty_marker_section_after_bar_is_an_error() -> None:  # N-16
    with pytest.raises(MarkerError, match=r"^marker key '' without a value$"):
        field_schema("string |")


def test_every_marker_key_is_known() -> None:
    assert {k.value for k in MarkerKey} == {
        "required",
        "default",
        "description",
        "minimum",
        "maximum",
        "enum",
        "immutable",
        "validation",
        "pattern",
        "minLength",
        "maxLength",
        "uniqueItems",
        "minItems",
        "maxItems",
        "listType",
        "listMapKey",
    }


# --- S-14..S-26 semantics ---------------------------------------------------------------------

IMMUTABLE = {"rule": "self == oldSelf", "message": "field is immutable"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('string | default="nginx"', {"default": "nginx"}, id="S-15 string"),
        pytest.param("string | default=nginx", {"default": "nginx"}, id="S-15 unquoted string"),
        pytest.param("string | default=100", {"default": "100"}, id="S-15 digits as string"),
        pytest.param(
            'string | default="a\\\\nb"',
            {"default": "a\nb"},
            id="S-15 string wrapped without escaping",
        ),
        pytest.param("integer | default=3", {"default": 3}, id="S-15 integer"),
        pytest.param("integer | default=-3", {"default": -3}, id="S-15 negative integer"),
        pytest.param("integer | default=+3", {"default": 3}, id="S-15 plus-signed integer"),
        pytest.param("float | default=1.5", {"default": 1.5}, id="S-15 float"),
        pytest.param("float | default=2", {"default": 2}, id="S-15 float from integer"),
        pytest.param("float | default=.5", {"default": 0.5}, id="S-15 float Go syntax"),
        pytest.param("boolean | default=true", {"default": True}, id="S-15 boolean"),
        pytest.param("boolean | default=F", {"default": False}, id="S-15 ParseBool spelling"),
        pytest.param("[]integer | default=[80]", {"default": [80]}, id="S-15 array JSON"),
        pytest.param(
            'map[string]string | default={"a":"b"}', {"default": {"a": "b"}}, id="S-15 map JSON"
        ),
        pytest.param('object | default={"a": 1}', {"default": {"a": 1}}, id="S-15 object JSON"),
        pytest.param(
            'string | description="The name"', {"description": "The name"}, id="S-16 description"
        ),
        pytest.param(
            "integer | minimum=1 maximum=5", {"minimum": 1.0, "maximum": 5.0}, id="S-17 bounds"
        ),
        pytest.param("float | minimum=-0.5", {"minimum": -0.5}, id="S-17 float bound"),
        pytest.param("string | minimum=1", {"minimum": 1.0}, id="S-17 bounds are not type-checked"),
        pytest.param(
            'string | enum="a, b,c"', {"enum": ["a", "b", "c"]}, id="S-18 string enum trimmed"
        ),
        pytest.param("integer | enum=1,2,3", {"enum": [1, 2, 3]}, id="S-18 integer enum"),
        pytest.param(
            "string | immutable=true",
            {"x-kubernetes-validations": [IMMUTABLE]},
            id="S-19 immutable",
        ),
        pytest.param("string | immutable=false", {}, id="S-19 immutable false is a no-op"),
        pytest.param(
            'string | validation="self.startsWith(\\"a\\")"',
            {
                "x-kubernetes-validations": [
                    {"rule": 'self.startsWith("a")', "message": "validation failed"}
                ]
            },
            id="S-20 validation",
        ),
        pytest.param(
            'string | immutable=true validation="size(self) > 2"',
            {
                "x-kubernetes-validations": [
                    IMMUTABLE,
                    {"rule": "size(self) > 2", "message": "validation failed"},
                ]
            },
            id="S-19 S-20 rules append in marker order",
        ),
        pytest.param(
            'string | pattern="^[a-z]([-a-z0-9]*[a-z0-9])?$"',
            {"pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$"},
            id="S-21 pattern",
        ),
        pytest.param(
            "string | minLength=1 maxLength=63",
            {"minLength": 1, "maxLength": 63},
            id="S-22 lengths",
        ),
        pytest.param(
            "[]string | uniqueItems=true",
            {"x-kubernetes-list-type": "set"},
            id="S-23 uniqueItems is a set list",
        ),
        pytest.param("[]string | uniqueItems=false", {}, id="S-23 uniqueItems false"),
        pytest.param(
            "[]string | minItems=1 maxItems=10", {"minItems": 1, "maxItems": 10}, id="S-24 items"
        ),
        pytest.param(
            "[]string | listType=atomic", {"x-kubernetes-list-type": "atomic"}, id="S-25 atomic"
        ),
        pytest.param(
            "[]string | listType=set uniqueItems=true",
            {"x-kubernetes-list-type": "set"},
            id="S-25 set and unique agree",
        ),
        pytest.param(
            "[]string | uniqueItems=true listType=set",
            {"x-kubernetes-list-type": "set"},
            id="S-23 unique then set agree",
        ),
        pytest.param(
            "[]object | listType=map listMapKey=name listMapKey=port",
            {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"]},
            id="S-26 list map keys",
        ),
        pytest.param(
            "[]object | listMapKey=name listType=map",
            {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
            id="S-26 key before listType",
        ),
    ],
)
def test_marker_sets_schema_keywords(text: str, expected: dict[str, Any]) -> None:
    schema = field_schema(text)
    type_keys = {"type", "items", "additionalProperties", "x-kubernetes-preserve-unknown-fields"}
    assert {k: v for k, v in schema.items() if k not in type_keys} == expected


def test_unique_tags_example_from_reference() -> None:  # S-23, S-24, S-16
    schema = field_schema('[]string | uniqueItems=true minItems=1 maxItems=10 description="1-10"')
    assert schema == {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
        "minItems": 1,
        "maxItems": 10,
        "description": "1-10",
    }
    assert "uniqueItems" not in schema  # N-16: structural schemas forbid it


@pytest.mark.parametrize(
    ("text", "required"),
    [
        pytest.param("string | required=true", True, id="S-14 true"),
        pytest.param("string | required=1", True, id="S-14 ParseBool 1"),
        pytest.param("string | required=TRUE", True, id="S-14 ParseBool TRUE"),
        pytest.param("string | required=t", True, id="S-14 ParseBool t"),
        pytest.param("string | required=false", False, id="S-14 false"),
        pytest.param("string | required=0", False, id="S-14 ParseBool 0"),
        pytest.param("string", False, id="S-14 default not required"),
    ],
)
def test_required_marker_adds_to_parent(text: str, required: bool) -> None:
    schema = to_openapi_spec({"f": text})
    assert schema.get("required", []) == (["f"] if required else [])


E_PARSE_BOOL = 'strconv.ParseBool: parsing "yes": invalid syntax'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "string | required=yes",
            f"failed to parse required marker value: {E_PARSE_BOOL}",
            id="S-14 bad bool",
        ),
        pytest.param(
            "string | required=tRuE",
            'failed to parse required marker value: strconv.ParseBool: parsing "tRuE": '
            "invalid syntax",
            id="S-14 mixed case",
        ),
        pytest.param(
            "integer | default=x", "default value must be a valid integer, got: x", id="S-15 int"
        ),
        pytest.param(
            "integer | default=1.5",
            "default value must be a valid integer, got: 1.5",
            id="S-15 int from float",
        ),
        pytest.param(
            "integer | default=1_000",
            "default value must be a valid integer, got: 1_000",
            id="S-15 int underscores",
        ),
        pytest.param(
            "integer | default=9223372036854775808",
            "default value must be a valid integer, got: 9223372036854775808",
            id="S-15 int64 overflow",
        ),
        pytest.param(
            "float | default=abc", "default value must be a valid float, got: abc", id="S-15 float"
        ),
        pytest.param(
            "float | default=inf",
            "default value must be a valid float, got: inf",
            id="S-15 float not JSON",
        ),
        pytest.param(
            "boolean | default=yes",
            "default value must be a valid boolean, got: yes",
            id="S-15 bool",
        ),
        pytest.param(
            "[]integer | default=[80",
            "unclosed bracket/brace",
            id="S-15 array unclosed",
        ),
        pytest.param(
            "[]integer | default=[80,]",
            "default value must be valid JSON, got: [80,]",
            id="S-15 array bad JSON",
        ),
        pytest.param(
            "object | default=NaN",
            "default value must be valid JSON, got: NaN",
            id="S-15 JSON constant",
        ),
        pytest.param(
            'string | default="say \\"hi\\""',
            'default value must be a valid string, got: say "hi"',
            id="S-15 string quote breaks JSON",
        ),
        pytest.param(
            "integer | minimum=x",
            'failed to parse minimum enum value: strconv.ParseFloat: parsing "x": invalid syntax',
            id="S-17 minimum (sic)",
        ),
        pytest.param(
            "integer | maximum=1e400",
            "failed to parse maximum enum value: strconv.ParseFloat: parsing "
            '"1e400": value out of range',
            id="S-17 maximum out of range",
        ),
        pytest.param(
            'string | enum="a,,b"', "empty enum values are not allowed", id="S-18 empty value"
        ),
        pytest.param('string | enum=""', "empty enum values are not allowed", id="S-18 empty enum"),
        pytest.param(
            "boolean | enum=true,false",
            "enum values only supported for string and integer types, got type: boolean",
            id="S-18 boolean enum",
        ),
        pytest.param(
            "float | enum=1.5",
            "enum values only supported for string and integer types, got type: number",
            id="S-18 float enum",
        ),
        pytest.param(
            "[]string | enum=a",
            "enum values only supported for string and integer types, got type: array",
            id="S-18 array enum",
        ),
        pytest.param(
            "integer | enum=1,x",
            'failed to parse integer enum value: strconv.ParseInt: parsing "x": invalid syntax',
            id="S-18 integer enum value",
        ),
        pytest.param(
            "string | immutable=maybe",
            'failed to parse immutable marker value: strconv.ParseBool: parsing "maybe": '
            "invalid syntax",
            id="S-19 bad bool",
        ),
        pytest.param('string | validation=""', "validation failed", id="S-20 empty"),
        pytest.param('string | validation="  "', "validation failed", id="S-20 blank"),
        pytest.param(
            'string | pattern=""', "pattern marker value cannot be empty", id="S-21 empty"
        ),
        pytest.param(
            'integer | pattern="^a$"',
            "pattern marker is only valid for string types",
            id="S-21 not a string",
        ),
        pytest.param(
            'string | pattern="(a"',
            "invalid pattern regex: error parsing regexp: missing closing ): `(a`",
            id="S-21 bad regex",
        ),
        pytest.param(
            'string | pattern="a(?=b)"',
            "invalid pattern regex: error parsing regexp: invalid or unsupported Perl syntax: "
            "`(?=`",
            id="S-21 lookahead is not RE2",
        ),
        pytest.param(
            "integer | minLength=1",
            "minLength marker is only valid for string types, got type: integer",
            id="S-22 minLength type",
        ),
        pytest.param(
            "[]string | maxLength=1",
            "maxLength marker is only valid for string types, got type: array",
            id="S-22 maxLength type",
        ),
        pytest.param(
            "string | minLength=x",
            'failed to parse minLength value: strconv.ParseInt: parsing "x": invalid syntax',
            id="S-22 bad int",
        ),
        pytest.param(
            "string | uniqueItems=true",
            "uniqueItems marker is only valid for array types",
            id="S-23 not an array",
        ),
        pytest.param(
            "[]string | listType=map uniqueItems=true",
            "cannot set unique when listType is set to map",
            id="S-23 conflicts with map",
        ),
        pytest.param(
            "[]string | listType=atomic uniqueItems=true",
            "cannot set unique when listType is set to atomic",
            id="S-23 conflicts with atomic",
        ),
        pytest.param(
            "[]string | uniqueItems=1x",
            'failed to parse uniqueItems marker value: strconv.ParseBool: parsing "1x": '
            "invalid syntax",
            id="S-23 bad bool",
        ),
        pytest.param(
            "string | minItems=1",
            "minItems marker is only valid for array types",
            id="S-24 minItems type",
        ),
        pytest.param(
            "map[string]string | maxItems=1",
            "maxItems marker is only valid for array types",
            id="S-24 maxItems on a map",
        ),
        pytest.param(
            "[]string | maxItems=ten",
            'failed to parse maxItems value: strconv.ParseInt: parsing "ten": invalid syntax',
            id="S-24 bad int",
        ),
        pytest.param(
            "[]string | listType=list",
            "unsupported value for listType list, needs to be one of atomic, set, or map",
            id="S-25 bad value",
        ),
        pytest.param(
            "[]string | uniqueItems=true listType=map",
            "listType attempting to overwrite set type of x-kubernetes-list-type with map",
            id="S-25 overwrite set",
        ),
        pytest.param(
            "string | listType=set",
            "listType marker is only valid for array types",
            id="S-25 not an array",
        ),
        pytest.param(
            "[]object | listMapKey=name",
            "listMapKey set while listType is unset, listType must be set to map",
            id="S-26 listType unset",
        ),
        pytest.param(
            "[]object | listType=set listMapKey=name",
            "listMapKey set while listType is set to set, listType must be set to map",
            id="S-26 listType set",
        ),
        pytest.param(
            "[]object | listType=map listMapKey=name listMapKey=name",
            "duplicate listMapKey marker, value name",
            id="S-26 duplicate key",
        ),
        pytest.param(
            "object | listMapKey=name",
            "listMapKey marker is only valid for array types",
            id="S-26 not an array",
        ),
    ],
)
def test_bad_marker_is_rejected(text: str, message: str) -> None:
    with pytest.raises(MarkerError) as info:
        field_schema(text)
    assert str(info.value) == message
    assert info.value.field_path == "spec.f"


def test_marker_error_names_the_marker() -> None:
    with pytest.raises(MarkerError) as info:
        field_schema("integer | minLength=1")
    assert info.value.marker == "minLength"


def test_type_markers_check_the_resolved_custom_type() -> None:
    types = {"Name": "string | minLength=1", "Ports": "[]integer"}
    assert field_schema('Name | pattern="^a"', types) == {
        "type": "string",
        "minLength": 1,
        "pattern": "^a",
    }
    assert field_schema("Ports | uniqueItems=true", types)["x-kubernetes-list-type"] == "set"
    with pytest.raises(MarkerError, match="got type: array"):
        field_schema("Ports | minLength=1", types)


def test_later_default_and_description_win() -> None:
    schema = field_schema('integer | default=1 default=2 description="a" description="b"')
    assert schema["default"] == 2
    assert schema["description"] == "b"
