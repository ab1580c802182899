"""kro.graph.environment: the typed CEL environment every expression of an RGD is checked in
(G-18, C-11, C-12).

* `schema` is the instance as expressions see it: `apiVersion`, `kind`, the full ObjectMeta
  (so `schema.metadata.labels` or `.creationTimestamp` type-check) and the SimpleSchema `spec`
  — never `status` (N-25). A cluster-scoped instance has no `metadata.namespace` (C-11), so
  `${schema.metadata.namespace}` fails at build time instead of resolving to "" at runtime.
* every resource id is declared with its kind's OpenAPI schema; forEach collections and
  selector externalRefs are lists of that kind (F-09, X-03).

ObjectMeta comes from the resolver (it is the same for every kind; ConfigMap's is used), with a
small fallback for resolvers that know no built-in kinds.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from kro.graph.errors import GraphError
from kro.graph.resolver import GVK, SchemaResolver

SCHEMA_VARIABLE: Final = "schema"
EACH_VARIABLE: Final = "each"
_OBJECT_META_SOURCE: Final = GVK("", "v1", "ConfigMap")
_STRING_MAP: Final = {"type": "object", "additionalProperties": {"type": "string"}}
FALLBACK_OBJECT_META: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer", "format": "int64"},
        "creationTimestamp": {"type": "string", "format": "date-time"},
        "deletionTimestamp": {"type": "string", "format": "date-time"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": {"type": "string"}},
    },
}
"""ObjectMeta's commonly read fields, for resolvers without built-in kinds."""


def object_meta_schema(resolver: SchemaResolver) -> Mapping[str, Any]:
    """ObjectMeta as the cluster publishes it (from a built-in kind), else the fallback."""
    try:
        resolved = resolver.resolve(_OBJECT_META_SOURCE)
    except GraphError:
        return FALLBACK_OBJECT_META
    properties = resolved.schema.get("properties")
    metadata = properties.get("metadata") if isinstance(properties, Mapping) else None
    if isinstance(metadata, Mapping) and metadata.get("properties"):
        return metadata
    return FALLBACK_OBJECT_META


def instance_variable_schema(
    spec_schema: Mapping[str, Any], object_meta: Mapping[str, Any], *, namespaced: bool
) -> dict[str, Any]:
    """The schema `schema` is declared with: the instance without status (C-11)."""
    metadata = dict(object_meta)
    if not namespaced:
        properties = dict(metadata.get("properties") or {})
        properties.pop("namespace", None)
        metadata["properties"] = properties
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": metadata,
            "spec": copy.deepcopy(dict(spec_schema)),
        },
    }


def list_schema(item: Mapping[str, Any]) -> dict[str, Any]:
    """How collections and selector externalRefs are declared: a list of their kind."""
    return {"type": "array", "items": item}
