"""Go parsing rules (`strconv`, `strings.TrimSpace`, `%T`) that SimpleSchema inherits from kro.

Python's `int()`, `float()`, `bool` and `str.strip()` accept different inputs (`"1_000"`,
`" 5 "`, `"\\x1c"` as space); an RGD must be accepted or rejected exactly as upstream does, so
marker values go through these instead. Error texts mimic Go's (`strconv.ParseInt: parsing
"x": invalid syntax`) because upstream wraps them into its messages with `%w`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Final

from kro.graph.template.quote import go_quote

# unicode.IsSpace: Latin-1 spaces plus the White_Space property (Python's isspace() also
# counts U+001C..U+001F, Go does not).
_GO_SPACE: Final = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)

_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1

_DECIMAL_INT: Final = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL_FLOAT: Final = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_HEX_FLOAT: Final = re.compile(
    r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+\Z"
)
_SPECIAL_FLOAT: Final = re.compile(r"([+-]?(inf|infinity)|nan)\Z", re.IGNORECASE)


class StrconvError(ValueError):
    """A value Go's strconv would reject; str() is Go's error text."""


def is_space(ch: str) -> bool:
    return ch in _GO_SPACE


def trim_space(text: str) -> str:
    """strings.TrimSpace."""
    start, end = 0, len(text)
    while start < end and text[start] in _GO_SPACE:
        start += 1
    while end > start and text[end - 1] in _GO_SPACE:
        end -= 1
    return text[start:end]


def _syntax(func: str, text: str) -> StrconvError:
    return StrconvError(f"strconv.{func}: parsing {go_quote(text)}: invalid syntax")


def _range(func: str, text: str) -> StrconvError:
    return StrconvError(f"strconv.{func}: parsing {go_quote(text)}: value out of range")


def parse_bool(text: str) -> bool:
    """strconv.ParseBool: 1/t/T/TRUE/true/True and 0/f/F/FALSE/false/False only."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _syntax("ParseBool", text)


def parse_int(text: str) -> int:
    """strconv.ParseInt(text, 10, 64): optional sign, ASCII digits, int64 range."""
    if not _DECIMAL_INT.match(text):
        raise _syntax("ParseInt", text)
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise _range("ParseInt", text)
    return value


def parse_float(text: str) -> float:
    """strconv.ParseFloat(text, 64), restricted to finite results.

    Go accepts `inf`/`nan`, but JSON (and so a CRD) cannot carry them; upstream would only fail
    later when the CRD is serialised, so they are rejected here with a range error.
    """
    if _SPECIAL_FLOAT.match(text):
        raise _range("ParseFloat", text)
    if _DECIMAL_FLOAT.match(text):
        value = float(text)
    elif _HEX_FLOAT.match(text):
        try:
            value = float.fromhex(text)
        except OverflowError:
            raise _range("ParseFloat", text) from None
    else:
        raise _syntax("ParseFloat", text)
    if not math.isfinite(value):
        raise _range("ParseFloat", text)
    return value


def go_type_name(value: object) -> str:
    """Go's `%T` of the value as upstream sees it after decoding the RGD's JSON into `any`
    (every JSON number is a float64), for `unexpected type: <go type>` messages."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, list | tuple):
        return "[]interface {}"
    return type(value).__name__
