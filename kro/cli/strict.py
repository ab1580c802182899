"""kro.cli.strict: the fields an RGD may not have, found before anything is compiled.

`kubectl apply` validates strictly by default: a field the schema does not declare, or a key
given twice, fails the request (`strict decoding error: unknown field "spec.extraField"`)
instead of being dropped. kro's admission models (`kro.api.v1alpha1`) prune unknown fields as
the API server's non-strict path does, so without this module a misspelled `readyWen` would
validate and then silently never gate anything. Two passes, both listing every problem:

* the RGD itself against kro's own CRD (`kro/api/crds/`), with `metadata` checked against
  ObjectMeta; `spec.schema.spec|types|status` and `template` are free-form there;
* each resource template against its kind's schema, where that schema is closed: fields
  under `x-kubernetes-preserve-unknown-fields` (or schemaless nodes) stay open, and a map key
  or value written as `${...}` is skipped, since it only gets its name when an instance
  renders. CustomResourceDefinition templates are schemaless for kro (G-11), and so is every
  externalRef, as in the graph builder. A template whose literal target names a member cluster
  is checked against that cluster's schema when the resolver knows it (`kro validate
  --cluster`, kro.cli.member_schemas), as the build types it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any, Final

import yaml

from kro.api.crds import RGD_CRD_FILE, crd_manifest_text
from kro.cli.member_schemas import clusters_of, literal_targets
from kro.graph.resolver import (
    GVK,
    ResolvedSchema,
    SchemaNotFoundError,
    SchemaResolver,
)
from kro.graph.schema_validation import unknown_fields

_CRD_KIND: Final = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
_OBJECT_META_SOURCE: Final = GVK("", "v1", "ConfigMap")


class KindNotResolved(Exception):
    """A template's kind is not known yet (another RGD given with it may define it)."""


@cache
def _rgd_schema() -> Mapping[str, Any]:
    """kro's RGD schema, parsed with libyaml when present (the pure-Python parser takes a
    quarter of a second for this file, which every `kro validate` would pay)."""
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(crd_manifest_text(RGD_CRD_FILE), Loader=loader)
    schema: Mapping[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def object_meta_schema(resolver: SchemaResolver) -> Mapping[str, Any] | None:
    """ObjectMeta as the schema bundle has it, or None when the bundle has no core kinds."""
    try:
        schema = resolver.resolve(_OBJECT_META_SOURCE).schema
    except SchemaNotFoundError:
        return None
    meta = (schema.get("properties") or {}).get("metadata")
    return meta if isinstance(meta, Mapping) and meta.get("properties") else None


def with_object_meta(
    schema: Mapping[str, Any], object_meta: Mapping[str, Any] | None
) -> Mapping[str, Any]:
    """A top-level schema whose `metadata` is ObjectMeta (CRD schemas only say `object`)."""
    if object_meta is None:
        return schema
    properties = dict(schema.get("properties") or {})
    properties["metadata"] = object_meta
    return {**schema, "properties": properties}


def is_expression(value: Any) -> bool:
    """`${...}` text: a key or value whose real name or shape exists only per instance."""
    return isinstance(value, str) and "${" in value


def rgd_field_errors(
    body: Mapping[str, Any],
    duplicates: tuple[str, ...],
    object_meta: Mapping[str, Any] | None,
) -> list[str]:
    """Duplicate and unknown fields of an RGD manifest, as strict field validation words them."""
    errors = [f'duplicate field "{path}"' for path in duplicates]
    schema = with_object_meta(_rgd_schema(), object_meta)
    errors += [f'unknown field "{path}"' for path in unknown_fields(schema, body)]
    return errors


def template_field_errors(
    body: Mapping[str, Any], resolver: SchemaResolver, *, final: bool
) -> list[str]:
    """Unknown fields of every template whose kind is known and closed.

    Raises KindNotResolved when a kind is missing and `final` is False, so that the caller can
    retry once the RGDs given alongside have been built; with `final`, such templates are
    left to the graph builder, which reports the missing kind.
    """
    errors: list[str] = []
    clusters = {str(resource.get("id", "")): cluster for resource, cluster in literal_targets(body)}
    for resource_id, template in _templates(body):
        api_version, kind = template.get("apiVersion"), template.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            continue  # the builder reports the missing apiVersion/kind
        if is_expression(api_version) or is_expression(kind):
            continue
        gvk = GVK.from_api_version(api_version, kind)
        if gvk == _CRD_KIND:
            continue
        try:
            schema = _resolve(resolver, gvk, clusters.get(resource_id)).schema
        except SchemaNotFoundError:
            if not final:
                raise KindNotResolved(str(gvk)) from None
            continue
        errors += [
            f'resource "{resource_id}" ({api_version} {kind}): unknown field "{path}"'
            for path in unknown_fields(schema, template, skip=is_expression)
        ]
    return errors


def _resolve(resolver: SchemaResolver, gvk: GVK, cluster: str | None) -> ResolvedSchema:
    """The kind's schema where the template is applied: its target's, or the default."""
    clusters = clusters_of(resolver)
    if cluster and clusters is not None:
        return clusters.resolver(cluster).resolve(gvk)
    return resolver.resolve(gvk)


def _templates(body: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    spec = body.get("spec")
    resources = spec.get("resources") if isinstance(spec, Mapping) else None
    for resource in resources if isinstance(resources, list) else ():
        if isinstance(resource, Mapping) and isinstance(resource.get("template"), Mapping):
            yield str(resource.get("id", "")), resource["template"]
