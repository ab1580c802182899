"""kro.cel.checked_ast: an expression tree as kro reads it.

The engine's checked (or parsed) expression, as Python nodes: `Tree` with a root `Node` whose
`kind` is a literal, identifier, selection, call, list or map literal, or comprehension.
`kro.cel._engine_compat.ast_decode` builds it from the engine's serialized form, once per
compile, never per evaluation.

Readers: `deps` walks these nodes for dependency paths, `engine` for the functions an
expression calls, `lib_conditions` for the `runtime.newCondition` literal rules, kro.graph's
cost estimator for comprehensions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Const:
    """A literal; `value` is None for `null` and for constant kinds kro never writes."""

    value: object


@dataclass(frozen=True, slots=True)
class Ident:
    name: str


@dataclass(frozen=True, slots=True)
class Select:
    """`operand.field`, or `has(operand.field)` when test_only."""

    operand: Node
    field: str
    test_only: bool


@dataclass(frozen=True, slots=True)
class Call:
    """A function or operator call; `target` is the receiver of a member call.

    In a checked tree namespaced functions are resolved (`random.seededString`, no target);
    in a parsed-only tree they still look like a member call on an identifier.
    """

    function: str
    target: Node | None
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class ListLit:
    elements: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Entry:
    """A map literal entry (`key` set) or a message field initialiser (`field_key` set)."""

    id: int
    field_key: str
    key: Node | None
    value: Node


@dataclass(frozen=True, slots=True)
class StructLit:
    """A map literal (`message_name` empty) or a message literal."""

    message_name: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Comprehension:
    """A macro expansion (map/filter/all/exists/cel.bind/...); the variables scope the body."""

    iter_var: str
    iter_var2: str
    accu_var: str
    iter_range: Node
    accu_init: Node
    loop_condition: Node
    loop_step: Node
    result: Node


@dataclass(frozen=True, slots=True)
class Unknown:
    """An expression kind this decoder does not model (never produced by kro's syntax)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One expression: its id (the key of `positions`) and its kind."""

    id: int
    kind: Const | Ident | Select | Call | ListLit | StructLit | Comprehension | Unknown


@dataclass(frozen=True, slots=True)
class Tree:
    """A decoded expression: the root node and the source offset of every node id."""

    root: Node
    positions: dict[int, int] = field(default_factory=dict)
    checked: bool = False


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, parents before children."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def children(node: Node) -> list[Node]:
    kind = node.kind
    if isinstance(kind, Select):
        return [kind.operand]
    if isinstance(kind, Call):
        return ([kind.target] if kind.target is not None else []) + list(kind.args)
    if isinstance(kind, ListLit):
        return list(kind.elements)
    if isinstance(kind, StructLit):
        out: list[Node] = []
        for entry in kind.entries:
            if entry.key is not None:
                out.append(entry.key)
            out.append(entry.value)
        return out
    if isinstance(kind, Comprehension):
        return [
            kind.iter_range,
            kind.accu_init,
            kind.loop_condition,
            kind.loop_step,
            kind.result,
        ]
    return []
