"""kro.cel.lib_lists: the Kubernetes list library (`isSorted`, `sum`, `min`, `max`,
`indexOf`, `lastIndexOf`), as in k8s.io/apiserver/pkg/cel/library/lists.go.

Declared once per comparable (summable) element type (`list(int).sum() -> int`, ...).
Upstream declares `indexOf` / `lastIndexOf` over a type parameter; here they are per type
too, because the strings extension already declares functions of those names and the
engine only binds type parameters of functions declared in its config. The engine's
runtime sees only "a list", so one implementation serves every overload; `sum()` of an
empty list, which must be the zero of the element type (`0.0` for `list(double)`), is
resolved at compile time (`lowering`).
"""

from __future__ import annotations

from typing import Any, Final

from kro.cel.convert import to_cel_value
from kro.cel.equality import cel_equal
from kro.cel.library import Overload

_COMPARABLE: Final = ("int", "uint", "double", "bool", "string", "bytes", "timestamp", "duration")
_SUMMABLE: Final = ("int", "uint", "double", "duration")


def is_sorted(items: list[Any]) -> bool:
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def sum_of(items: list[Any]) -> Any:
    if not items:
        return 0
    total = items[0]
    for item in items[1:]:
        total = total + item
    return to_cel_value(total)


def min_of(items: list[Any]) -> Any:
    if not items:
        raise ValueError("min called on empty list")
    return to_cel_value(min(items))


def max_of(items: list[Any]) -> Any:
    if not items:
        raise ValueError("max called on empty list")
    return to_cel_value(max(items))


def index_of(items: list[Any], value: Any) -> int:
    for i, item in enumerate(items):
        if cel_equal(item, value):
            return i
    return -1


def last_index_of(items: list[Any], value: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if cel_equal(items[i], value):
            return i
    return -1


def _overloads() -> tuple[Overload, ...]:
    out: list[Overload] = []
    for t in _COMPARABLE:
        lt = f"list<{t}>"
        out += [
            Overload("isSorted", f"list_{t}_is_sorted_bool", (lt,), "bool", is_sorted, True),
            Overload("min", f"list_{t}_min_{t}", (lt,), t, min_of, True),
            Overload("max", f"list_{t}_max_{t}", (lt,), t, max_of, True),
            Overload("indexOf", f"list_{t}_index_of_int", (lt, t), "int", index_of, True),
            Overload(
                "lastIndexOf", f"list_{t}_last_index_of_int", (lt, t), "int", last_index_of, True
            ),
        ]
    for t in _SUMMABLE:
        out.append(Overload("sum", f"list_{t}_sum_{t}", (f"list<{t}>",), t, sum_of, True))
    return tuple(out)


OVERLOADS: Final = _overloads()
