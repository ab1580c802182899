"""_engine_compat.checked_types: the checker's per-node facts, read from a serialized CheckedExpr.

`ast_decode` decodes the tree; this module reads the two maps next to it, which the
rewrites in `lowering` need to decide what a node means: the *type map* (node id -> the
checked type, as a `CelType`) and the *reference map* (node id -> the overload ids the
checker chose for a call). Both are read only when a rewrite might apply, never per
evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf import any_pb2

from kro.cel._engine_compat.protos import CheckedMaps
from kro.cel.types import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    DYN,
    INT,
    NULL,
    STRING,
    TIMESTAMP,
    UINT,
    CelType,
    list_of,
    map_of,
)

_PRIMITIVES: Final = {1: BOOL, 2: INT, 3: UINT, 4: DOUBLE, 5: STRING, 6: BYTES}
_WELL_KNOWN: Final = {1: DYN, 2: TIMESTAMP, 3: DURATION}
_MESSAGES: Final = {
    "google.protobuf.Value": DYN,
    "google.protobuf.Timestamp": TIMESTAMP,
    "google.protobuf.Duration": DURATION,
    "google.protobuf.Struct": map_of(STRING, DYN),
    "google.protobuf.ListValue": list_of(DYN),
}


@dataclass(frozen=True, slots=True)
class CheckedFacts:
    """What the checker recorded per node id."""

    types: Mapping[int, CelType]
    overloads: Mapping[int, tuple[str, ...]]


def checked_facts(serialized: bytes, messages: Mapping[str, Mapping[str, Any]]) -> CheckedFacts:
    """The type and reference maps of an Any-wrapped CheckedExpr.

    `messages` maps synthetic message names to their schemas: such names become object
    types (with the schema), other message names opaque library types.
    """
    checked = CheckedMaps.FromString(any_pb2.Any.FromString(serialized).value)
    return CheckedFacts(
        {key: type_of(value, messages) for key, value in checked.type_map.items()},
        {key: tuple(value.overload_id) for key, value in checked.reference_map.items()},
    )


def type_of(message: Any, messages: Mapping[str, Mapping[str, Any]]) -> CelType:
    """A `cel.expr.Type` message as a CelType."""
    kind = message.WhichOneof("type_kind")
    if kind == "null":
        return NULL
    if kind in ("primitive", "wrapper"):
        return _PRIMITIVES.get(getattr(message, kind), DYN)
    if kind == "well_known":
        return _WELL_KNOWN.get(message.well_known, DYN)
    if kind == "list_type":
        return list_of(type_of(message.list_type.elem_type, messages))
    if kind == "map_type":
        parts = message.map_type
        return map_of(type_of(parts.key_type, messages), type_of(parts.value_type, messages))
    if kind == "message_type":
        return _message(message.message_type, messages)
    if kind == "type":
        return CelType("type")
    if kind == "error":
        return CelType("error")
    if kind == "abstract_type":
        return _abstract(message.abstract_type, messages)
    return DYN  # dyn, a type parameter, a function type, or nothing set


def _message(name: str, messages: Mapping[str, Mapping[str, Any]]) -> CelType:
    known = _MESSAGES.get(name)
    if known is not None:
        return known
    schema = messages.get(name)
    if schema is not None:
        return CelType("object", name=name, schema=schema)
    return CelType("opaque", name=name)


def _abstract(abstract: Any, messages: Mapping[str, Mapping[str, Any]]) -> CelType:
    params = [type_of(p, messages) for p in abstract.parameter_types]
    if abstract.name == "optional_type":
        return CelType("optional", (params[0] if params else DYN,))
    return CelType("opaque", tuple(params), name=abstract.name)


def contains(cel_type: CelType, kind: str) -> bool:
    """True if `cel_type` is, or has a parameter (at any depth) that is, of `kind`."""
    return cel_type.kind == kind or any(contains(p, kind) for p in cel_type.params)
