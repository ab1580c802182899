"""_engine_compat.lib_comprehensions: the runtime helper of `transformMap` / `transformMapEntry`.

cel-go's two-variable comprehensions (C-18) expand `m.transformMap(k, v, expr)` into a loop
that accumulates a map through the hidden function `cel.@mapInsert`:

- `cel.@mapInsert(map, key, value)` (transformMap): the map plus one entry;
- `cel.@mapInsert(map, map)` (transformMapEntry): the map plus every entry of the second.

cel-expr-python 0.1.3 parses and checks both macros but ships no implementation of the
helper, so every such expression failed to plan. As in cel-go (`ext/comprehensions.go`
over `types.MutableMap.Insert`), inserting a key that is already there is an error:
`insert failed: key <k> already exists`.

A helper called per step would hand the whole accumulated map to Python and back each
time (quadratic: half a second for 500 entries). So `lowering` rewrites the loop to
accumulate a list of entries in the engine and build the map once at the end, with
`kro.@mapFromPairs` (transformMap: `[key, value]` pairs) or `kro.@mapFromMaps`
(transformMapEntry: the maps the transform produced). `cel.@mapInsert` itself is
registered too, per step, for a loop shape the rewrite does not recognise.
"""

from __future__ import annotations

from typing import Any, Final

from kro.cel import budget
from kro.cel.convert import to_cel_value
from kro.cel.library import Overload

MAP_INSERT: Final = "cel.@mapInsert"
MAP_FROM_PAIRS: Final = "kro.@mapFromPairs"
MAP_FROM_MAPS: Final = "kro.@mapFromMaps"


def map_from_pairs(pairs: list[list[Any]]) -> dict[Any, Any]:
    """transformMap's result from its `[key, value]` pairs, in iteration order."""
    out: dict[Any, Any] = {}
    for key, value in pairs:
        _insert(out, key, value)
    return to_cel_value(out)  # type: ignore[no-any-return]


def map_from_maps(maps: list[dict[Any, Any]]) -> dict[Any, Any]:
    """transformMapEntry's result: the union of the maps its transform produced."""
    out: dict[Any, Any] = {}
    for entries in maps:
        for key, value in entries.items():
            _insert(out, key, value)
    return to_cel_value(out)  # type: ignore[no-any-return]


def insert_entry(accumulated: dict[Any, Any], key: Any, value: Any) -> dict[Any, Any]:
    """transformMap's step: `accumulated` plus `key: value`."""
    out = dict(accumulated)
    _insert(out, key, value)
    budget.charge(MAP_INSERT, [key, value])
    return to_cel_value(out)  # type: ignore[no-any-return]


def insert_map(accumulated: dict[Any, Any], entries: dict[Any, Any]) -> dict[Any, Any]:
    """transformMapEntry's step: `accumulated` plus every entry the transform produced."""
    out = dict(accumulated)
    for key, value in entries.items():
        _insert(out, key, value)
    budget.charge(MAP_INSERT, entries)
    return to_cel_value(out)  # type: ignore[no-any-return]


def _insert(out: dict[Any, Any], key: Any, value: Any) -> None:
    if key in out:
        raise ValueError(f"insert failed: key {_go_text(key)} already exists")
    out[key] = value


def _go_text(key: Any) -> str:
    """A key as Go's `%v` prints a CEL value (`true`, `1`, `a`)."""
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


RUNTIME_OVERLOADS: Final = (
    Overload(MAP_FROM_PAIRS, "kro_map_from_pairs", ("list<dyn>",), "map<dyn, dyn>", map_from_pairs),
    Overload(MAP_FROM_MAPS, "kro_map_from_maps", ("list<dyn>",), "map<dyn, dyn>", map_from_maps),
    Overload(
        MAP_INSERT, "kro_map_insert_key_value", ("map<dyn, dyn>", "dyn", "dyn"),
        "map<dyn, dyn>", insert_entry, charges_result=False,
    ),
    Overload(
        MAP_INSERT, "kro_map_insert_map", ("map<dyn, dyn>", "map<dyn, dyn>"),
        "map<dyn, dyn>", insert_map, charges_result=False,
    ),
)  # fmt: skip
"""Registered in the evaluation environment only (the checker declares `cel.@mapInsert`)."""
