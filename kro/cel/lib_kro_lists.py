"""kro.cel.lib_kro_lists: `lists.setAtIndex`, `lists.insertAtIndex`, `lists.removeAtIndex`.

Upstream C-28..C-30: each returns a new list; the index is checked with upstream's exact
messages. Typed `list(T)` like upstream, so `lists.setAtIndex([1], 0, "a")` is a compile
error and the result keeps the element type.
"""

from __future__ import annotations

from typing import Any, Final

from kro.cel.convert import to_cel_value
from kro.cel.library import Overload


def set_at_index(items: list[Any], index: int, value: Any) -> list[Any]:
    if not 0 <= index < len(items):
        raise IndexError(f"lists.setAtIndex: index {index} out of bounds [0, {len(items)})")
    return to_cel_value([*items[:index], value, *items[index + 1 :]])  # type: ignore[no-any-return]


def insert_at_index(items: list[Any], index: int, value: Any) -> list[Any]:
    if not 0 <= index <= len(items):
        raise IndexError(f"lists.insertAtIndex: index {index} out of bounds [0, {len(items)}]")
    return to_cel_value([*items[:index], value, *items[index:]])  # type: ignore[no-any-return]


def remove_at_index(items: list[Any], index: int) -> list[Any]:
    if not 0 <= index < len(items):
        raise IndexError(f"lists.removeAtIndex: index {index} out of bounds [0, {len(items)})")
    return to_cel_value([*items[:index], *items[index + 1 :]])  # type: ignore[no-any-return]


OVERLOADS: Final = (
    Overload(
        "lists.setAtIndex", "lists_setAtIndex_list_int_T", ("list<T>", "int", "T"), "list<T>",
        set_at_index,
    ),
    Overload(
        "lists.insertAtIndex", "lists_insertAtIndex_list_int_T", ("list<T>", "int", "T"),
        "list<T>", insert_at_index,
    ),
    Overload(
        "lists.removeAtIndex", "lists_removeAtIndex_list_int", ("list<T>", "int"), "list<T>",
        remove_at_index,
    ),
)  # fmt: skip
