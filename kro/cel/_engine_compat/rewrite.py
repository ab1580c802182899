"""_engine_compat.rewrite: building and rewriting serialized expression trees (`cel.expr.Expr`).

The engine takes a checked expression back only as bytes (`Env.deserialize`), so every change
kro makes to a program between checking and evaluating it (`lowering` for semantics the
engine lacks, `optionals` for results it cannot hand over, `instrument` for budget hooks) is
a rewrite of those bytes. This module holds what they share: node builders, a post-order
transform, renumbering, and access to the expression inside a serialized `CheckedExpr`.

New nodes take fresh ids above every id of the tree (`Ids`): the checker's reference and type
maps are keyed by id, and a new node must not inherit an entry meant for another one. The
engine plans nodes without entries by name, as it does unchecked expressions.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Final

from kro.cel._engine_compat.wire import (
    FIXED64,
    LENGTH_DELIMITED,
    VARINT,
    Field,
    encode_field,
    encode_fields,
    read_fields,
)

# cel.expr.Expr: id and the kind oneof.
ID, CONST, IDENT, SELECT, CALL, LIST, STRUCT, COMPREHENSION = 2, 3, 4, 5, 6, 7, 8, 9
# Fields of the kinds that hold Exprs.
CALL_TARGET, CALL_FUNCTION, CALL_ARGS = 1, 2, 3
SELECT_OPERAND, SELECT_FIELD, SELECT_TEST_ONLY = 1, 2, 3
LIST_ELEMENTS = 1
STRUCT_ENTRIES, ENTRY_ID, ENTRY_KEY, ENTRY_VALUE = 2, 1, 3, 4
ITER_VAR, ITER_RANGE, ACCU_VAR, ACCU_INIT, LOOP_CONDITION, LOOP_STEP, RESULT, ITER_VAR2 = (
    1, 2, 3, 4, 5, 6, 7, 8,
)  # fmt: skip
_CHILD_EXPRS: Final = {
    SELECT: (SELECT_OPERAND,),
    CALL: (CALL_TARGET, CALL_ARGS),
    LIST: (LIST_ELEMENTS,),
    COMPREHENSION: (ITER_RANGE, ACCU_INIT, LOOP_CONDITION, LOOP_STEP, RESULT),
}
# google.protobuf.Any, and the Expr fields of cel.expr.CheckedExpr and cel.expr.ParsedExpr.
_ANY_TYPE_URL, _ANY_VALUE, _CHECKED_EXPR, _PARSED_EXPR = 1, 2, 4, 2
# The iteration variable cel.bind expands to (never readable from source).
UNUSED_VAR: Final = "#unused"

Hook = Callable[[int, int, bytes], bytes | None]
"""(node id, kind field number, kind payload with children rewritten) -> a replacement Expr."""


class Ids:
    """Fresh node ids, above every id the checker assigned."""

    __slots__ = ("last",)

    def __init__(self, last: int) -> None:
        self.last = last

    def next(self) -> int:
        self.last += 1
        return self.last


# ----------------------------------------------------------------------------- access


def root_expr(serialized: bytes) -> bytes:
    """The Expr of a serialized (Any-wrapped) CheckedExpr or ParsedExpr."""
    fields = {n: v for n, _, v in read_fields(serialized) if isinstance(v, bytes)}
    checked = fields.get(_ANY_TYPE_URL, b"").endswith(b"CheckedExpr")
    wanted = _CHECKED_EXPR if checked else _PARSED_EXPR
    for number, _, expr in read_fields(fields.get(_ANY_VALUE, b"")):
        if number == wanted and isinstance(expr, bytes):
            return expr
    return b""


def replace_root(serialized: bytes, rewrite: Callable[[bytes], bytes]) -> bytes:
    """`serialized` with its Expr passed through `rewrite` (maps and source info kept)."""

    def checked(number: int, value: bytes) -> bytes:
        return rewrite(value) if number == _CHECKED_EXPR else value

    def any_value(number: int, value: bytes) -> bytes:
        return map_fields(value, checked) if number == _ANY_VALUE else value

    return map_fields(serialized, any_value)


def map_fields(buf: bytes, rewrite: Callable[[int, bytes], bytes]) -> bytes:
    """The message `buf` with each length-delimited field passed through `rewrite`."""
    return encode_fields(
        (n, w, rewrite(n, v) if isinstance(v, bytes) else v) for n, w, v in read_fields(buf)
    )


def max_id(expr: bytes) -> int:
    """The largest node or map-entry id below `expr`."""
    largest = 0

    def visit(node_id: int, kind: int, payload: bytes) -> None:
        nonlocal largest
        largest = max(largest, node_id)
        if kind == STRUCT:
            for number, _, entry in read_fields(payload):
                if number == STRUCT_ENTRIES and isinstance(entry, bytes):
                    largest = max(largest, _entry_id(entry))

    transform(expr, visit)
    return largest


def _entry_id(entry: bytes) -> int:
    for number, _, value in read_fields(entry):
        if number == ENTRY_ID and isinstance(value, int):
            return value
    return 0


# ------------------------------------------------------------------------- transform


def transform(expr: bytes, hook: Hook) -> bytes:
    """Rewrite `expr` bottom-up: children first, then `hook` may replace the node."""
    fields = read_fields(expr)
    ident = 0
    out: list[Field] = []
    kind, payload = 0, b""
    for number, wire, value in fields:
        if number == ID and isinstance(value, int):
            ident = value
            out.append((number, wire, value))
        elif number != ID and isinstance(value, bytes):
            kind = number
            payload = _children(number, value, hook)
            out.append((number, wire, payload))
        else:
            out.append((number, wire, value))
    replacement = hook(ident, kind, payload)
    return encode_fields(out) if replacement is None else replacement


def _children(kind: int, payload: bytes, hook: Hook) -> bytes:
    if kind == STRUCT:
        return map_fields(
            payload,
            lambda n, v: (
                map_fields(v, lambda m, w: _entry_part(m, w, hook)) if n == STRUCT_ENTRIES else v
            ),
        )
    fields = _CHILD_EXPRS.get(kind)
    if fields is None:
        return payload
    return map_fields(payload, lambda n, v: transform(v, hook) if n in fields else v)


def _entry_part(number: int, value: bytes, hook: Hook) -> bytes:
    return transform(value, hook) if number in (ENTRY_KEY, ENTRY_VALUE) else value


def renumber(expr: bytes, offset: int) -> bytes:
    """`expr` with every node and map-entry id moved up by `offset` (for splicing a tree
    compiled elsewhere into another one)."""

    def hook(ident: int, kind: int, payload: bytes) -> bytes:
        if kind == STRUCT:
            payload = encode_fields(
                (n, w, _shift_entry(v, offset) if n == STRUCT_ENTRIES and isinstance(v, bytes)
                 else v)
                for n, w, v in read_fields(payload)
            )  # fmt: skip
        return expr_of(ident + offset, kind, payload)

    return transform(expr, hook)


def _shift_entry(entry: bytes, offset: int) -> bytes:
    return encode_fields(
        (n, w, v + offset if n == ENTRY_ID and isinstance(v, int) else v)
        for n, w, v in read_fields(entry)
    )


# --------------------------------------------------------------------------- builders


def expr_of(ident: int, kind: int, payload: bytes) -> bytes:
    return encode_fields([(ID, VARINT, ident), (kind, LENGTH_DELIMITED, payload)])


def call(ids: Ids, function: str, args: Sequence[bytes] = (), target: bytes | None = None) -> bytes:
    """An Expr calling `function` (a member call when `target` is given)."""
    parts: list[Field] = []
    if target is not None:
        parts.append((CALL_TARGET, LENGTH_DELIMITED, target))
    parts.append((CALL_FUNCTION, LENGTH_DELIMITED, function.encode()))
    parts += [(CALL_ARGS, LENGTH_DELIMITED, a) for a in args]
    return expr_of(ids.next(), CALL, encode_fields(parts))


def ident(ids: Ids, name: str) -> bytes:
    return expr_of(ids.next(), IDENT, encode_field(1, LENGTH_DELIMITED, name.encode()))


def const_string(ids: Ids, text: str) -> bytes:
    return expr_of(ids.next(), CONST, encode_field(6, LENGTH_DELIMITED, text.encode()))


def const_bool(ids: Ids, value: bool) -> bytes:
    return expr_of(ids.next(), CONST, encode_field(2, VARINT, int(value)))


def const_int(ids: Ids, value: int) -> bytes:
    return expr_of(ids.next(), CONST, encode_field(3, VARINT, value & ((1 << 64) - 1)))


def const_uint(ids: Ids, value: int) -> bytes:
    return expr_of(ids.next(), CONST, encode_field(4, VARINT, value))


def const_double(ids: Ids, value: float) -> bytes:
    return expr_of(ids.next(), CONST, encode_field(5, FIXED64, struct.pack("<d", value)))


def empty_list(ids: Ids) -> bytes:
    return expr_of(ids.next(), LIST, b"")


def list_of(ids: Ids, elements: Sequence[bytes]) -> bytes:
    payload = encode_fields((LIST_ELEMENTS, LENGTH_DELIMITED, e) for e in elements)
    return expr_of(ids.next(), LIST, payload)


def bind(ids: Ids, name: str, init: bytes, body: bytes) -> bytes:
    """`cel.bind(name, init, body)` as the parser expands it."""
    parts: list[Field] = [
        (ITER_VAR, LENGTH_DELIMITED, UNUSED_VAR.encode()),
        (ITER_RANGE, LENGTH_DELIMITED, empty_list(ids)),
        (ACCU_VAR, LENGTH_DELIMITED, name.encode()),
        (ACCU_INIT, LENGTH_DELIMITED, init),
        (LOOP_CONDITION, LENGTH_DELIMITED, const_bool(ids, False)),
        (LOOP_STEP, LENGTH_DELIMITED, ident(ids, name)),
        (RESULT, LENGTH_DELIMITED, body),
    ]
    return expr_of(ids.next(), COMPREHENSION, encode_fields(parts))


def call_parts(payload: bytes) -> tuple[str, bytes | None, list[bytes]]:
    """(function, target, args) of a Call payload."""
    function, target, args = "", None, []
    for number, _, value in read_fields(payload):
        if not isinstance(value, bytes):
            continue
        if number == CALL_FUNCTION:
            function = value.decode()
        elif number == CALL_TARGET:
            target = value
        elif number == CALL_ARGS:
            args.append(value)
    return function, target, args
