"""_engine_compat.ast_decode: the engine's serialized expression tree, decoded.

cel-expr-python 0.1.3 exposes the parsed or checked AST only as bytes (`Expression.serialize()`:
a `google.protobuf.Any` wrapping `cel.expr.CheckedExpr` or `cel.expr.ParsedExpr`). The protobuf
runtime parses them with the message classes of `protos`; this module turns the messages into
`kro.cel.checked_ast` nodes, once per compile, never per evaluation.
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf import any_pb2

from kro.cel._engine_compat.protos import CheckedExpr, ParsedExpr
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

_EMPTY: Final = Node(0, Unknown())
_CONSTANT_FIELDS: Final = frozenset(
    {"bool_value", "int64_value", "uint64_value", "double_value", "string_value", "bytes_value"}
)


def decode(serialized: bytes, *, with_positions: bool = False) -> Tree:
    """Decode `Expression.serialize()` output (Any of CheckedExpr or ParsedExpr).

    Source positions are only read on request (converting them costs as much as the tree).
    """
    wrapper = any_pb2.Any.FromString(serialized)
    checked = wrapper.type_url.endswith("CheckedExpr")
    message = (CheckedExpr if checked else ParsedExpr).FromString(wrapper.value)
    root = _expr(message.expr) if message.HasField("expr") else _EMPTY
    positions = dict(message.source_info.positions) if with_positions else {}
    return Tree(root=root, positions=positions, checked=checked)


def _expr(expr: Any) -> Node:
    kind = expr.WhichOneof("expr_kind")
    if kind == "select_expr":
        select = expr.select_expr
        return Node(expr.id, Select(_expr(select.operand), select.field, select.test_only))
    if kind == "ident_expr":
        return Node(expr.id, Ident(expr.ident_expr.name))
    if kind == "call_expr":
        call = expr.call_expr
        target = _expr(call.target) if call.HasField("target") else None
        return Node(expr.id, Call(call.function, target, tuple(_expr(a) for a in call.args)))
    if kind == "const_expr":
        return Node(expr.id, _const(expr.const_expr))
    if kind == "list_expr":
        return Node(expr.id, ListLit(tuple(_expr(e) for e in expr.list_expr.elements)))
    if kind == "struct_expr":
        return Node(expr.id, _struct(expr.struct_expr))
    if kind == "comprehension_expr":
        return Node(expr.id, _comprehension(expr.comprehension_expr))
    return Node(expr.id, Unknown())


def _const(constant: Any) -> Const:
    kind = constant.WhichOneof("constant_kind")
    return Const(getattr(constant, kind) if kind in _CONSTANT_FIELDS else None)


def _struct(struct: Any) -> StructLit:
    entries = tuple(
        Entry(
            entry.id,
            entry.field_key,
            _expr(entry.map_key) if entry.HasField("map_key") else None,
            _expr(entry.value) if entry.HasField("value") else _EMPTY,
        )
        for entry in struct.entries
    )
    return StructLit(struct.message_name, entries)


def _comprehension(loop: Any) -> Comprehension:
    def part(name: str) -> Node:
        return _expr(getattr(loop, name)) if loop.HasField(name) else _EMPTY

    return Comprehension(
        iter_var=loop.iter_var,
        iter_var2=loop.iter_var2,
        accu_var=loop.accu_var,
        iter_range=part("iter_range"),
        accu_init=part("accu_init"),
        loop_condition=part("loop_condition"),
        loop_step=part("loop_step"),
        result=part("result"),
    )
