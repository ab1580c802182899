"""kro.cel.convert: values across the engine boundary, in both directions.

Out (C-35, upstream `pkg/cel/conversion`): a CEL result becomes a JSON value that can be
written into a Kubernetes object. Timestamps become RFC3339 UTC strings (metav1.Time),
durations Go duration strings (`1h0m0s`), optional.none() null, map keys must be strings,
a uint must fit in int64, and bytes are refused with upstream's message (C-23). kro's
opaque library values render as their canonical string (`quantity("1Gi")` -> "1Gi").

In (C-34, upstream `pkg/cel/unstructured`): resource objects are plain JSON, but their
schema says some strings are really timestamps (`format: date-time`/`date`), durations
(`format: duration`) or base64 bytes (`format: byte`, e.g. Secret.data). An `InputConverter`
is planned once per schema and then rewrites only those paths (copy-on-write), so binding a
28 KB Deployment costs nothing when none of its fields need it. The engine accepts
timestamps and durations only as protobuf well-known messages, never as `datetime`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message

from kro.cel.errors import CelConversionError
from kro.cel.opaque import OMIT, Condition, Omit, opaque_text

BYTES_NOT_STORABLE: Final = (
    "bytes value cannot be used directly in a resource template or status field; "
    "encode it explicitly, e.g. base64.encode(...)"
)
MAX_INT64: Final = (1 << 63) - 1
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


# ------------------------------------------------------------------------------ output


def to_json_value(value: Any, path: str = "") -> Any:
    """Convert an evaluation result into JSON (C-35); raises CelConversionError."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if value > MAX_INT64:
            raise CelConversionError(message=f"uint value {value} overflows int64", path=path)
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise CelConversionError(message=f"cannot convert {value} to JSON", path=path)
        return value
    if isinstance(value, list):
        return [to_json_value(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CelConversionError(message="map key must be string", path=path)
            out[key] = to_json_value(item, f"{path}.{key}" if path else key)
        return out
    if isinstance(value, (bytes, bytearray)):
        raise CelConversionError(message=BYTES_NOT_STORABLE, path=path)
    if isinstance(value, dt.datetime):
        return format_rfc3339(value)
    if isinstance(value, dt.timedelta):
        return format_go_duration(value)
    if isinstance(value, Message):
        return _message_to_json(value, path)
    raise CelConversionError(
        message=f"unsupported CEL value of type {type(value).__name__}", path=path
    )


def _message_to_json(value: Message, path: str) -> Any:
    if isinstance(value, Omit):
        return OMIT
    if isinstance(value, Condition):
        return {key: str(getattr(value, key)) for key in ("type", "status", "reason", "message")}
    if isinstance(value, timestamp_pb2.Timestamp):
        return format_rfc3339(value.ToDatetime(tzinfo=dt.UTC))
    if isinstance(value, duration_pb2.Duration):
        return format_go_duration(value.ToTimedelta())
    text = opaque_text(value)
    if text is None:
        raise CelConversionError(
            message=f"unsupported CEL value of type {value.DESCRIPTOR.full_name}", path=path
        )
    return text


def format_rfc3339(value: dt.datetime) -> str:
    """metav1.Time's JSON form: RFC3339 in UTC, whole seconds."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_go_duration(value: dt.timedelta) -> str:
    """Go's time.Duration.String(): `1h0m0s`, `1m30s`, `1.5s`, `300ms`, `0s`."""
    total_us = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    return go_duration_from_ns(total_us * 1000)


def go_duration_from_ns(ns: int) -> str:
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if u >= size:
                return sign + _fraction(u, size) + unit
    hours, rest = divmod(u, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = _fraction(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")


# ------------------------------------------------------------------------------- input

_RFC3339: Final = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(Z|z|[+-]\d{2}:\d{2}))?$"
)
_GO_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NS: Final[Mapping[str, int]] = {
    "ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
    "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000,
}  # fmt: skip


def parse_timestamp(text: str) -> timestamp_pb2.Timestamp | None:
    """An RFC3339 date-time or a full date, as the engine's timestamp; None if malformed."""
    match = _RFC3339.match(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, frac, zone = match.groups()
    try:
        moment = dt.datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0),
            int(second or 0), tzinfo=dt.UTC,
        )  # fmt: skip
    except ValueError:
        return None
    offset = 0
    if zone and zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    seconds = int((moment - _EPOCH).total_seconds()) - offset
    nanos = int((frac or "0").ljust(9, "0"))
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


def parse_go_duration(text: str) -> duration_pb2.Duration | None:
    """A Go duration string (`1h30m`, `-1.5s`, `0`), as the engine's duration."""
    body = text
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return duration_pb2.Duration()
    if not body:
        return None
    total = 0
    pos = 0
    for match in _GO_DURATION_PART.finditer(body):
        if match.start() != pos:
            return None
        pos = match.end()
        number, unit = match.groups()
        whole, _, frac = number.partition(".")
        scale = _UNIT_NS[unit]
        total += int(whole or 0) * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)
    if pos != len(body):
        return None
    total *= sign
    seconds, nanos = divmod(abs(total), 1_000_000_000)
    if total < 0:
        return duration_pb2.Duration(seconds=-seconds, nanos=-nanos)
    return duration_pb2.Duration(seconds=seconds, nanos=nanos)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What to rewrite below one schema node; only nodes that lead to a format are kept."""

    leaf: str = ""  # "timestamp" | "duration" | "bytes"
    properties: tuple[tuple[str, _Plan], ...] = ()
    items: _Plan | None = None
    values: _Plan | None = None


def _plan(schema: Any, depth: int, seen: frozenset[int]) -> _Plan | None:
    if not isinstance(schema, Mapping) or depth > 64 or id(schema) in seen:
        return None
    if schema.get("x-kubernetes-int-or-string") or schema.get(
        "x-kubernetes-preserve-unknown-fields"
    ):
        return None
    kind = schema.get("type")
    if kind == "string":
        fmt = schema.get("format")
        leaf = {"date-time": "timestamp", "date": "timestamp", "duration": "duration"}.get(
            fmt or "", "bytes" if fmt == "byte" else ""
        )
        return _Plan(leaf=leaf) if leaf else None
    inner = seen | {id(schema)}
    if kind == "array":
        items = _plan(schema.get("items"), depth + 1, inner)
        return _Plan(items=items) if items else None
    properties = schema.get("properties")
    plans: list[tuple[str, _Plan]] = []
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            sub_plan = _plan(sub, depth + 1, inner)
            if sub_plan is not None:
                plans.append((name, sub_plan))
    values = _plan(schema.get("additionalProperties"), depth + 1, inner)
    if plans or values:
        return _Plan(properties=tuple(plans), values=values)
    return None


class InputConverter:
    """Schema-aware conversion of one variable's value before it is bound (C-34)."""

    __slots__ = ("_plan",)

    def __init__(self, schema: Mapping[str, Any] | None) -> None:
        self._plan = _plan(schema, 0, frozenset()) if schema is not None else None

    @property
    def is_identity(self) -> bool:
        return self._plan is None

    def convert(self, value: Any) -> Any:
        if self._plan is None:
            return value
        return _apply(self._plan, value)


def _apply(plan: _Plan, value: Any) -> Any:
    if plan.leaf:
        if not isinstance(value, str):
            return value
        converted: Any
        if plan.leaf == "timestamp":
            converted = parse_timestamp(value)
        elif plan.leaf == "duration":
            converted = parse_go_duration(value)
        else:
            try:
                converted = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                converted = None
        return value if converted is None else converted
    if isinstance(value, list):
        if plan.items is None:
            return value
        return [_apply(plan.items, v) for v in value]
    if isinstance(value, Mapping):
        out = dict(value)
        for name, sub in plan.properties:
            if name in out:
                out[name] = _apply(sub, out[name])
        if plan.values is not None:
            named = {name for name, _ in plan.properties}
            for key, item in out.items():
                if key not in named:
                    out[key] = _apply(plan.values, item)
        return out
    return value


def to_cel_value(value: Any) -> Any:
    """Make a Python value acceptable to the engine again (library results, re-bound data).

    The engine hands `datetime`/`timedelta` to Python but only takes protobuf timestamps and
    durations back; `bytearray` is normalised to `bytes`.
    """
    if isinstance(value, (str, int, float)) or value is None:
        return value
    if isinstance(value, dict):
        return {k: to_cel_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_cel_value(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dt.datetime):
        stamp = timestamp_pb2.Timestamp()
        stamp.FromDatetime(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
        return stamp
    if isinstance(value, dt.timedelta):
        span = duration_pb2.Duration()
        span.FromTimedelta(value)
        return span
    return value
