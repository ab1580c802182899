"""Structural defaulting used by `kro render` (what the API server does to instances)."""

from __future__ import annotations

from kro.graph.defaults import apply_defaults
from kro.graph.simpleschema import to_openapi_spec


def test_missing_fields_get_defaults_and_nested_objects_materialise() -> None:
    schema = to_openapi_spec({
        "name": "string",
        "replicas": "integer | default=3",
        "ingress": {"enabled": "boolean | default=false"},
    })
    assert apply_defaults(schema, {"name": "web"}) == {
        "name": "web", "replicas": 3, "ingress": {"enabled": False},
    }


def test_present_values_are_kept() -> None:
    schema = to_openapi_spec({"replicas": "integer | default=3"})
    assert apply_defaults(schema, {"replicas": 1}) == {"replicas": 1}


def test_defaults_apply_inside_arrays_and_maps() -> None:
    schema = to_openapi_spec(
        {"ports": "[]Port", "byName": "map[string]Port"},
        {"Port": {"port": "integer | default=80", "name": "string"}},
    )
    assert apply_defaults(schema, {"ports": [{"name": "a"}], "byName": {"x": {}}}) == {
        "ports": [{"name": "a", "port": 80}], "byName": {"x": {"port": 80}},
    }
