"""kro.graph.resources: from one `spec.resources[]` entry to a kind, a schema and typed fields
(upstream `buildRGResource` / `buildExternalRefResource`, G-05..G-12).

Nothing here compiles CEL. The result, `ParsedResource`, says what the node is (resource,
collection, external by name or by selector), which kind and schema it has, the object kro
renders for it (the template, or the serialised externalRef) and every `${...}` field with the
schema its value must fit. `nodes` compiles those fields once the typed environment exists,
which needs every resource parsed first (any resource may read any other).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.graph.build_errors import ResourceBuildError
from kro.graph.errors import GraphError
from kro.graph.model import NodeType
from kro.graph.resolver import GVK, ClusterSchemaResolver, ResolvedSchema, SchemaResolver
from kro.graph.targets import inject_target, literal_target
from kro.graph.templatecheck import TypedField, parse_template_fields
from kro.graph.validation import (
    ResourceInput,
    validate_object_structure,
    validate_reserved_metadata,
    validate_scope,
)

CRD_GVK: Final = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")


@dataclass(frozen=True, slots=True)
class ParsedResource:
    """A resource whose kind is known and whose literals fit the kind's schema."""

    input: ResourceInput
    type: NodeType
    gvk: GVK
    resolved: ResolvedSchema
    template: Mapping[str, Any]
    fields: tuple[TypedField, ...]

    @property
    def id(self) -> str:
        return self.input.id

    @property
    def index(self) -> int:
        return self.input.index


def serialize_external_ref(ref: Mapping[str, Any]) -> dict[str, Any]:
    """G-12: the object an externalRef stands for, `{apiVersion, kind, metadata}`."""
    metadata = ref.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    out: dict[str, Any] = {}
    for key in ("name", "selector", "namespace"):
        if metadata.get(key) is not None:
            out[key] = copy.deepcopy(metadata[key])
    return {"apiVersion": ref.get("apiVersion"), "kind": ref.get("kind"), "metadata": out}


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def copy_tree(value: Any) -> Any:
    """A deep copy of decoded YAML/JSON: dicts and lists are rebuilt, scalars shared, anything
    else deep-copied. Several times faster than `copy.deepcopy`, which memoises every node."""
    kind = type(value)
    if kind is dict:
        return {key: copy_tree(item) for key, item in value.items()}
    if kind is list:
        return [copy_tree(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


def _node_type(resource: ResourceInput, obj: Mapping[str, Any]) -> NodeType:
    if resource.external_ref is None:
        return NodeType.COLLECTION if resource.for_each else NodeType.RESOURCE
    if obj["metadata"].get("selector") is not None:
        return NodeType.EXTERNAL_COLLECTION
    return NodeType.EXTERNAL


def _resolve(
    resolver: SchemaResolver, gvk: GVK, resource_id: str, rgd: str, cluster: str | None = None
) -> ResolvedSchema:
    try:
        if cluster and isinstance(resolver, ClusterSchemaResolver):
            return resolver.resolve_in(gvk, cluster)
        return resolver.resolve(gvk)
    except GraphError as err:
        raise ResourceBuildError(
            f"failed to get schema for resource {resource_id}: {err}",
            rule="G-07",
            rgd=rgd,
            resource_id=resource_id,
        ) from err


def parse_resource(
    resource: ResourceInput,
    resolver: SchemaResolver,
    *,
    instance_namespaced: bool,
    rgd: str,
) -> ParsedResource:
    """Structure, kind, schema, scope, reserved metadata, then literals vs. schema."""
    if resource.external_ref is not None:
        obj: dict[str, Any] = serialize_external_ref(resource.external_ref)
    else:
        assert resource.template is not None
        obj = copy_tree(dict(resource.template))  # the Graph is shared; callers may mutate
    validate_object_structure(obj, resource.id, rgd)
    gvk = GVK.from_api_version(obj["apiVersion"], obj["kind"])
    resolved = _resolve(resolver, gvk, resource.id, rgd, literal_target(resource.target))
    node_type = _node_type(resource, obj)
    metadata: Mapping[str, Any] = obj["metadata"]
    if not node_type.is_external:
        validate_reserved_metadata(metadata, resource.id, rgd)
    if resource.target is not None:  # after the reserved-key check: kro's own annotation
        inject_target(obj, resource.target)
    validate_scope(
        metadata,
        resource_id=resource.id,
        namespaced=resolved.namespaced,
        instance_namespaced=instance_namespaced,
        selector=node_type is NodeType.EXTERNAL_COLLECTION,
        rgd=rgd,
    )
    is_crd = gvk.group == CRD_GVK.group and gvk.kind == CRD_GVK.kind
    schemaless = node_type.is_external or is_crd
    fields = parse_template_fields(
        obj,
        None if schemaless else resolved.schema,
        resource_id=resource.id,
        rgd=rgd,
        metadata_only=is_crd,
    )
    return ParsedResource(resource, node_type, gvk, resolved, obj, tuple(fields))
