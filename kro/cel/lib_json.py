"""kro.cel.lib_json: `json.marshal(dyn)` and `json.unmarshal(string)` with Go's formatting.

Upstream converts to Go values and uses encoding/json (C-24, C-25), and the output ends up
in objects and hashes, so it must be byte-identical: keys sorted, no spaces, `<`, `>` and
`&` escaped as `\\u003c`..., whole doubles without `.0`, floats in Go's shortest form
(`1e+21`, `1e-7`), bytes as base64, timestamps RFC3339Nano, durations as nanoseconds.
unmarshal follows Go's `interface{}` decoding: every number is a double.

marshal is a Python walk (about 0.3 s for a 1.4 MB object), so it checks the evaluation's
time budget at every map and list it enters.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any, Final

from google.protobuf.message import Message

from kro.cel import budget
from kro.cel.library import Overload
from kro.cel.opaque import opaque_text

_HTML: Final = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                "\u2029": "\\u2029"}  # fmt: skip


def marshal(value: Any) -> str:
    return "".join(_encode(value))


def _encode(value: Any) -> list[str]:
    out: list[str] = []
    _write(value, out)
    return out


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(go_float(value))
    elif isinstance(value, str):
        out.append(go_string(value))
    elif isinstance(value, (bytes, bytearray)):
        out.append(go_string(base64.b64encode(bytes(value)).decode()))
    elif isinstance(value, dict):
        budget.enter("json.marshal")
        if not all(isinstance(k, str) for k in value):
            raise ValueError("json.marshal: map keys must be strings")
        out.append("{")
        for i, key in enumerate(sorted(value)):
            if i:
                out.append(",")
            out.append(go_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, list):
        budget.enter("json.marshal")
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    elif isinstance(value, dt.datetime):
        out.append(go_string(_rfc3339_nano(value)))
    elif isinstance(value, dt.timedelta):
        micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
        out.append(str(micros * 1000))
    elif isinstance(value, Message) and opaque_text(value) is not None:
        out.append(go_string(opaque_text(value) or ""))
    else:
        raise ValueError(f"json.marshal: unsupported type {type(value).__name__}")


def go_string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    if any(c in encoded for c in _HTML):
        for char, escape in _HTML.items():
            encoded = encoded.replace(char, escape)
    return encoded


def go_float(value: float) -> str:
    """encoding/json's float64 form: 'f' notation unless tiny or huge, then cleaned 'e'."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"json: unsupported value: {value}")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        text = repr(value)  # shortest round-trip digits, e.g. '1e-07', '1.5e+21'
        mantissa, _, exponent = text.partition("e")
        sign = exponent[0]
        digits = exponent[1:].lstrip("0") or "0"
        return f"{mantissa}e{sign}{digits}"
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _rfc3339_nano(value: dt.datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    value = value.astimezone(dt.UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def unmarshal(text: str) -> Any:
    try:
        return json.loads(text, parse_int=float, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ValueError(f"json.unmarshal failed to parse JSON: {_go_error(text, err)}") from None
    except _InvalidConstant as err:
        raise ValueError(f"json.unmarshal failed to parse JSON: {err}") from None


class _InvalidConstant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _InvalidConstant(f"invalid character {name[0]!r} looking for beginning of value")


def _go_error(text: str, err: json.JSONDecodeError) -> str:
    """Approximate encoding/json's error text for the common failure shapes."""
    if err.pos >= len(text.rstrip()):
        return "unexpected end of JSON input"
    char = text[err.pos]
    quoted = f"'{char}'"
    if err.msg.startswith("Extra data"):
        return f"invalid character {quoted} after top-level value"
    if err.msg.startswith("Expecting property name"):
        return f"invalid character {quoted} looking for beginning of object key string"
    if err.msg.startswith("Expecting ':'"):
        return f"invalid character {quoted} after object key"
    if err.msg.startswith("Expecting ',' delimiter"):
        inside_object = text.rfind("{", 0, err.pos) > text.rfind("[", 0, err.pos)
        where = "object key:value pair" if inside_object else "array element"
        return f"invalid character {quoted} after {where}"
    return f"invalid character {quoted} looking for beginning of value"


OVERLOADS: Final = (
    Overload("json.marshal", "json_marshal_dyn", ("dyn",), "string", marshal),
    Overload("json.unmarshal", "json_unmarshal_string", ("string",), "dyn", unmarshal),
)
