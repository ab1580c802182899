"""_engine_compat.wire: the protobuf wire format, read and written without generated classes.

cel-expr-python hands out expressions only as serialized `cel.expr.CheckedExpr` bytes and
takes them back the same way (`Env.deserialize`). `checked_ast` reads those bytes into Python
nodes; `instrument` rewrites a few nodes and writes the message back. Both need nothing more
than length-delimited fields and varints, so this module is that and no more (groups, which
cel.expr never uses, are refused).

A field is a `(number, wire type, value)` triple: the value is an int for varints and the raw
bytes for every other wire type, so an unmodified field re-encodes byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

Field = tuple[int, int, int | bytes]

VARINT: Final = 0
FIXED64: Final = 1
LENGTH_DELIMITED: Final = 2
FIXED32: Final = 5


def read_fields(buf: bytes) -> list[Field]:
    """(field number, wire type, value) for one message's bytes, in order.

    A list and inlined one-byte varints rather than a generator: decoding is most of the
    cost of a compile after the engine's own work.
    """
    out: list[Field] = []
    i, n = 0, len(buf)
    while i < n:
        key = buf[i]
        i += 1
        if key >= 0x80:
            key, i = varint_rest(buf, i, key)
        wire = key & 7
        if wire == LENGTH_DELIMITED:
            size = buf[i]
            i += 1
            if size >= 0x80:
                size, i = varint_rest(buf, i, size)
            out.append((key >> 3, LENGTH_DELIMITED, buf[i : i + size]))
            i += size
        elif wire == VARINT:
            value = buf[i]
            i += 1
            if value >= 0x80:
                value, i = varint_rest(buf, i, value)
            out.append((key >> 3, VARINT, value))
        elif wire == FIXED64:
            out.append((key >> 3, FIXED64, buf[i : i + 8]))
            i += 8
        elif wire == FIXED32:
            out.append((key >> 3, FIXED32, buf[i : i + 4]))
            i += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return out


def varint_rest(buf: bytes, i: int, first: int) -> tuple[int, int]:
    """The rest of a varint whose first byte (`first`, already consumed) had the high bit."""
    result, shift = first & 0x7F, 7
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def encode_varint(value: int) -> bytes:
    """A non-negative integer as a varint (negative int64s arrive as their uint64 form)."""
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def encode_field(number: int, wire: int, value: int | bytes) -> bytes:
    key = encode_varint(number << 3 | wire)
    if isinstance(value, int):
        return key + encode_varint(value)
    if wire == LENGTH_DELIMITED:
        return key + encode_varint(len(value)) + value
    return key + value  # fixed32 / fixed64: the raw little-endian bytes


def encode_fields(fields: Iterable[Field]) -> bytes:
    return b"".join(encode_field(number, wire, value) for number, wire, value in fields)
