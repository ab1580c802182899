"""kro.cel.lib_quantity: the Kubernetes quantity library (`quantity("512Mi")`, comparisons,
arithmetic, conversions), as in k8s.io/apiserver/pkg/cel/library/quantity.go.

A quantity is held exactly (a Fraction) and carried through the engine as its canonical
string, computed like `resource.Quantity.String()`: binary suffixes stay binary when the
value is a whole multiple of 1024 (`1024Mi` -> `1Gi`), decimal values use the largest SI
suffix that keeps an integer mantissa (`1500m` stays, `1000` -> `1k`), and values are
rounded up to nano precision like resource.Quantity.

Parsing is linear in the input (the shape is matched with RE2: Python's backtracking `re`
takes seconds on a crafted 40 KB string) and never builds a huge number: like
resource.ParseQuantity, magnitudes above MaxInt64 are capped to it, and an exponent that
puts the value out of that range or below one nano is recognised before `10**exponent` is
computed (`quantity("1e9999999")` would otherwise take minutes).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Literal

import re2
from google.protobuf.message import Message

from kro.cel.library import Overload
from kro.cel.opaque import Quantity, make, text_of

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

_BINARY: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
                   "E": 18}  # fmt: skip
_DECIMAL_BY_EXP: Final = {v: k for k, v in _DECIMAL.items()}
_SHAPE: Final = re2.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_NUMBER: Final = re2.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")
_EXPONENT: Final = re2.compile(r"^[eE]([-+]?[0-9]+)$")
FORMAT_WRONG: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_MAX_INT64: Final = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class Amount:
    value: Fraction
    format: Format


@functools.lru_cache(maxsize=1024)
def parse(text: str) -> Amount:
    """resource.ParseQuantity; raises ValueError with its error texts."""
    match = _SHAPE.match(text.strip()) if text.strip() == text else None
    if match is None or not text:
        raise ValueError(FORMAT_WRONG)
    number, suffix = match.groups()
    if not _NUMBER.match(number):
        raise ValueError("unable to parse numeric part of quantity")
    base = Fraction(number.lstrip("+"))
    fmt: Format
    if suffix in _BINARY:
        value, fmt = base * (1 << _BINARY[suffix]), "BinarySI"
    elif suffix in _DECIMAL:
        value, fmt = _scale(base, _DECIMAL[suffix], len(number)), "DecimalSI"
    else:
        exponent = _EXPONENT.match(suffix)
        if exponent is None:
            raise ValueError("unable to parse quantity's suffix")
        value = _scale(base, int(exponent.group(1)), len(number))
        fmt = "DecimalExponent"
    # resource.Quantity keeps nano precision, rounding away from zero.
    scaled = value * 10**9
    if scaled.denominator != 1:
        rounded = math.ceil(abs(scaled))
        value = Fraction(rounded if value > 0 else -rounded, 10**9)
    if abs(value) > _MAX_INT64:  # ParseQuantity: "The max is just a simple cap."
        value = Fraction(_MAX_INT64 if value > 0 else -_MAX_INT64)
    return Amount(value, fmt)


def _scale(base: Fraction, power: int, digits: int) -> Fraction:
    """`base * 10**power`, where `base` was written with `digits` characters.

    A non-zero base lies in [10**-digits, 10**digits), so a power above digits + 19 puts the
    value beyond MaxInt64 (capped by the caller) and one below -(digits + 10) under one nano
    (rounded up to it by the caller): both are answered without computing `10**power`.
    """
    if base == 0:
        return base
    if power > digits + 19:
        return Fraction(2 * _MAX_INT64 if base > 0 else -2 * _MAX_INT64)
    if power < -(digits + 10):
        return Fraction(1 if base > 0 else -1, 10**10)
    return base * Fraction(10) ** power


def canonical(amount: Amount) -> str:
    """resource.Quantity.String()."""
    value, fmt = amount.value, amount.format
    if value == 0:
        return "0"
    if fmt == "BinarySI":
        if -1024 < value < 1024 or value.denominator != 1:
            fmt = "DecimalSI"
        else:
            mantissa, exponent = int(value), 0
            while exponent < 60 and mantissa % 1024 == 0:
                mantissa //= 1024
                exponent += 10
            suffix = next(k for k, v in _BINARY.items() if v == exponent) if exponent else ""
            return f"{mantissa}{suffix}"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    # After parse(), every value is a whole number of nano units.
    exponent = -9
    mantissa = int(magnitude * 10**9)
    while mantissa % 10 == 0 and mantissa:
        mantissa //= 10
        exponent += 1
    if fmt == "DecimalSI":
        exponent_cap = 18
        while exponent % 3 != 0 or exponent > exponent_cap:
            mantissa *= 10
            exponent -= 1
        return f"{sign}{mantissa}{_DECIMAL_BY_EXP[exponent]}"
    while exponent % 3 != 0:
        mantissa *= 10
        exponent -= 1
    return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")


def _wrap(amount: Amount) -> Message:
    return make(Quantity, value=canonical(amount))


def _read(value: Message) -> Amount:
    return parse(text_of(value))


def quantity(text: str) -> Message:
    return _wrap(parse(text))


def is_quantity(text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


def compare_to(left: Message, right: Message) -> int:
    a, b = _read(left).value, _read(right).value
    return (a > b) - (a < b)


def is_less_than(left: Message, right: Message) -> bool:
    return compare_to(left, right) < 0


def is_greater_than(left: Message, right: Message) -> bool:
    return compare_to(left, right) > 0


def _combine(left: Message, right: Message | int, sign: int) -> Message:
    a = _read(left)
    b = Fraction(right) if isinstance(right, int) else _read(right).value
    fmt = a.format
    if a.value == 0 and not isinstance(right, int):
        fmt = _read(right).format
    return _wrap(Amount(a.value + sign * b, fmt))


def add(left: Message, right: Message | int) -> Message:
    return _combine(left, right, 1)


def sub(left: Message, right: Message | int) -> Message:
    return _combine(left, right, -1)


def is_integer(value: Message) -> bool:
    v = _read(value).value
    return v.denominator == 1 and -_MAX_INT64 - 1 <= v <= _MAX_INT64


def as_integer(value: Message) -> int:
    if not is_integer(value):
        raise ValueError("cannot convert value to integer")
    return int(_read(value).value)


def as_approximate_float(value: Message) -> float:
    return float(_read(value).value)


def sign(value: Message) -> int:
    v = _read(value).value
    return (v > 0) - (v < 0)


_Q: Final = "kubernetes.Quantity"
OVERLOADS: Final = (
    Overload("quantity", "string_to_quantity", ("string",), _Q, quantity),
    Overload("isQuantity", "is_quantity_string", ("string",), "bool", is_quantity),
    Overload("sign", "quantity_sign", (_Q,), "int", sign, True),
    Overload("isGreaterThan", "quantity_is_greater_than", (_Q, _Q), "bool", is_greater_than, True),
    Overload("isLessThan", "quantity_is_less_than", (_Q, _Q), "bool", is_less_than, True),
    Overload("compareTo", "quantity_compare_to", (_Q, _Q), "int", compare_to, True),
    Overload("add", "quantity_add", (_Q, _Q), _Q, add, True),
    Overload("add", "quantity_add_int", (_Q, "int"), _Q, add, True),
    Overload("sub", "quantity_sub", (_Q, _Q), _Q, sub, True),
    Overload("sub", "quantity_sub_int", (_Q, "int"), _Q, sub, True),
    Overload("isInteger", "quantity_is_integer", (_Q,), "bool", is_integer, True),
    Overload("asInteger", "quantity_as_integer", (_Q,), "int", as_integer, True),
    Overload("asApproximateFloat", "quantity_as_float", (_Q,), "double", as_approximate_float,
             True),
)  # fmt: skip
