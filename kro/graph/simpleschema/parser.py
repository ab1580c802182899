"""kro.graph.simpleschema.parser: the type grammar of a SimpleSchema leaf string.

A leaf is `"<type>"` or `"<type> | <markers>"`: the type is the text before the *first* `|`,
trimmed; the markers are the text after it (reference §1.C). Types:

    string | integer | boolean | float | object      atomic keywords (S-01..S-05); `float` is
                                                      the only number spelling; `int`, `bool`,
                                                      `number`, `array` are custom-type names
    []T                                               array (S-06); whitespace after `[]` is fine
    map[string]T                                      map (S-07); the key must be `string`
    <Name>                                            a custom type from spec.schema.types (S-12)

At most 16 `[]`/`map[...]` wrappers (S-08). Custom names are not resolved here: the parser
cannot know them, so `unknown type: X` is raised when the schema is built.

Public API:
    parse_type(text) -> TypeExpr                       raises TypeSyntaxError
    parse_field(text) -> FieldSpec                     type + markers; TypeSyntaxError/MarkerError
    custom_type_names(expr) -> frozenset[str]          custom names an expression references
    AtomicType, ArrayType, MapType, CustomType         the TypeExpr variants
    ATOMIC_TYPES, MAX_NESTING_DEPTH
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kro.graph.errors import TypeSyntaxError
from kro.graph.simpleschema import _gocompat
from kro.graph.simpleschema.markers import Marker, parse_markers

# SimpleSchema keyword -> OpenAPI type.
ATOMIC_TYPES: Final = {
    "string": "string",
    "integer": "integer",
    "boolean": "boolean",
    "float": "number",
    "object": "object",
}
MAX_NESTING_DEPTH: Final = 16

_ARRAY_PREFIX: Final = "[]"
_MAP_PREFIX: Final = "map["


@dataclass(frozen=True, slots=True)
class AtomicType:
    name: str  # a key of ATOMIC_TYPES


@dataclass(frozen=True, slots=True)
class ArrayType:
    items: TypeExpr


@dataclass(frozen=True, slots=True)
class MapType:
    values: TypeExpr  # keys are always strings


@dataclass(frozen=True, slots=True)
class CustomType:
    name: str


TypeExpr = AtomicType | ArrayType | MapType | CustomType


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """A parsed leaf string; `markers` is empty when there was no `|`."""

    type: TypeExpr
    markers: tuple[Marker, ...]


def _matching_bracket(text: str, open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i
    return -1


def parse_type(text: str) -> TypeExpr:
    """Parse a type expression (no markers)."""
    wrappers: list[type[ArrayType] | type[MapType]] = []
    rest = _gocompat.trim_space(text)
    while True:
        if len(wrappers) > MAX_NESTING_DEPTH:
            raise TypeSyntaxError(f"type nesting too deep (max {MAX_NESTING_DEPTH})")
        if rest.startswith(_ARRAY_PREFIX):
            rest = _gocompat.trim_space(rest[len(_ARRAY_PREFIX) :])
            if not rest:
                raise TypeSyntaxError("empty slice element type")
            wrappers.append(ArrayType)
        elif rest.startswith(_MAP_PREFIX):
            close = _matching_bracket(rest, len(_MAP_PREFIX) - 1)
            if close < 0:
                raise TypeSyntaxError(f"invalid map type {rest}: missing closing bracket")
            if _gocompat.trim_space(rest[len(_MAP_PREFIX) : close]) != "string":
                raise TypeSyntaxError("map key must be string")
            rest = _gocompat.trim_space(rest[close + 1 :])
            if not rest:
                raise TypeSyntaxError("map value type is required")
            wrappers.append(MapType)
        else:
            break
    expr: TypeExpr = AtomicType(rest) if rest in ATOMIC_TYPES else CustomType(rest)
    for wrapper in reversed(wrappers):
        expr = wrapper(expr)
    return expr


def parse_field(text: str) -> FieldSpec:
    """Parse `"<type>"` or `"<type> | <markers>"`; the first `|` separates them, so a second
    `|` lands in the marker section and fails there (reference §6 #10)."""
    type_text, sep, marker_text = text.partition("|")
    expr = parse_type(type_text)
    markers = parse_markers(marker_text) if sep else ()
    return FieldSpec(expr, markers)


def custom_type_names(expr: TypeExpr) -> frozenset[str]:
    """Names of custom types `expr` refers to (at most one: wrappers hold a single leaf)."""
    while isinstance(expr, ArrayType | MapType):
        expr = expr.items if isinstance(expr, ArrayType) else expr.values
    return frozenset({expr.name}) if isinstance(expr, CustomType) else frozenset()
