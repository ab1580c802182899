"""kro.cel.lib_lists: the Kubernetes list library (`isSorted`, `sum`, `min`, `max`,
`indexOf`, `lastIndexOf`), as in k8s.io/apiserver/pkg/cel/library/lists.go.

Declared per element type like upstream (`list(int).sum() -> int`, ...); the engine's
runtime sees only "a list", so one generic implementation serves every overload.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from kro.cel.convert import to_cel_value
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
        if _equal(item, value):
            return i
    return -1


def last_index_of(items: list[Any], value: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if _equal(items[i], value):
            return i
    return -1


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) != isinstance(right, bool):
        return False
    if isinstance(left, dt.datetime) and isinstance(right, dt.datetime):
        return left == right
    return bool(left == right)


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
