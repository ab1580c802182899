"""kro.graph.schema_validation: check a value against a structural OpenAPI schema the way the
API server checks a custom resource, and say what it would say.

The controller never needs this: the API server validates instances before kro sees them.
Offline tools do (`kro render`, `kro validate`), so that a CI job rejects what `kubectl apply`
would reject, with the same words: `spec.replicas: Invalid value: "string": spec.replicas in
body must be of type integer: "string"`, `spec.name: Required value`, `unknown field
"spec.foo"` (kubectl's strict field validation). CEL rules (`x-kubernetes-validations`) live
next door in `schema_rules`; defaulting is `defaults.apply_defaults`, which runs first, as on
the server.

What is checked: JSON type (with `x-kubernetes-int-or-string`, `nullable`), `enum`,
`minimum`/`maximum` (and exclusive forms), `multipleOf`, `minLength`/`maxLength`, `pattern`,
`minItems`/`maxItems`, `minProperties`/`maxProperties`, `required`, duplicates in
`x-kubernetes-list-type: set|map` lists, and fields the schema does not declare. A node with
`x-kubernetes-preserve-unknown-fields`, or with neither `properties` nor
`additionalProperties`, is open: nothing below it is unknown. Formats are not checked (the
server checks few, and only loosely).

Neighbours: `defaults` (defaulting), `schema_rules` (CEL rules), `templatecheck` (literal
values of RGD templates, where `${...}` may stand in for any value).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any, Final

PRESERVE_UNKNOWN: Final = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING: Final = "x-kubernetes-int-or-string"


class ErrorType(StrEnum):
    """The API server's field error types (`k8s.io/apimachinery/.../field.ErrorType`)."""

    INVALID = "Invalid value"
    TYPE_INVALID = "Invalid type"  # shown as "Invalid value"; blocks CEL rules (`is_blocking`)
    REQUIRED = "Required value"
    NOT_SUPPORTED = "Unsupported value"
    DUPLICATE = "Duplicate value"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    FORBIDDEN = "Forbidden"
    UNKNOWN_FIELD = "unknown field"


_BODY_ONLY: Final = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG})
_SHOWN_AS: Final = {ErrorType.TYPE_INVALID: ErrorType.INVALID.value}


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem at one field path; `str()` is the API server's text for it."""

    path: str
    type: ErrorType
    value: Any = None
    detail: str = ""

    def __str__(self) -> str:
        if self.type is ErrorType.UNKNOWN_FIELD:
            return f"unknown field {json.dumps(self.path)}"
        body = _SHOWN_AS.get(self.type, self.type.value)
        if self.type not in _BODY_ONLY:
            body += f": {go_value(self.value)}"
        if self.detail:
            body += f": {self.detail}"
        return f"{self.path or '<nil>'}: {body}"

    @property
    def is_blocking(self) -> bool:
        """A wrong type or an unsupported enum value: the server then skips CEL rules."""
        return self.type in (ErrorType.TYPE_INVALID, ErrorType.NOT_SUPPORTED)


def go_value(value: Any) -> str:
    """A bad value as `field.Error` prints it: strings quoted, numbers bare, null as null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return format_number(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def format_number(value: float) -> str:
    """Go's `%v` of a JSON number: `1`, not `1.0`, for integral floats."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def json_type(value: Any) -> str:
    """The JSON type name of a decoded YAML/JSON value, as the server names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def child_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def item_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


def is_open(schema: Mapping[str, Any]) -> bool:
    """True when an object node accepts fields it does not declare."""
    if schema.get(PRESERVE_UNKNOWN):
        return True
    return not any(isinstance(b.get("properties"), Mapping) for b in branches(schema)) and all(
        b.get("additionalProperties") in (None, True) for b in branches(schema)
    )


def branches(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The node and its `allOf`/`anyOf`/`oneOf` branches, whose properties all count."""
    out = [schema]
    for key in ("allOf", "anyOf", "oneOf"):
        out.extend(b for b in schema.get(key) or () if isinstance(b, Mapping))
    return out


def property_schema(schema: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The schema of field `name` of an object node; `{}` if open, None if unknown."""
    for branch in branches(schema):
        properties = branch.get("properties")
        if isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping):
            found: Mapping[str, Any] = properties[name]
            return found
    for branch in branches(schema):
        extra = branch.get("additionalProperties")
        if isinstance(extra, Mapping):
            return extra
    return {} if is_open(schema) else None


def validate_value(
    schema: Mapping[str, Any], value: Any, path: str = "", *, reject_unknown: bool = True
) -> list[FieldError]:
    """Every problem the API server would report for `value` under `schema`, in document order.

    `reject_unknown` is kubectl's `--validate=strict` (its default); without it, unknown fields
    are pruned silently, as a server does for a client that does not ask for strictness.
    """
    return list(_check(schema, value, path, reject_unknown))


def unknown_fields(
    schema: Mapping[str, Any], value: Any, path: str = "", *, skip: Any = None
) -> list[str]:
    """Paths of the fields of `value` that `schema` does not declare (strict decoding).

    `skip(key_or_value)` -> True marks map keys and values that stand for something else (an
    RGD template's `${...}`) and must not be looked at.
    """
    out: list[str] = []
    _unknown(schema, value, path, skip, out)
    return out


def _unknown(schema: Mapping[str, Any], value: Any, path: str, skip: Any, out: list[str]) -> None:
    if skip is not None and skip(value):
        return
    if isinstance(value, Mapping):
        if schema.get(PRESERVE_UNKNOWN) and not schema.get("properties"):
            return
        for key, sub in value.items():
            if skip is not None and skip(key):
                continue
            sub_schema = property_schema(schema, str(key))
            if sub_schema is None:
                out.append(child_path(path, str(key)))
            else:
                _unknown(sub_schema, sub, child_path(path, str(key)), skip, out)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, sub in enumerate(value):
                _unknown(items, sub, item_path(path, index), skip, out)


def _check(
    schema: Mapping[str, Any], value: Any, path: str, reject_unknown: bool
) -> Iterator[FieldError]:
    if value is None:
        return  # null without `nullable` is pruned by the server; with it, it is valid
    type_error = _type_error(schema, value, path)
    if type_error is not None:
        yield type_error
        return
    yield from _enum(schema, value, path)
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield from _number(schema, value, path)
    elif isinstance(value, str):
        yield from _string(schema, value, path)
    elif isinstance(value, list):
        yield from _array(schema, value, path, reject_unknown)
    elif isinstance(value, Mapping):
        yield from _object(schema, value, path, reject_unknown)


def _type_error(schema: Mapping[str, Any], value: Any, path: str) -> FieldError | None:
    wanted = schema.get("type")
    if schema.get(INT_OR_STRING):
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return None
        wanted = "integer or string"
    elif not isinstance(wanted, str) or not wanted:
        return None
    actual = json_type(value)
    if actual == wanted or (actual == "integer" and wanted == "number"):
        return None
    detail = f"{path} in body must be of type {wanted}: {json.dumps(actual)}"
    return FieldError(path, ErrorType.TYPE_INVALID, actual, detail)


def _enum(schema: Mapping[str, Any], value: Any, path: str) -> Iterator[FieldError]:
    allowed = schema.get("enum")
    if isinstance(allowed, list) and allowed and not any(_equal(value, a) for a in allowed):
        supported = ", ".join(go_value(a) for a in allowed)
        yield FieldError(path, ErrorType.NOT_SUPPORTED, value, f"supported values: {supported}")


def _number(schema: Mapping[str, Any], value: float, path: str) -> Iterator[FieldError]:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float):
        exclusive = bool(schema.get("exclusiveMinimum"))
        if value < low or (exclusive and value == low):
            relation = "greater than" if exclusive else "greater than or equal to"
            yield _invalid(path, value, f"should be {relation} {format_number(low)}")
    if isinstance(high, int | float):
        exclusive = bool(schema.get("exclusiveMaximum"))
        if value > high or (exclusive and value == high):
            relation = "less than" if exclusive else "less than or equal to"
            yield _invalid(path, value, f"should be {relation} {format_number(high)}")
    factor = schema.get("multipleOf")
    if isinstance(factor, int | float) and factor > 0:
        quotient = value / factor
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            yield _invalid(path, value, f"should be a multiple of {format_number(factor)}")


def _string(schema: Mapping[str, Any], value: str, path: str) -> Iterator[FieldError]:
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    if isinstance(longest, int) and len(value) > longest:
        yield FieldError(path, ErrorType.TOO_LONG, value, f"may not be more than {longest} bytes")
    if isinstance(shortest, int) and len(value) < shortest:
        yield _invalid(path, value, f"should be at least {shortest} chars long")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern:
        compiled = _regex(pattern)
        if compiled is not None and compiled.search(value) is None:
            yield _invalid(path, value, f"should match '{pattern}'")


def _array(
    schema: Mapping[str, Any], value: list[Any], path: str, reject_unknown: bool
) -> Iterator[FieldError]:
    fewest, most = schema.get("minItems"), schema.get("maxItems")
    if isinstance(most, int) and len(value) > most:
        yield FieldError(path, ErrorType.TOO_MANY, len(value), f"must have at most {most} items")
    if isinstance(fewest, int) and len(value) < fewest:
        yield _invalid(path, len(value), f"should have at least {fewest} items")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            yield from _check(items, item, item_path(path, index), reject_unknown)
    yield from _list_duplicates(schema, value, path)


def _list_duplicates(
    schema: Mapping[str, Any], value: list[Any], path: str
) -> Iterator[FieldError]:
    """`x-kubernetes-list-type: set` items, and `map` items' keys, must be unique."""
    list_type = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys")
    if list_type not in ("set", "map") and not schema.get("uniqueItems"):
        return
    seen: list[Any] = []
    for index, item in enumerate(value):
        identity: Any = item
        if list_type == "map" and isinstance(keys, list) and isinstance(item, Mapping):
            identity = {k: item.get(k) for k in keys}
        if any(_equal(identity, s) for s in seen):
            yield FieldError(item_path(path, index), ErrorType.DUPLICATE, identity)
        else:
            seen.append(identity)


def _object(
    schema: Mapping[str, Any], value: Mapping[str, Any], path: str, reject_unknown: bool
) -> Iterator[FieldError]:
    fewest, most = schema.get("minProperties"), schema.get("maxProperties")
    if isinstance(most, int) and len(value) > most:
        yield FieldError(path, ErrorType.TOO_MANY, len(value), f"must have at most {most} items")
    if isinstance(fewest, int) and len(value) < fewest:
        yield _invalid(path, len(value), f"should have at least {fewest} properties")
    for name in _required(schema):
        if name not in value or value[name] is None:
            yield FieldError(child_path(path, name), ErrorType.REQUIRED)
    for key, sub in value.items():
        sub_schema = property_schema(schema, str(key))
        if sub_schema is None:
            if reject_unknown:
                yield FieldError(child_path(path, str(key)), ErrorType.UNKNOWN_FIELD)
            continue
        yield from _check(sub_schema, sub, child_path(path, str(key)), reject_unknown)


def _required(schema: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for branch in branches(schema):
        for name in branch.get("required") or ():
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def _invalid(path: str, value: Any, rule: str) -> FieldError:
    return FieldError(path, ErrorType.INVALID, value, f"{path} in body {rule}")


def _equal(left: Any, right: Any) -> bool:
    """JSON equality: `1 == 1.0` but `True != 1`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str] | None:
    """Python's `re` reads the RE2 patterns CRDs use; one it cannot read is not checked."""
    try:
        return re.compile(pattern)
    except re.error:
        return None
