"""kro.cel.lib_maps: `map.merge(map)` (shallow, C-26) and `dyn.deepMerge(dyn)` (C-27).

Typical use: `${schema.spec.labels.merge({"app": schema.metadata.name})}`. The right side
wins. `merge` is generic like upstream's (`map(K, V)` on both sides and as the result), so
`{"a": 1}.merge({"b": "x"})` is a compile error. deepMerge recurses only where both sides
hold a map; lists and scalars are replaced.
"""

from __future__ import annotations

from typing import Any, Final

from kro.cel.convert import to_cel_value
from kro.cel.library import Overload


def merge(left: dict[Any, Any], right: dict[Any, Any]) -> dict[Any, Any]:
    return to_cel_value({**left, **right})  # type: ignore[no-any-return]


def deep_merge(left: Any, right: Any) -> Any:
    if not isinstance(left, dict) or not isinstance(right, dict):
        raise TypeError("no such overload: deepMerge requires two maps")
    return to_cel_value(_deep(left, right))


def _deep(left: dict[Any, Any], right: dict[Any, Any]) -> dict[Any, Any]:
    out = dict(left)
    for key, value in right.items():
        current = out.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            out[key] = _deep(current, value)
        else:
            out[key] = value
    return out


OVERLOADS: Final = (
    Overload(
        "merge", "map_merge_map", ("map<K, V>", "map<K, V>"), "map<K, V>", merge, member=True,
    ),
    Overload("deepMerge", "dyn_deepMerge_dyn", ("dyn", "dyn"), "dyn", deep_merge, member=True),
)  # fmt: skip
