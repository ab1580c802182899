"""SimpleSchema assembly: S-10..S-13, custom types and realistic RGD schemas (reference §1.C)."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.graph.errors import SchemaError, TypeCycleError, TypeSyntaxError
from kro.graph.simpleschema import build_order, to_openapi_spec, type_dependencies

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

STRING = {"type": "string"}
INTEGER = {"type": "integer"}


# --- S-10 object auto-default ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "has_default"),
    [
        pytest.param({"a": "string"}, False, id="S-10 no child default"),
        pytest.param({"a": "string | default=x"}, True, id="S-10 child default"),
        pytest.param(
            {"a": "string | default=x", "b": "string | required=true"},
            False,
            id="S-10 required child blocks it",
        ),
        pytest.param(
            {"a": "string | default=x", "b": "string | required=false"},
            True,
            id="S-10 required=false does not block",
        ),
        pytest.param(
            {"inner": {"a": "integer | default=1"}}, True, id="S-10 cascades from nested default"
        ),
        pytest.param(
            {"inner": {"a": "integer | default=1", "b": "integer | required=true"}},
            False,
            id="S-10 nested object without default does not cascade",
        ),
    ],
)
def test_object_gets_empty_default_iff_no_required_and_a_child_default(
    spec: dict[str, Any], has_default: bool
) -> None:
    schema = to_openapi_spec(spec)
    assert ("default" in schema) is has_default
    if has_default:
        assert schema["default"] == {}


def test_nested_defaults_materialise_at_every_level() -> None:  # S-10
    schema = to_openapi_spec(
        {"ingress": {"enabled": "boolean | default=false", "tls": {"secret": "string | default=s"}}}
    )
    ingress = schema["properties"]["ingress"]
    assert schema["default"] == {}
    assert ingress["default"] == {}
    assert ingress["properties"]["tls"]["default"] == {}


def test_custom_struct_type_gets_auto_default() -> None:  # S-10
    schema = to_openapi_spec({"p": "Probe"}, {"Probe": {"port": "integer | default=8080"}})
    assert schema["properties"]["p"] == {
        "type": "object",
        "properties": {"port": {"type": "integer", "default": 8080}},
        "default": {},
    }
    assert schema["default"] == {}


# --- S-11 required ----------------------------------------------------------------------------


def test_required_list_is_sorted() -> None:  # S-11
    spec = {name: "string | required=true" for name in ["zeta", "alpha", "mid", "Beta"]}
    assert to_openapi_spec(spec)["required"] == ["Beta", "alpha", "mid", "zeta"]


def test_required_is_listed_once() -> None:
    schema = to_openapi_spec({"a": "R | required=true"}, {"R": "string | required=true"})
    assert schema["required"] == ["a"]


def test_nested_required_lands_on_the_nested_object() -> None:
    schema = to_openapi_spec({"db": {"name": "string | required=true"}})
    assert "required" not in schema
    assert schema["properties"]["db"]["required"] == ["name"]


# --- S-12 custom types -------------------------------------------------------------------------

PERSON = {"name": "string | required=true", "age": "integer | minimum=0"}
PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": STRING, "age": {"type": "integer", "minimum": 0.0}},
    "required": ["name"],
}


@pytest.mark.parametrize(
    ("type_text", "expected"),
    [
        pytest.param("Person", PERSON_SCHEMA, id="S-12 direct"),
        pytest.param("[]Person", {"type": "array", "items": PERSON_SCHEMA}, id="S-12 array"),
        pytest.param(
            "map[string]Person",
            {"type": "object", "additionalProperties": PERSON_SCHEMA},
            id="S-12 map",
        ),
    ],
)
def test_custom_type_is_inlined(type_text: str, expected: Any) -> None:
    schema = to_openapi_spec({"f": type_text}, {"Person": PERSON})
    assert schema["properties"]["f"] == expected


def test_inlined_custom_types_are_independent_copies() -> None:
    schema = to_openapi_spec({"a": "Person | description=first", "b": "Person"}, {"Person": PERSON})
    a, b = schema["properties"]["a"], schema["properties"]["b"]
    assert a["description"] == "first"
    assert "description" not in b
    assert a["properties"] is not b["properties"]


def test_types_may_reference_types_declared_later() -> None:
    types = {
        "Team": {"lead": "Person", "members": "[]Person"},
        "Person": {"name": "Name"},
        "Name": "string | minLength=1",
    }
    schema = to_openapi_spec({"team": "Team"}, types)
    person = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}}
    assert schema["properties"]["team"]["properties"] == {
        "lead": person,
        "members": {"type": "array", "items": person},
    }


def test_alias_type_carries_its_markers() -> None:  # S-12 Port example
    types = {"Port": "integer | default=8080 minimum=1"}
    schema = to_openapi_spec({"port": "Port", "admin": "Port | default=9090"}, types)
    assert schema["properties"]["port"] == {"type": "integer", "default": 8080, "minimum": 1.0}
    assert schema["properties"]["admin"]["default"] == 9090


def test_atomic_names_shadow_custom_types() -> None:  # S-12
    schema = to_openapi_spec({"f": "string"}, {"string": {"x": "integer"}})
    assert schema["properties"]["f"] == STRING


def test_types_accept_nested_struct_maps() -> None:
    schema = to_openapi_spec({"c": "Config"}, {"Config": {"tls": {"enabled": "boolean"}}})
    tls = schema["properties"]["c"]["properties"]["tls"]
    assert tls == {"type": "object", "properties": {"enabled": {"type": "boolean"}}}


@pytest.mark.parametrize(
    ("spec", "types", "message", "path"),
    [
        pytest.param(
            {"f": "Person"}, {}, "unknown type: Person", "spec.f", id="S-12 unknown in spec"
        ),
        pytest.param(
            {"f": "[]Person"}, None, "unknown type: Person", "spec.f", id="S-12 unknown element"
        ),
        pytest.param(
            {},
            {"Team": {"lead": "Person"}},
            "unknown type: Person",
            "types.Team",
            id="S-12 unknown in type",
        ),
        pytest.param(
            {},
            {"Bad": {"x": "map[integer]string"}},
            "map key must be string",
            "types.Bad.x",
            id="S-12 syntax error in type",
        ),
        pytest.param(
            {},
            {"Bad": "string | minItems=1"},
            "minItems marker is only valid for array types",
            "types.Bad",
            id="S-12 marker error in alias",
        ),
        pytest.param(
            {},
            {"Bad": 3},
            "unexpected type: float64",
            "types.Bad",
            id="S-12 type is neither alias nor struct",
        ),
        pytest.param(
            {},
            {"Bad": {"x": ["string"]}},
            "unexpected type: []interface {}",
            "types.Bad.x",
            id="S-12 list inside struct type",
        ),
        pytest.param({}, ["A"], "unexpected type: []interface {}", "types", id="types not a map"),
    ],
)
def test_bad_custom_types_are_rejected(
    spec: dict[str, Any], types: Any, message: str, path: str
) -> None:
    with pytest.raises(SchemaError) as info:
        to_openapi_spec(spec, types)
    assert str(info.value) == message
    assert info.value.field_path == path


@pytest.mark.parametrize(
    ("types", "message", "cycle"),
    [
        pytest.param(
            {"A": {"next": "A"}},
            "cyclic dependency in type A: graph contains a cycle: A -> A",
            ("A", "A"),
            id="S-12 self reference",
        ),
        pytest.param(
            {"A": {"b": "B"}, "B": {"a": "[]A"}},
            "cyclic dependency in type B: graph contains a cycle: B -> A -> B",
            ("B", "A", "B"),
            id="S-12 two-type cycle",
        ),
        pytest.param(
            {"A": "map[string]B", "B": "C", "C": {"a": "A"}},
            "cyclic dependency in type C: graph contains a cycle: C -> A -> B -> C",
            ("C", "A", "B", "C"),
            id="S-12 three-type cycle through aliases",
        ),
        pytest.param(
            {"Ok": "string", "A": {"b": "B", "ok": "Ok"}, "B": {"a": "A"}},
            "cyclic dependency in type B: graph contains a cycle: B -> A -> B",
            ("B", "A", "B"),
            id="S-12 cycle next to a fine type",
        ),
    ],
)
def test_cyclic_custom_types_are_rejected(
    types: dict[str, Any], message: str, cycle: tuple[str, ...]
) -> None:
    with pytest.raises(TypeCycleError) as info:
        to_openapi_spec({}, types)
    assert str(info.value) == message
    assert info.value.cycle == cycle


def test_build_order_puts_dependencies_first_in_declaration_order() -> None:
    deps = {"Team": ["Person", "Name"], "Solo": [], "Person": ["Name"], "Name": []}
    assert build_order(deps) == ["Name", "Person", "Team", "Solo"]


def test_build_order_reports_unknown_types() -> None:
    with pytest.raises(TypeSyntaxError, match=r"^unknown type: Ghost$"):
        build_order({"A": ["Ghost"]})


def test_type_dependencies_are_unique_in_document_order() -> None:
    definition = {"b": "[]B", "a": {"x": "A", "y": "map[string]B"}, "s": "string | default=x"}
    assert type_dependencies("T", definition) == ["B", "A"]


# --- S-13 required alias -----------------------------------------------------------------------


def test_required_alias_makes_each_field_of_that_type_required() -> None:  # S-13
    types = {"RequiredString": "string | required=true"}
    spec = {"a": "RequiredString", "b": "string", "nested": {"c": "RequiredString"}}
    schema = to_openapi_spec(spec, types)
    assert schema["required"] == ["a"]
    assert schema["properties"]["nested"]["required"] == ["c"]
    assert schema["properties"]["a"] == STRING


def test_required_alias_only_applies_to_direct_use() -> None:  # S-13
    schema = to_openapi_spec({"list": "[]RS"}, {"RS": "string | required=true"})
    assert "required" not in schema


def test_required_alias_blocks_auto_default() -> None:  # S-13 + S-10
    schema = to_openapi_spec(
        {"a": "RS", "b": "integer | default=1"}, {"RS": "string | required=true"}
    )
    assert "default" not in schema


# --- S-28: where the result goes ---------------------------------------------------------------


def test_spec_schema_is_a_structural_object_and_never_requires_itself() -> None:  # S-28
    schema = to_openapi_spec({"name": "string | required=true"})
    assert schema["type"] == "object"
    assert set(schema) <= {"type", "properties", "required", "default"}


# --- Realistic RGDs ------------------------------------------------------------------------------


def load_schema(relative: str) -> dict[str, Any]:
    with open(EXAMPLES / relative) as handle:
        doc = yaml.safe_load(handle)
    schema: dict[str, Any] = doc["spec"]["schema"]
    return schema


def test_upstream_defaults_example() -> None:
    schema = load_schema("upstream/defaults/rg.yaml")
    result = to_openapi_spec(schema["spec"], schema.get("types"))
    assert result == {
        "type": "object",
        "properties": {
            "name": STRING,
            "elements": {"type": "array", "items": STRING, "default": ["a", "b", "c", "d"]},
            "required": INTEGER,
            "element": {"type": "string", "default": "e"},
            "enabled": {"type": "boolean", "default": True},
            "number": {"type": "integer", "default": 100},
            "config": {
                "type": "object",
                "properties": {
                    "field": STRING,
                    "field2": {"type": "integer", "default": 200},
                    "field3": {"type": "integer", "default": 2002},
                },
                "default": {},
            },
        },
        "required": ["required"],
    }


def test_nginxapp_example() -> None:
    schema = load_schema("nginxapp/rgd.yaml")
    result = to_openapi_spec(schema["spec"], schema.get("types"))
    assert result["default"] == {}
    assert result["properties"]["replicas"] == {
        "type": "integer",
        "default": 2,
        "minimum": 1.0,
        "maximum": 5.0,
    }
    assert result["properties"]["ingress"]["default"] == {}
    assert result["properties"]["ingress"]["properties"]["className"] == {
        "type": "string",
        "default": "internal",
    }


def test_string_default_of_digits_stays_a_string() -> None:
    schema = load_schema("upstream/saas-multi-tenant/tenant-application-rgd.yaml")
    result = to_openapi_spec(schema["spec"], schema.get("types"))
    assert result["properties"]["image"] == {"type": "string", "default": "100"}


@pytest.mark.parametrize(
    "relative",
    sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*.yaml")),
)
def test_every_shared_example_schema_compiles(relative: str) -> None:
    with open(EXAMPLES / relative) as handle:
        docs = [d for d in yaml.safe_load_all(handle) if d]
    for doc in docs:
        if doc.get("kind") != "ResourceGraphDefinition":
            continue
        schema = doc["spec"]["schema"]
        assert to_openapi_spec(schema.get("spec"), schema.get("types"))["type"] == "object"
