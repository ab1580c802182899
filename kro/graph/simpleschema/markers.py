"""kro.graph.simpleschema.markers: the `| key=value ...` part of a SimpleSchema field.

Two steps, both upstream kro's exact rules (reference §1.C S-14..S-27):

1. `parse_markers` tokenizes (S-27): `=` outside quotes/brackets ends the key; `"` toggles
   quoting (a `\\`-escaped `"` inside quotes does not); `[`/`{` ... `]`/`}` nest, so JSON
   defaults may contain spaces; whitespace outside quotes/brackets ends a value. A value that is
   one quoted string is unquoted (`\\"` -> `"`, `\\\\` -> `\\`, other `\\x` kept verbatim). A bare
   word, including an empty marker section (`"string |"`), is an error, and so is a key that is
   not a known marker.
2. `apply_markers` edits the field's OpenAPI schema in marker order. Type-specific markers check
   the *resolved* schema type, so a custom alias of `string` accepts `pattern=`.

Public API:
    MarkerKey                                 the 16 marker names
    Marker(key, value)
    parse_markers(text) -> tuple[Marker, ...] raises MarkerError
    apply_markers(schema, markers) -> bool    mutates `schema`; True if `required=true` was given
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from kro.cel.go_regexp import syntax_error as re2_syntax_error
from kro.graph.errors import MarkerError
from kro.graph.simpleschema import _gocompat
from kro.graph.template.quote import go_quote

IMMUTABLE_RULE: Final = {"rule": "self == oldSelf", "message": "field is immutable"}
VALIDATION_MESSAGE: Final = "validation failed"
LIST_TYPES: Final = ("atomic", "set", "map")


class MarkerKey(StrEnum):
    REQUIRED = "required"
    DEFAULT = "default"
    DESCRIPTION = "description"
    MINIMUM = "minimum"
    MAXIMUM = "maximum"
    ENUM = "enum"
    IMMUTABLE = "immutable"
    VALIDATION = "validation"
    PATTERN = "pattern"
    MIN_LENGTH = "minLength"
    MAX_LENGTH = "maxLength"
    UNIQUE_ITEMS = "uniqueItems"
    MIN_ITEMS = "minItems"
    MAX_ITEMS = "maxItems"
    LIST_TYPE = "listType"
    LIST_MAP_KEY = "listMapKey"


_KEYS: Final = {k.value: k for k in MarkerKey}


@dataclass(frozen=True, slots=True)
class Marker:
    key: MarkerKey
    value: str


# ---------------------------------------------------------------------------------------------
# Tokenizer (S-27)


class _Tokenizer:
    """Character-at-a-time state machine; see the module docstring for the rules."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.markers: list[Marker] = []
        self.key: MarkerKey | None = None  # None while reading a key
        self.buf: list[str] = []

    def run(self) -> tuple[Marker, ...]:
        in_quotes = escaped = False
        depth = 0
        for ch in self.text:
            if in_quotes:
                self.buf.append(ch)
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_quotes = False
            elif ch == '"':
                in_quotes = True
                self.buf.append(ch)
            elif ch in "[{":
                depth += 1
                self.buf.append(ch)
            elif ch in "]}":
                if depth == 0:
                    raise MarkerError("unmatched closing bracket/brace")
                depth -= 1
                self.buf.append(ch)
            elif depth > 0:
                self.buf.append(ch)
            elif ch == "=" and self.key is None:
                self.end_key()
            elif _gocompat.is_space(ch):
                self.end_token()
            else:
                self.buf.append(ch)
        if in_quotes:
            raise MarkerError("unclosed quote")
        if depth:
            raise MarkerError("unclosed bracket/brace")
        if self.key is not None:
            self.end_value()
        elif self.buf or not self.markers:
            raise self.bare_word()
        return tuple(self.markers)

    def bare_word(self) -> MarkerError:
        word = "".join(self.buf)
        return MarkerError(f"marker key '{word}' without a value", marker=word)

    def end_key(self) -> None:
        name = "".join(self.buf)
        if not name:
            raise MarkerError("empty marker key")
        key = _KEYS.get(name)
        if key is None:
            raise MarkerError(
                f"invalid marker key {go_quote(name)}: unknown marker: {name}", marker=name
            )
        self.key = key
        self.buf = []

    def end_token(self) -> None:
        if self.key is not None:
            self.end_value()
        elif self.buf:
            raise self.bare_word()

    def end_value(self) -> None:
        assert self.key is not None
        self.markers.append(Marker(self.key, _unquote("".join(self.buf))))
        self.key = None
        self.buf = []


def _unquote(raw: str) -> str:
    """Strip the quotes of a value that is exactly one quoted string; anything else is kept raw
    (JSON defaults such as `["a", "b"]` must keep their inner quotes)."""
    if len(raw) < 2 or raw[0] != '"':
        return raw
    out: list[str] = []
    i = 1
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            out.append(nxt if nxt in '"\\' else ch + nxt)
            i += 2
        elif ch == '"':
            return "".join(out) if i == len(raw) - 1 else raw
        else:
            out.append(ch)
            i += 1
    return raw


def parse_markers(text: str) -> tuple[Marker, ...]:
    """Tokenize a marker section (the text after the first `|`)."""
    return _Tokenizer(text).run()


# ---------------------------------------------------------------------------------------------
# Semantics (S-14..S-26)


def _bool(marker: Marker, what: str) -> bool:
    try:
        return _gocompat.parse_bool(marker.value)
    except _gocompat.StrconvError as exc:
        raise MarkerError(f"failed to parse {what}: {exc}", marker=marker.key) from None


def _int(marker: Marker, what: str) -> int:
    try:
        return _gocompat.parse_int(marker.value)
    except _gocompat.StrconvError as exc:
        raise MarkerError(f"failed to parse {what}: {exc}", marker=marker.key) from None


def _require_type(schema: dict[str, Any], marker: Marker, want: str, *, show: bool) -> None:
    got = schema.get("type", "")
    if got != want:
        suffix = f", got type: {got}" if show else ""
        raise MarkerError(
            f"{marker.key} marker is only valid for {want} types{suffix}", marker=marker.key
        )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _default_value(schema_type: str, value: str) -> Any:
    """The JSON default upstream writes for this type (S-15), as a Python value."""
    try:
        if schema_type == "string":
            # Upstream writes `"<value>"` without escaping, so JSON escapes in the value are
            # interpreted and a bare `"` makes the default invalid.
            return json.loads(f'"{value}"')
        if schema_type == "integer":
            return _gocompat.parse_int(value)
        if schema_type == "number":
            number = _gocompat.parse_float(value)
            try:
                literal = json.loads(value, parse_constant=_reject_constant)
            except ValueError:
                return number
            return literal if type(literal) in (int, float) else number
        if schema_type == "boolean":
            return _gocompat.parse_bool(value)
        return json.loads(value, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        kind = {"integer": "a valid integer", "number": "a valid float"}.get(schema_type)
        kind = kind or {"boolean": "a valid boolean", "string": "a valid string"}.get(schema_type)
        raise MarkerError(
            f"default value must be {kind or 'valid JSON'}, got: {value}", marker="default"
        ) from None


def _apply_default(schema: dict[str, Any], marker: Marker) -> None:
    schema["default"] = _default_value(schema.get("type", ""), marker.value)


def _apply_description(schema: dict[str, Any], marker: Marker) -> None:
    schema["description"] = marker.value


def _apply_bound(schema: dict[str, Any], marker: Marker) -> None:
    try:
        schema[marker.key.value] = _gocompat.parse_float(marker.value)
    except _gocompat.StrconvError as exc:
        # "enum" is upstream's wording (sic), kept so messages match.
        raise MarkerError(
            f"failed to parse {marker.key} enum value: {exc}", marker=marker.key
        ) from None


def _apply_enum(schema: dict[str, Any], marker: Marker) -> None:
    values: list[Any] = []
    for raw in marker.value.split(","):
        item = _gocompat.trim_space(raw)
        if not item:
            raise MarkerError("empty enum values are not allowed", marker=marker.key)
        schema_type = schema.get("type", "")
        if schema_type == "string":
            values.append(item)
        elif schema_type == "integer":
            try:
                values.append(_gocompat.parse_int(item))
            except _gocompat.StrconvError as exc:
                raise MarkerError(
                    f"failed to parse integer enum value: {exc}", marker=marker.key
                ) from None
        else:
            raise MarkerError(
                f"enum values only supported for string and integer types, got type: {schema_type}",
                marker=marker.key,
            )
    schema["enum"] = values


def _apply_immutable(schema: dict[str, Any], marker: Marker) -> None:
    if _bool(marker, "immutable marker value"):
        schema.setdefault("x-kubernetes-validations", []).append(dict(IMMUTABLE_RULE))


def _apply_validation(schema: dict[str, Any], marker: Marker) -> None:
    if not _gocompat.trim_space(marker.value):
        raise MarkerError(VALIDATION_MESSAGE, marker=marker.key)
    rule = {"rule": marker.value, "message": VALIDATION_MESSAGE}
    schema.setdefault("x-kubernetes-validations", []).append(rule)


def _apply_pattern(schema: dict[str, Any], marker: Marker) -> None:
    if not marker.value:
        raise MarkerError("pattern marker value cannot be empty", marker=marker.key)
    _require_type(schema, marker, "string", show=False)
    problem = re2_syntax_error(marker.value)
    if problem is not None:
        raise MarkerError(f"invalid pattern regex: {problem}", marker=marker.key)
    schema["pattern"] = marker.value


def _apply_length(schema: dict[str, Any], marker: Marker) -> None:
    _require_type(schema, marker, "string", show=True)
    schema[marker.key.value] = _int(marker, f"{marker.key} value")


def _apply_items_count(schema: dict[str, Any], marker: Marker) -> None:
    _require_type(schema, marker, "array", show=False)
    schema[marker.key.value] = _int(marker, f"{marker.key} value")


def _apply_unique_items(schema: dict[str, Any], marker: Marker) -> None:
    _require_type(schema, marker, "array", show=False)
    if not _bool(marker, "uniqueItems marker value"):
        return
    current = schema.get("x-kubernetes-list-type")
    if current is not None and current != "set":
        raise MarkerError(f"cannot set unique when listType is set to {current}", marker=marker.key)
    # Structural schemas forbid `uniqueItems: true`; a set-typed list is the K8s spelling (N-16).
    schema["x-kubernetes-list-type"] = "set"


def _apply_list_type(schema: dict[str, Any], marker: Marker) -> None:
    _require_type(schema, marker, "array", show=False)
    if marker.value not in LIST_TYPES:
        raise MarkerError(
            f"unsupported value for listType {marker.value}, "
            "needs to be one of atomic, set, or map",
            marker=marker.key,
        )
    if schema.get("x-kubernetes-list-type") == "set" and marker.value != "set":
        raise MarkerError(
            f"listType attempting to overwrite set type of x-kubernetes-list-type with "
            f"{marker.value}",
            marker=marker.key,
        )
    schema["x-kubernetes-list-type"] = marker.value


def _apply_list_map_key(schema: dict[str, Any], marker: Marker) -> None:
    _require_type(schema, marker, "array", show=False)
    keys: list[str] = schema.setdefault("x-kubernetes-list-map-keys", [])
    if marker.value in keys:
        raise MarkerError(f"duplicate listMapKey marker, value {marker.value}", marker=marker.key)
    keys.append(marker.value)


_Apply = Callable[[dict[str, Any], Marker], None]
_APPLY: Final[dict[MarkerKey, _Apply]] = {
    MarkerKey.DEFAULT: _apply_default,
    MarkerKey.DESCRIPTION: _apply_description,
    MarkerKey.MINIMUM: _apply_bound,
    MarkerKey.MAXIMUM: _apply_bound,
    MarkerKey.ENUM: _apply_enum,
    MarkerKey.IMMUTABLE: _apply_immutable,
    MarkerKey.VALIDATION: _apply_validation,
    MarkerKey.PATTERN: _apply_pattern,
    MarkerKey.MIN_LENGTH: _apply_length,
    MarkerKey.MAX_LENGTH: _apply_length,
    MarkerKey.UNIQUE_ITEMS: _apply_unique_items,
    MarkerKey.MIN_ITEMS: _apply_items_count,
    MarkerKey.MAX_ITEMS: _apply_items_count,
    MarkerKey.LIST_TYPE: _apply_list_type,
    MarkerKey.LIST_MAP_KEY: _apply_list_map_key,
}


def apply_markers(schema: dict[str, Any], markers: Sequence[Marker]) -> bool:
    """Apply markers in order to `schema` (mutated); return whether the field is required.

    `required=false` never removes a requirement (upstream only appends on true), so a field
    whose custom alias is required stays required.
    """
    required = False
    for marker in markers:
        if marker.key is MarkerKey.REQUIRED:
            required = _bool(marker, "required marker value") or required
        else:
            _APPLY[marker.key](schema, marker)
    if "x-kubernetes-list-map-keys" in schema:
        list_type = schema.get("x-kubernetes-list-type")
        if list_type != "map":
            state = "unset" if list_type is None else f"set to {list_type}"
            raise MarkerError(
                f"listMapKey set while listType is {state}, listType must be set to map",
                marker=MarkerKey.LIST_MAP_KEY,
            )
    return required
