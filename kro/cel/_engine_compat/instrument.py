"""_engine_compat.instrument: budget hooks planted in a checked expression before it is evaluated.

The engine cannot be interrupted and offers no per-evaluation cost, time or memory limit
(only a fixed total of 10,000 comprehension iterations). It does call back into Python for
functions, so the checked tree is rewritten to call three hidden functions where cost
accumulates; each checks the evaluation's `budget` and fails it with `LimitExceeded`:

- every comprehension's loop condition `c` becomes `kro.@loop(c)` (returns `c`): one check
  per iteration of `map`, `filter`, `all`, `exists`, `transformList`, ... Without it a
  `map` over 10,000 items runs for seconds, because this engine copies the accumulated
  list on every step (quadratic time and memory). Under a CEL cost limit it is
  `kro.@loop(c, k)`, `k` being what one iteration costs in CEL's runtime cost units
  (`runtime_cost.iteration_cost`, `--cel-cost-limit`); without one the hook takes no
  second argument, which the engine would convert on every iteration for nothing;
- `cel.bind`'s empty range `[]` becomes `kro.@bind()` (returns `[]`): one check per binding,
  so chains of bindings that double a string cannot grow unchecked;
- the argument `n` of `lists.range(n)` becomes `kro.@rangeSize(n)` (returns `n`, or 0 for a
  negative `n`), refusing a list too large to build, or one whose memory would take the
  evaluation past its memory budget, before the engine builds it.

The names contain `@`, which the parser never produces, so no expression can call them, and
they are registered only in the evaluation environment. Everything else is re-encoded byte
for byte (`rewrite`); new nodes take ids above every id of the tree. Expressions with nothing
to instrument are left alone and pay nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from cel_expr_python import cel

from kro.cel import budget
from kro.cel._engine_compat.rewrite import Ids, call, const_int, map_fields, replace_root
from kro.cel._engine_compat.wire import LENGTH_DELIMITED, read_fields
from kro.cel.checked_ast import Call, Comprehension, StructLit, Tree, walk
from kro.cel.runtime_cost import iteration_cost

LOOP: Final = "kro.@loop"
BIND: Final = "kro.@bind"
RANGE_SIZE: Final = "kro.@rangeSize"
LISTS_RANGE: Final = "lists.range"
_RANGE_ELEMENT_BYTES: Final = 16  # an int element of an engine list, as budget sizes lists
_ENGINE_ELEMENT_BYTES: Final = 96

# cel.expr.Expr fields, and the fields of its kinds that hold Exprs (calls, structs and
# comprehensions have their own functions below).
_ID, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 2, 5, 6, 7, 8, 9
_CHILD_EXPRS: Final = {_SELECT: (1,), _LIST: (1,), _COMPREHENSION: (2, 4, 6, 7)}
_ENTRY, _ENTRY_KEY, _ENTRY_VALUE = 2, 3, 4
_CALL_TARGET, _CALL_FUNCTION, _CALL_ARGS = 1, 2, 3
_RANGE, _CONDITION = 2, 5


def needs_instrumenting(tree: Tree) -> bool:
    """True if the tree has a comprehension or a `lists.range` call."""
    return any(
        isinstance(n.kind, Comprehension)
        or (isinstance(n.kind, Call) and n.kind.function == LISTS_RANGE)
        for n in walk(tree.root)
    )


def max_id(tree: Tree) -> int:
    """The largest node or map-entry id of the tree."""
    largest = 0
    for node in walk(tree.root):
        largest = max(largest, node.id)
        if isinstance(node.kind, StructLit):
            largest = max([largest, *(e.id for e in node.kind.entries)])
    return largest


def iteration_costs(tree: Tree) -> dict[int, int]:
    """What one iteration of each comprehension of an expression as written costs, by node
    id. kro's rewrites keep the ids of the nodes they keep, so these find the author's loops
    in the program; loops kro adds itself are not in it and cost nothing."""
    return {
        n.id: iteration_cost(n.kind) for n in walk(tree.root) if isinstance(n.kind, Comprehension)
    }


class _Ids(Ids):
    """Fresh ids, and the iteration cost of each comprehension (`iteration_costs`)."""

    __slots__ = ("costs",)

    def __init__(self, tree: Tree, costs: Mapping[int, int] | None) -> None:
        super().__init__(max_id(tree))
        self.costs = costs


def instrument(serialized: bytes, tree: Tree, costs: Mapping[int, int] | None = None) -> bytes:
    """`serialized` (an Any of CheckedExpr, decoded as `tree`) with the budget hooks;
    `costs`: iteration costs by comprehension id (a loop not in it costs nothing), or None
    when no cost is counted."""
    ids = _Ids(tree, costs)
    return replace_root(serialized, lambda expr: _expr(expr, ids))


def _expr(buf: bytes, ids: _Ids) -> bytes:
    def kind(number: int, value: bytes) -> bytes:
        if number == _STRUCT:
            return map_fields(value, lambda n, v: map_fields(v, entry) if n == _ENTRY else v)
        if number == _COMPREHENSION:
            if ids.costs is None:
                return _comprehension(value, ids, None)
            own_id = next((v for n, _, v in read_fields(buf) if n == _ID), 0)
            return _comprehension(value, ids, ids.costs.get(int(own_id), 0))
        if number == _CALL:
            return _call_expr(value, ids)
        if number in _CHILD_EXPRS:
            fields = _CHILD_EXPRS[number]
            return map_fields(value, lambda n, v: _expr(v, ids) if n in fields else v)
        return value

    def entry(number: int, value: bytes) -> bytes:
        return _expr(value, ids) if number in (_ENTRY_KEY, _ENTRY_VALUE) else value

    return map_fields(buf, kind)


def _call_expr(buf: bytes, ids: _Ids) -> bytes:
    fields = read_fields(buf)
    guard = (_CALL_FUNCTION, LENGTH_DELIMITED, LISTS_RANGE.encode()) in fields
    guard = guard and sum(1 for n, _, _ in fields if n == _CALL_ARGS) == 1

    def part(number: int, value: bytes) -> bytes:
        if number == _CALL_TARGET:
            return _expr(value, ids)
        if number == _CALL_ARGS:
            arg = _expr(value, ids)
            return call(ids, RANGE_SIZE, (arg,)) if guard else arg
        return value

    return map_fields(buf, part)


def _comprehension(buf: bytes, ids: _Ids, cost: int | None) -> bytes:
    binding = any(n == _RANGE and _is_empty_list(v) for n, _, v in read_fields(buf))

    def part(number: int, value: bytes) -> bytes:
        if number == _RANGE and binding:
            return call(ids, BIND)
        if number == _CONDITION:  # a binding never evaluates its condition
            condition = _expr(value, ids)
            if binding:
                return condition
            if cost is None:
                return call(ids, LOOP, (condition,))
            return call(ids, LOOP, (condition, const_int(ids, cost)))
        if number in _CHILD_EXPRS[_COMPREHENSION]:
            return _expr(value, ids)
        return value

    return map_fields(buf, part)


def _is_empty_list(value: int | bytes) -> bool:
    """An Expr that is the list literal `[]` (the range `cel.bind` expands to)."""
    if not isinstance(value, bytes):
        return False
    kinds = [(n, v) for n, _, v in read_fields(value) if n != _ID]
    return len(kinds) == 1 and kinds[0][0] == _LIST and kinds[0][1] == b""


# ------------------------------------------------------------------- the hook functions


def _loop(condition: bool) -> bool:
    budget.tick("in a comprehension")
    return condition


def _loop_cost(condition: bool, cost: int) -> bool:
    budget.tick("in a comprehension", cost=cost)
    return condition


def _bind() -> list[Any]:
    budget.tick("in cel.bind", memory_every=1)
    return []


def _range_size(length: int) -> int:
    """Refuse a range too large to build; a negative length is an empty range, as in
    cel-go (this engine would fail inside C++ with `vector::reserve`)."""
    budget.check_length(LISTS_RANGE, "length", length, unit_bytes=_RANGE_ELEMENT_BYTES)
    budget.reserve(f"building {LISTS_RANGE}({length})", length * _ENGINE_ELEMENT_BYTES)
    return max(length, 0)


def extension() -> Any:
    """The hook functions, for the evaluation environment only."""
    t = cel.Type
    return cel.CelExtension(
        "kro-budget",
        [
            cel.FunctionDecl(
                LOOP,
                [
                    cel.Overload("kro_loop", t("bool"), [t("bool")], impl=_loop),
                    cel.Overload(
                        "kro_loop_cost", t("bool"), [t("bool"), t("int")], impl=_loop_cost
                    ),
                ],
            ),
            cel.FunctionDecl(BIND, [cel.Overload("kro_bind", t("list<dyn>"), [], impl=_bind)]),
            cel.FunctionDecl(
                RANGE_SIZE,
                [cel.Overload("kro_range_size", t("int"), [t("int")], impl=_range_size)],
            ),
        ],
    )
