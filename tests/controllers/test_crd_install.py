"""The generated CRD: inferred status schemas lose every `default` (kro writes status itself,
and defaults copied from a resource's OpenAPI can make the API server reject the CRD), while
the spec keeps its SimpleSchema defaults."""

from __future__ import annotations

from typing import Any

from controllers_fakes import RESOLVER

from kro.graph.builder import build_graph
from kro.graph.status import without_defaults


def _application() -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "app"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "App",
                "spec": {"replicas": "integer | default=3"},
                "status": {"conditions_copy": "${deployment.status.conditions}"},
            },
            "resources": [
                {
                    "id": "deployment",
                    "template": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "spec": {
                            "replicas": "${schema.spec.replicas}",
                            "selector": {"matchLabels": {"app": "x"}},
                            "template": {
                                "metadata": {"labels": {"app": "x"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                            },
                        },
                    },
                }
            ],
        },
    }


def _defaults(schema: object) -> list[str]:
    """Paths of every `default` keyword below `schema`."""
    found: list[str] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "default":
                    found.append(path)
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")

    walk(schema, "")
    return found


def test_status_defaults_are_dropped_and_spec_defaults_kept() -> None:
    crd = build_graph(_application(), RESOLVER).instance.crd
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert _defaults(schema["status"]) == []
    assert schema["spec"]["properties"]["replicas"]["default"] == 3
    items = schema["status"]["properties"]["conditions_copy"]["items"]
    assert "required" not in items  # as upstream's copy (issue 26 B4)
    assert items["properties"]["type"] == {"type": "string"}


def test_a_property_named_default_is_not_a_keyword() -> None:
    status = {
        "type": "object",
        "default": {},
        "properties": {"default": {"type": "string", "default": "x"}},
    }
    assert without_defaults(status) == {
        "type": "object",
        "properties": {"default": {"type": "string"}},
    }
    assert status["default"] == {}  # the input is not modified
