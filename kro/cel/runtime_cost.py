"""kro.cel.runtime_cost: what an evaluation costs in CEL's runtime cost units (`--cel-cost-limit`).

Upstream kro v0.10 hands `--cel-cost-limit` to cel-go, whose interpreter adds up a cost for
every step it evaluates and stops the evaluation once the total passes the limit (V-10). The
engine kro-py runs (cel-expr-python) counts nothing and cannot be asked to, so kro-py counts
the same units itself, from the checked tree, using cel-go's constants:

- an identifier or a field selection (`has()` included) costs 1; a literal costs nothing;
- a function or operator call costs 1 (`&&`, `||` and `?:` cost nothing themselves, as in
  cel-go); calls kro plants itself (`@` in the name) cost nothing;
- building a list costs 10, a map 30, a message 40;
- a comprehension (`map`, `filter`, `all`, `exists`, `transformList`, ...) costs its range,
  its initial value and its result once, and its loop condition and step once per iteration.

What can be known before evaluating is: `fixed_cost` (everything outside loop bodies) and
`iteration_cost` (one pass of one comprehension's body). The first is charged when an
evaluation starts, the second by the hook `instrument` plants in each comprehension, which
runs once per iteration, so nested and data-sized loops are counted as they run.

Two simplifications, documented in docs/compatibility.md: both branches of `&&`, `||` and
`?:` are counted (cel-go counts the branch it takes: a higher count), and cel-go's
size-dependent charges for string and list operations (`+` on strings, `contains`,
`matches`, `in` on a list, comparisons of strings) are counted as 1 call each (a lower count
for long strings and lists), because the engine evaluates those without calling back.
"""

from __future__ import annotations

from typing import Final

from kro.cel.checked_ast import (
    Call,
    Comprehension,
    Ident,
    ListLit,
    Node,
    Select,
    StructLit,
    children,
)

SELECT_AND_IDENT_COST: Final = 1
CALL_COST: Final = 1
LIST_CREATE_COST: Final = 10
MAP_CREATE_COST: Final = 30
STRUCT_CREATE_COST: Final = 40
_FREE_CALLS: Final = frozenset({"_&&_", "_||_", "_?_:_"})


def fixed_cost(node: Node) -> int:
    """The cost of evaluating `node` once, counting no comprehension iteration."""
    total = 0
    stack = [node]
    while stack:
        current = stack.pop()
        kind = current.kind
        if isinstance(kind, Comprehension):
            stack.extend((kind.iter_range, kind.accu_init, kind.result))
            continue
        total += _own_cost(current)
        stack.extend(children(current))
    return total


def iteration_cost(kind: Comprehension) -> int:
    """The cost of one iteration of a comprehension: its loop condition and step (nested
    comprehensions count their fixed part here and their iterations as they run)."""
    return fixed_cost(kind.loop_condition) + fixed_cost(kind.loop_step)


def _own_cost(node: Node) -> int:
    kind = node.kind
    if isinstance(kind, (Ident, Select)):
        return SELECT_AND_IDENT_COST
    if isinstance(kind, Call):
        return 0 if kind.function in _FREE_CALLS or "@" in kind.function else CALL_COST
    if isinstance(kind, ListLit):
        return LIST_CREATE_COST
    if isinstance(kind, StructLit):
        return STRUCT_CREATE_COST if kind.message_name else MAP_CREATE_COST
    return 0
