"""kro.graph.hashing: the RGD spec hash and GraphRevision object names (reference §1.N).

The spec hash decides whether an RGD change needs a new GraphRevision (P-03, P-05): equal
hashes mean "same graph", so the hash must ignore everything that cannot change the compiled
result — resource order, readyWhen/includeWhen order, absent vs. empty lists, defaulted
`group`/`scope`, key order inside free-form maps (N-05, N-19) — and must change with
everything else. It is stored in the GraphRevision label `kro.run/graph-revision-hash`.

The hash is FNV-1a 64 over a canonical JSON encoding (sorted keys, compact), printed as 16
lowercase hex digits. Upstream hashes Go's struct-ordered `json.Marshal` output instead, so
values are not bit-identical with upstream kro's labels; only equality between two hashes
computed by this module is meaningful (a revision issued by upstream kro is re-issued once after
migrating, which is harmless).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from kro.api.names import KRO_DOMAIN, SCOPE_NAMESPACED

_FNV64_OFFSET: Final = 0xCBF29CE484222325
_FNV64_PRIME: Final = 0x100000001B3
_FNV32_OFFSET: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193
_MASK64: Final = (1 << 64) - 1
_MASK32: Final = (1 << 32) - 1

MAX_OBJECT_NAME_LENGTH: Final = 253
"""DNS-1123 subdomain limit for GraphRevision names (B-06)."""
FALLBACK_REVISION_PREFIX: Final = "gr"


def fnv1a_64(data: bytes) -> int:
    """FNV-1a, 64 bit (Go's hash/fnv New64a)."""
    value = _FNV64_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV64_PRIME) & _MASK64
    return value


def fnv1a_32(data: bytes) -> int:
    """FNV-1a, 32 bit (Go's hash/fnv New32a)."""
    value = _FNV32_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & _MASK32
    return value


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and len(value) == 0)


def _without_empty(obj: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Copy `obj` dropping the listed optional keys when absent/null/empty (nil == empty)."""
    return {k: v for k, v in obj.items() if not (k in keys and _is_empty(v))}


def _normalize_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    out = _without_empty(
        schema,
        ("spec", "types", "status", "additionalPrinterColumns", "shortNames", "categories"),
    )
    out["group"] = schema.get("group") or KRO_DOMAIN
    out["scope"] = schema.get("scope") or SCOPE_NAMESPACED
    metadata = schema.get("metadata")
    if isinstance(metadata, Mapping):
        metadata = _without_empty(metadata, ("labels", "annotations"))
    if _is_empty(metadata):
        out.pop("metadata", None)
    else:
        out["metadata"] = metadata
    columns = schema.get("additionalPrinterColumns")
    if isinstance(columns, list) and columns:
        # Go's omitempty drops zero priority and empty description/format.
        out["additionalPrinterColumns"] = [
            {k: v for k, v in c.items() if not (_is_empty(v) or (k == "priority" and v == 0))}
            if isinstance(c, Mapping)
            else c
            for c in columns
        ]
    return out


def _normalize_resource(resource: Mapping[str, Any]) -> dict[str, Any]:
    out = _without_empty(
        resource, ("template", "externalRef", "readyWhen", "includeWhen", "forEach")
    )
    for key in ("readyWhen", "includeWhen"):
        if key in out and isinstance(out[key], list):
            out[key] = sorted(out[key], key=str)
    return out


def normalize_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The RGD spec as hashed: defaults applied, empties dropped, order-free lists sorted.

    forEach dimension order is kept: it is the loop nesting order of a collection (F-02).
    """
    out = dict(spec)
    schema = spec.get("schema")
    if isinstance(schema, Mapping):
        out["schema"] = _normalize_schema(schema)
    resources = spec.get("resources")
    if _is_empty(resources):
        out.pop("resources", None)
    elif isinstance(resources, list):
        normalized = [_normalize_resource(r) if isinstance(r, Mapping) else r for r in resources]
        out["resources"] = sorted(
            normalized, key=lambda r: str(r.get("id", "")) if isinstance(r, Mapping) else ""
        )
    return out


def canonical_json(value: Any) -> bytes:
    """Compact JSON with sorted keys: the same data always encodes to the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def spec_hash(spec: Mapping[str, Any]) -> str:
    """16 hex digits identifying the compiled meaning of an RGD spec (N-05)."""
    return f"{fnv1a_64(canonical_json(normalize_spec(spec))):016x}"


def graph_revision_name(rgd_name: str, revision: int) -> str:
    """`<rgd>-r<revision %05d>`, shortened with a hash of the full name past 253 chars (B-06).

    The hash suffix keeps two long RGD names that share a 230-character prefix apart.
    """
    suffix = f"-r{revision:05d}"
    if len(rgd_name) + len(suffix) <= MAX_OBJECT_NAME_LENGTH:
        return rgd_name + suffix
    suffix = f"-r{revision:05d}-{fnv1a_32(rgd_name.encode('utf-8')):08x}"
    prefix = rgd_name[: max(MAX_OBJECT_NAME_LENGTH - len(suffix), 0)].rstrip(".-")
    return (prefix or FALLBACK_REVISION_PREFIX) + suffix
