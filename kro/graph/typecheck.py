"""kro.graph.typecheck: does an expression's CEL result type fit the field it is written to?
(G-21, G-22; upstream `validateExpressionType` and `pkg/cel/compatibility.go`.)

The expected type comes from the kind's OpenAPI schema at the field's path, the output type
from the checked expression. Nominal equality is tried first; otherwise the types are compared
*structurally*, because an expression usually returns a sub-tree of another resource
(`${deployment.spec.selector.matchLabels}`) whose CEL type has a different name than the
target's even though the shapes agree:

* `dyn` on either side, `null`, and preserve-unknown/int-or-string targets are compatible;
  `optional(T)` is unwrapped (none renders as null);
* lists compare elements; maps compare keys and values;
* struct -> struct: every output field must exist in the expected struct (the output may be a
  *subset*) with a compatible type;
* map -> struct: string keys and a value compatible with every expected field;
  struct -> map: every output field compatible with the map value;
* everything else must be the same kind: `int` into a `number` field is a mismatch (N-24).

Schema -> CEL type follows `kro.cel.types` (the translator that declares the variables), so
`date-time` strings are timestamps and `format: byte` strings are bytes, as upstream's DeclTypes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kro.cel import CelType
from kro.cel.types import is_dyn_schema

_SCALAR_FORMATS: Final = {"date-time": "timestamp", "date": "timestamp", "duration": "duration"}
_SCALARS: Final = {"integer": "int", "number": "double", "boolean": "bool"}
_MAX_DEPTH: Final = 64


@dataclass(frozen=True, slots=True, eq=False)
class _Type:
    """A CEL type seen structurally; struct fields stay schemas until compared."""

    kind: str
    name: str
    params: tuple[_Type, ...] = ()
    fields: Mapping[str, Any] | None = None
    schema: Mapping[str, Any] | None = field(default=None, repr=False)


_DYN: Final = _Type("dyn", "dyn")


def from_schema(schema: Any, name: str = "object") -> _Type:
    """The CEL type a value at this schema node has (`name` labels struct types)."""
    if not isinstance(schema, Mapping) or is_dyn_schema(schema):
        return _DYN
    kind = schema.get("type")
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "byte":
            return _Type("bytes", "bytes")
        scalar = _SCALAR_FORMATS.get(str(fmt), "string")
        return _Type(scalar, scalar)
    if isinstance(kind, str) and kind in _SCALARS:
        return _Type(_SCALARS[kind], _SCALARS[kind])
    if kind == "array":
        element = from_schema(schema.get("items"), f"{name}.@idx")
        return _Type("list", f"list({element.name})", (element,))
    if kind == "object":
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties:
            return _Type("struct", name, fields=properties, schema=schema)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            value = from_schema(extra, f"{name}.@elem")
            return _Type("map", f"map(string, {value.name})", (_Type("string", "string"), value))
    return _DYN


def from_cel(cel_type: CelType) -> _Type:
    """The structural view of a checked expression's output type."""
    kind = cel_type.kind
    if kind == "object":
        schema = cel_type.schema
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        fields = properties if isinstance(properties, Mapping) else {}
        return _Type("struct", cel_type.cel_name, fields=fields, schema=schema)
    params = tuple(from_cel(p) for p in cel_type.params)
    if kind in ("list", "map", "optional"):
        return _Type(kind, cel_type.cel_name, params)
    return _Type(kind, cel_type.cel_name)


def expected_type_name(schema: Mapping[str, Any] | None, name: str) -> str:
    """The expected type as upstream prints it (`int`, `list(string)`, `__type_x.spec`)."""
    return from_schema(schema, name).name


class _Comparer:
    """One compatibility question; remembers struct pairs in progress (recursive schemas)."""

    def __init__(self) -> None:
        self._assumed: set[tuple[int, int]] = set()

    def compatible(self, out: _Type, expected: _Type, depth: int = 0) -> str | None:
        """None when `out` fits `expected`, else why not."""
        if depth > _MAX_DEPTH or expected.kind == "dyn" or out.kind in ("dyn", "null"):
            return None
        if out.kind == "optional":
            return self.compatible(out.params[0], expected, depth + 1)
        if out.kind == expected.kind and out.kind in ("list", "map"):
            for o, e in zip(out.params, expected.params, strict=True):
                reason = self.compatible(o, e, depth + 1)
                if reason is not None:
                    return reason
            return None
        if expected.kind == "struct" and out.kind in ("struct", "map"):
            return self._into_struct(out, expected, depth)
        if expected.kind == "map" and out.kind == "struct":
            return self._struct_into_map(out, expected, depth)
        if out.kind == expected.kind and (out.kind != "opaque" or out.name == expected.name):
            return None
        return f"kind mismatch: {out.name} is not {expected.name}"

    def _into_struct(self, out: _Type, expected: _Type, depth: int) -> str | None:
        expected_fields = expected.fields or {}
        if out.kind == "map":
            key, value = out.params
            if key.kind not in ("string", "dyn"):
                return f"map key {key.name} is not string"
            for name, sub in expected_fields.items():
                reason = self.compatible(
                    value, from_schema(sub, f"{expected.name}.{name}"), depth + 1
                )
                if reason is not None:
                    return f'field "{name}": {reason}'
            return None
        if out.schema is not None and out.schema is expected.schema:
            return None
        pair = (id(out.schema), id(expected.schema))
        if pair in self._assumed:
            return None
        self._assumed.add(pair)
        for name, sub in (out.fields or {}).items():
            if name not in expected_fields:
                return f'field "{name}" exists in output but not in expected type'
            reason = self.compatible(
                from_schema(sub, f"{out.name}.{name}"),
                from_schema(expected_fields[name], f"{expected.name}.{name}"),
                depth + 1,
            )
            if reason is not None:
                return f'field "{name}": {reason}'
        return None

    def _struct_into_map(self, out: _Type, expected: _Type, depth: int) -> str | None:
        value = expected.params[1]
        for name, sub in (out.fields or {}).items():
            reason = self.compatible(from_schema(sub, f"{out.name}.{name}"), value, depth + 1)
            if reason is not None:
                return f'field "{name}": {reason}'
        return None


def incompatibility(output: CelType, expected_schema: Mapping[str, Any] | None) -> str | None:
    """None when an expression of type `output` may be written where `expected_schema` is."""
    return _Comparer().compatible(from_cel(output), from_schema(expected_schema))


def is_string_like(output: CelType) -> bool:
    """A string-template part must produce a string (N-23); `dyn` is checked at runtime."""
    return output.kind in ("string", "dyn")


def type_mismatch_message(
    *, resource_id: str, path: str, expression: str, output: str, expected: str, reason: str | None
) -> str:
    """G-21's message; the structural reason (G-22) is appended when there is one."""
    message = (
        f'type mismatch in resource "{resource_id}" at path "{path}": expression '
        f'"{expression}" returns type "{output}" but expected "{expected}"'
    )
    return f"{message}: {reason}" if reason else message
