"""kro.graph.crd: the CustomResourceDefinition kro generates for an RGD's instance API (§1.O, S-28).

Input is what the builder has already produced — the instance `spec` OpenAPI schema (from
SimpleSchema) and the inferred `status` schema (from the status CEL types) — plus the RGD's own
`spec.schema` block for names, scope, printer columns and CRD metadata. Output is a plain CRD
dict laid out as upstream's `SynthesizeCRD` marshals it (Go `omitempty` fields left out), so it
can be applied, compared with the live CRD (Q-02) and printed by `kro generate crd`.

Neighbours: `kro.graph.plural` supplies flect's pluralization for `<plural>.<group>`;
`kro.api.names` supplies the default group.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from kro.api.names import KRO_DOMAIN, SCOPE_NAMESPACED
from kro.graph.plural import resource_plural

CRD_API_VERSION: Final = "apiextensions.k8s.io/v1"
CRD_KIND: Final = "CustomResourceDefinition"

STATE_SCHEMA: Final[Mapping[str, Any]] = {"type": "string"}
"""`status.state`, added unless the author declared a `state` field (T-05, T-06)."""

CONDITIONS_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastTransitionTime": {"type": "string"},
            "observedGeneration": {"type": "integer"},
        },
    },
}
"""`status.conditions`, always added: an author `conditions:` block is not a projection (T-06)."""

DEFAULT_PRINTER_COLUMNS: Final[tuple[Mapping[str, Any], ...]] = (
    {
        "name": "State",
        "type": "string",
        "description": "The state of a ResourceGraphDefinition instance",
        "jsonPath": ".status.state",
    },
    {
        "name": "Ready",
        "type": "string",
        "description": "Whether a ResourceGraphDefinition instance is ready",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
    },
    {
        "name": "Age",
        "type": "date",
        "description": "Age of the resource",
        "jsonPath": ".metadata.creationTimestamp",
    },
)
"""Used unless `additionalPrinterColumns` is non-empty, which replaces all three (A-10)."""

_COLUMN_FIELDS: Final = ("name", "type", "format", "description", "priority", "jsonPath")


def crd_names(kind: str) -> dict[str, str]:
    """`spec.names` without shortNames/categories: plural is flect's, singular lowercased."""
    return {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": resource_plural(kind),
        "singular": kind.lower(),
    }


def crd_name(kind: str, group: str) -> str:
    """`<plural>.<group>`, e.g. `applications.kro.run` (§6 #6); empty group means kro.run."""
    return f"{resource_plural(kind)}.{group or KRO_DOMAIN}"


def instance_schema(
    spec_schema: Mapping[str, Any], status_schema: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The `openAPIV3Schema` of an instance (S-28): apiVersion, kind, metadata, spec, status.

    `spec` is never required; status gets `state` and `conditions` unless already present.
    """
    status = copy.deepcopy(dict(status_schema or {}))
    status.setdefault("type", "object")
    properties = status.setdefault("properties", {})
    properties.setdefault("state", copy.deepcopy(dict(STATE_SCHEMA)))
    properties.setdefault("conditions", copy.deepcopy(dict(CONDITIONS_SCHEMA)))
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": copy.deepcopy(dict(spec_schema)),
            "status": status,
        },
    }


def printer_columns(custom: Any) -> list[dict[str, Any]]:
    """The author's columns in Go's wire form, or the default State/Ready/Age (A-10)."""
    if not isinstance(custom, list) or not custom:
        return [dict(column) for column in DEFAULT_PRINTER_COLUMNS]
    columns: list[dict[str, Any]] = []
    for column in custom:
        if isinstance(column, Mapping):
            columns.append(
                {k: column[k] for k in _COLUMN_FIELDS if column.get(k) not in (None, "", 0)}
            )
    return columns


def _string_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def synthesize_crd(
    rgd_schema: Mapping[str, Any],
    spec_schema: Mapping[str, Any],
    status_schema: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Build the instance CRD for an RGD whose `spec.schema` block is `rgd_schema`.

    `labels`/`annotations` are kro's own (ownership labels, the CLI's version annotation); they
    are laid over the author's `spec.schema.metadata` ones, so kro wins on equal keys (A-13).
    """
    kind = str(rgd_schema.get("kind", ""))
    group = str(rgd_schema.get("group") or KRO_DOMAIN)
    names: dict[str, Any] = crd_names(kind)
    short_names = _string_list(rgd_schema.get("shortNames"))
    categories = _string_list(rgd_schema.get("categories"))
    if short_names:
        names["shortNames"] = short_names
    if categories:
        names["categories"] = categories

    author_metadata = rgd_schema.get("metadata")
    author_metadata = author_metadata if isinstance(author_metadata, Mapping) else {}
    metadata: dict[str, Any] = {"name": crd_name(kind, group)}
    crd_labels = {**_string_map(author_metadata.get("labels")), **dict(labels or {})}
    crd_annotations = {
        **_string_map(author_metadata.get("annotations")),
        **dict(annotations or {}),
    }
    if crd_labels:
        metadata["labels"] = crd_labels
    if crd_annotations:
        metadata["annotations"] = crd_annotations

    version = {
        "name": str(rgd_schema.get("apiVersion", "")),
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": instance_schema(spec_schema, status_schema)},
        "subresources": {"status": {}},
        "additionalPrinterColumns": printer_columns(rgd_schema.get("additionalPrinterColumns")),
    }
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": metadata,
        "spec": {
            "group": group,
            "names": names,
            "scope": str(rgd_schema.get("scope") or SCOPE_NAMESPACED),
            "versions": [version],
        },
    }
