"""_engine_compat.checked_types: the checker's per-node facts, read from a serialized CheckedExpr.

`checked_ast` decodes the tree; this module decodes the two maps next to it, which the
rewrites in `lowering` need to decide what a node means: the *type map* (node id -> the
checked type, as a `CelType`) and the *reference map* (node id -> the overload ids the
checker chose for a call). Both are read only when a rewrite might apply, never per
evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.cel._engine_compat.wire import read_fields
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

_ANY_VALUE: Final = 2
_REFERENCE_MAP, _TYPE_MAP = 2, 3
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
    types: dict[int, CelType] = {}
    overloads: dict[int, tuple[str, ...]] = {}
    for number, _, value in read_fields(serialized):
        if number != _ANY_VALUE or not isinstance(value, bytes):
            continue
        for field, _, entry in read_fields(value):
            if field == _TYPE_MAP and isinstance(entry, bytes):
                key, payload = _entry(entry)
                types[key] = type_of(payload, messages)
            elif field == _REFERENCE_MAP and isinstance(entry, bytes):
                key, payload = _entry(entry)
                overloads[key] = tuple(
                    v.decode()
                    for n, _, v in read_fields(payload)
                    if n == 3 and isinstance(v, bytes)
                )
    return CheckedFacts(types, overloads)


def _entry(entry: bytes) -> tuple[int, bytes]:
    key, payload = 0, b""
    for number, _, value in read_fields(entry):
        if number == 1 and isinstance(value, int):
            key = value
        elif number == 2 and isinstance(value, bytes):
            payload = value
    return key, payload


def type_of(buf: bytes, messages: Mapping[str, Mapping[str, Any]]) -> CelType:
    """A `cel.expr.Type` message as a CelType."""
    for number, _, value in read_fields(buf):
        if number in {1, 10}:  # dyn, type parameter
            return DYN
        if number == 2:
            return NULL
        if number in (3, 4) and isinstance(value, int):  # primitive, wrapper
            return _PRIMITIVES.get(value, DYN)
        if number == 5 and isinstance(value, int):
            return _WELL_KNOWN.get(value, DYN)
        if not isinstance(value, bytes):
            continue
        if number == 6:
            element = next((v for n, _, v in read_fields(value) if n == 1), b"")
            return list_of(type_of(element, messages) if isinstance(element, bytes) else DYN)
        if number == 7:
            parts = {n: v for n, _, v in read_fields(value) if isinstance(v, bytes)}
            return map_of(
                type_of(parts.get(1, b""), messages), type_of(parts.get(2, b""), messages)
            )
        if number == 9:
            return _message(value.decode(), messages)
        if number == 11:
            return CelType("type")
        if number == 12:
            return CelType("error")
        if number == 14:
            return _abstract(value, messages)
    return DYN


def _message(name: str, messages: Mapping[str, Mapping[str, Any]]) -> CelType:
    known = _MESSAGES.get(name)
    if known is not None:
        return known
    schema = messages.get(name)
    if schema is not None:
        return CelType("object", name=name, schema=schema)
    return CelType("opaque", name=name)


def _abstract(buf: bytes, messages: Mapping[str, Mapping[str, Any]]) -> CelType:
    name = ""
    params: list[CelType] = []
    for number, _, value in read_fields(buf):
        if number == 1 and isinstance(value, bytes):
            name = value.decode()
        elif number == 2 and isinstance(value, bytes):
            params.append(type_of(value, messages))
    if name == "optional_type":
        return CelType("optional", (params[0] if params else DYN,))
    return CelType("opaque", tuple(params), name=name)


def contains(cel_type: CelType, kind: str) -> bool:
    """True if `cel_type` is, or has a parameter (at any depth) that is, of `kind`."""
    return cel_type.kind == kind or any(contains(p, kind) for p in cel_type.params)
