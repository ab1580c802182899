"""_engine_compat.ast_decode: the engine's serialized expression tree, decoded.

cel-expr-python 0.1.3 exposes the parsed or checked AST only as bytes (`Expression.serialize()`:
a `google.protobuf.Any` wrapping `cel.expr.CheckedExpr` or `cel.expr.ParsedExpr`), and neither
it nor any dependency ships Python classes for those protos, so this module reads the protobuf
wire format directly (`wire`) into `kro.cel.checked_ast` nodes.
"""

from __future__ import annotations

import struct

from kro.cel._engine_compat.wire import read_fields as _fields
from kro.cel._engine_compat.wire import varint_rest as _varint_rest
from kro.cel.checked_ast import (
    Call,
    Comprehension,
    Const,
    Entry,
    Ident,
    ListLit,
    Node,
    Select,
    StructLit,
    Tree,
    Unknown,
)

# cel.expr.Expr oneof field numbers.
_CONST, _IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 3, 4, 5, 6, 7, 8, 9


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: int | bytes) -> str:
    assert isinstance(value, bytes)
    return value.decode()


def _blob(value: int | bytes) -> bytes:
    assert isinstance(value, bytes)
    return value


def decode(serialized: bytes, *, with_positions: bool = False) -> Tree:
    """Decode `Expression.serialize()` output (Any of CheckedExpr or ParsedExpr).

    Source positions are only decoded on request (they cost as much as the tree itself).
    """
    type_url, payload = "", b""
    for number, _, value in _fields(serialized):
        if number == 1:
            type_url = _text(value)
        elif number == 2:
            payload = _blob(value)
    checked = type_url.endswith("CheckedExpr")
    expr_field, info_field = (4, 5) if checked else (2, 3)
    wanted = _messages(payload, (expr_field, info_field) if with_positions else (expr_field,))
    expr, info = wanted.get(expr_field), wanted.get(info_field)
    root = _expr(expr) if expr is not None else Node(0, Unknown())
    positions = _positions(info) if info is not None else {}
    return Tree(root=root, positions=positions, checked=checked)


def _messages(buf: bytes, numbers: tuple[int, ...]) -> dict[int, bytes]:
    """The last value of each length-delimited field in `numbers`; other fields (a checked
    expression's reference and type maps, most of its bytes) are skipped without copying."""
    out: dict[int, bytes] = {}
    i, n = 0, len(buf)
    while i < n:
        key = buf[i]
        i += 1
        if key >= 0x80:
            key, i = _varint_rest(buf, i, key)
        wire = key & 7
        if wire == 2:
            size = buf[i]
            i += 1
            if size >= 0x80:
                size, i = _varint_rest(buf, i, size)
            if key >> 3 in numbers:
                out[key >> 3] = buf[i : i + size]
            i += size
        elif wire == 0:
            value = buf[i]
            i += 1
            if value >= 0x80:
                _, i = _varint_rest(buf, i, value)
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:  # groups are never used by cel.expr protos
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return out


def _positions(source_info: bytes) -> dict[int, int]:
    out: dict[int, int] = {}
    for number, _, value in _fields(source_info):
        if number == 4:
            key = pos = 0
            for n, _, v in _fields(_blob(value)):
                if n == 1:
                    key = int(v)
                elif n == 2:
                    pos = int(v)
            out[key] = pos
    return out


def _expr(buf: bytes) -> Node:
    node_id = 0
    kind: Const | Ident | Select | Call | ListLit | StructLit | Comprehension | Unknown = Unknown()
    for number, _, value in _fields(buf):
        if number == 2:
            node_id = int(value)
        elif number == _SELECT:
            kind = _select(_blob(value))
        elif number == _IDENT:
            kind = Ident(next((_text(v) for n, _, v in _fields(_blob(value)) if n == 1), ""))
        elif number == _CALL:
            kind = _call(_blob(value))
        elif number == _CONST:
            kind = _const(_blob(value))
        elif number == _LIST:
            kind = ListLit(tuple(_expr(_blob(v)) for n, _, v in _fields(_blob(value)) if n == 1))
        elif number == _STRUCT:
            kind = _struct(_blob(value))
        elif number == _COMPREHENSION:
            kind = _comprehension(_blob(value))
    return Node(node_id, kind)


def _select(buf: bytes) -> Select:
    operand: Node = Node(0, Unknown())
    name, test_only = "", False
    for number, _, value in _fields(buf):
        if number == 1:
            operand = _expr(_blob(value))
        elif number == 2:
            name = _text(value)
        elif number == 3:
            test_only = bool(value)
    return Select(operand, name, test_only)


def _call(buf: bytes) -> Call:
    target: Node | None = None
    function = ""
    args: list[Node] = []
    for number, _, value in _fields(buf):
        if number == 1:
            target = _expr(_blob(value))
        elif number == 2:
            function = _text(value)
        elif number == 3:
            args.append(_expr(_blob(value)))
    return Call(function, target, tuple(args))


def _const(buf: bytes) -> Const:
    for number, wire, value in _fields(buf):
        if number == 2:
            return Const(bool(value))
        if number in (3, 4):
            return Const(_signed(int(value)) if number == 3 else int(value))
        if number == 5 and wire == 1:
            return Const(struct.unpack("<d", _blob(value))[0])
        if number == 6:
            return Const(_text(value))
        if number == 7:
            return Const(_blob(value))
    return Const(None)


def _struct(buf: bytes) -> StructLit:
    name = ""
    entries: list[Entry] = []
    for number, _, value in _fields(buf):
        if number == 1:
            name = _text(value)
        elif number == 2:
            entry_id, field_key, key, val = 0, "", None, Node(0, Unknown())
            for n, _, v in _fields(_blob(value)):
                if n == 1:
                    entry_id = int(v)
                elif n == 2:
                    field_key = _text(v)
                elif n == 3:
                    key = _expr(_blob(v))
                elif n == 4:
                    val = _expr(_blob(v))
            entries.append(Entry(entry_id, field_key, key, val))
    return StructLit(name, tuple(entries))


def _comprehension(buf: bytes) -> Comprehension:
    names = {1: "", 3: "", 8: ""}
    exprs: dict[int, Node] = {}
    for number, _, value in _fields(buf):
        if number in names:
            names[number] = _text(value)
        else:
            exprs[number] = _expr(_blob(value))
    empty = Node(0, Unknown())
    return Comprehension(
        iter_var=names[1],
        iter_var2=names[8],
        accu_var=names[3],
        iter_range=exprs.get(2, empty),
        accu_init=exprs.get(4, empty),
        loop_condition=exprs.get(5, empty),
        loop_step=exprs.get(6, empty),
        result=exprs.get(7, empty),
    )
