"""Shared RGD factories and the schema resolver for the builder tests (no tests here).

The resolver serves the real built-in Kubernetes schemas (kube-apiserver v1.36.3 bundle) plus
two small CRDs whose fields cover every OpenAPI shape the builder treats specially: typed
scalars, arrays, int-or-string, preserve-unknown, `additionalProperties` maps and `true`.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from kro.graph.build_errors import BuildError
from kro.graph.builder import BuildOptions, build_graph
from kro.graph.model import Graph
from kro.graph.resolver import OfflineSchemaResolver


def _crd(kind: str, scope: str, spec_properties: dict[str, Any]) -> dict[str, Any]:
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": scope,
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": spec_properties},
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "ready": {"type": "boolean"},
                                        "endpoint": {"type": "string"},
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


NETWORK_SPEC: dict[str, Any] = {
    "cidrBlocks": {"type": "array", "items": {"type": "string"}},
    "replicas": {"type": "integer"},
    "ratio": {"type": "number"},
    "enabled": {"type": "boolean"},
    "port": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    },
    "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "anything": {"type": "object", "additionalProperties": True},
    "peer": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
    },
    "peers": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
        },
    },
}


@cache
def _base_resolver() -> OfflineSchemaResolver:
    resolver = OfflineSchemaResolver.from_files()
    resolver.add_crd(_crd("Network", "Namespaced", NETWORK_SPEC))
    resolver.add_crd(_crd("Gadget", "Cluster", {"size": {"type": "integer"}}))
    return resolver


def resolver() -> OfflineSchemaResolver:
    """The shared resolver (read-only use; tests that add CRDs make their own)."""
    return _base_resolver()


SPEC: dict[str, Any] = {
    "name": "string",
    "replicas": "integer | default=1",
    "ratio": "float | default=0.5",
    "enabled": "boolean | default=true",
    "image": 'string | default="nginx"',
    "tiers": "[]string",
    "ports": "[]integer",
    "labels": "map[string]string",
    "config": "object",
}


def rgd(
    *resources: dict[str, Any],
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    kind: str = "App",
    scope: str | None = None,
    name: str = "test-rgd",
    **schema_extra: Any,
) -> dict[str, Any]:
    """A whole RGD object with the default SPEC (override with `spec=`)."""
    schema: dict[str, Any] = {
        "apiVersion": "v1alpha1",
        "kind": kind,
        "spec": copy.deepcopy(SPEC if spec is None else spec),
    }
    if scope is not None:
        schema["scope"] = scope
    if status is not None:
        schema["status"] = status
    schema.update(schema_extra)
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": name},
        "spec": {"schema": schema, "resources": [copy.deepcopy(r) for r in resources]},
    }


def configmap(
    rid: str,
    name: str = "${schema.spec.name}",
    data: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A ConfigMap resource; `extra` goes on the resource (readyWhen, includeWhen, forEach)."""
    template: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
    }
    if data is not None:
        template["data"] = data
    return {"id": rid, "template": template, **extra}


def resource(rid: str, template: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": rid, "template": template, **extra}


def deployment(rid: str = "deployment", **spec: Any) -> dict[str, Any]:
    """A minimal Deployment; keyword arguments are merged into `spec`."""
    body: dict[str, Any] = {
        "replicas": "${schema.spec.replicas}",
        "selector": {"matchLabels": {"app": "${schema.spec.name}"}},
        "template": {
            "metadata": {"labels": {"app": "${schema.spec.name}"}},
            "spec": {"containers": [{"name": "web", "image": "${schema.spec.image}"}]},
        },
    }
    body.update(spec)
    return resource(
        rid,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "${schema.spec.name}"},
            "spec": body,
        },
    )


def network(rid: str = "net", **spec: Any) -> dict[str, Any]:
    return resource(
        rid,
        {
            "apiVersion": "example.com/v1",
            "kind": "Network",
            "metadata": {"name": "${schema.spec.name}"},
            "spec": spec,
        },
    )


def build(obj: dict[str, Any], **options: Any) -> Graph:
    return build_graph(obj, resolver(), options=BuildOptions(**options))


def build_error(obj: dict[str, Any], **options: Any) -> BuildError:
    with pytest.raises(BuildError) as caught:
        build(obj, **options)
    return caught.value
