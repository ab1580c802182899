"""kro.applyset.noop: prove from a live object alone that applying a body would change nothing.

Why: the skip-unchanged cache (kro.applyset.cache) lives in memory, so a restarted controller
re-applied every child of every converged instance once: one write per child, on every upgrade
of kro. The live object carries what is needed to decide without the cache:

* its managedFields entry of our field manager (operation Apply) lists the fields our last
  apply set; if that set equals the body's, a new apply neither adds nor removes a field of ours;
* if every value of the body is already what the object holds, the apply changes no value.

Both together mean the server would answer with the object as it is. The comparison is strict
(no quantity or type normalisation, same list lengths): whenever it cannot prove the no-op it
says no, and the caller applies as before, so a wrong "no" costs one write and a "yes" is sound.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kro.applyset.contest import PathKey, holds, value_at

__all__ = ["already_applied"]

_IDENTITY: frozenset[PathKey] = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata", "f:name"), ("f:metadata", "f:namespace")}
)
"""Fields an apply body names but managedFields never lists (the object's identity)."""


def _body_paths(value: Any, atomic: frozenset[PathKey], path: PathKey = ()) -> Iterator[PathKey]:
    """Leaf paths of a body; a list is a leaf (managedFields keys its items, we compare the
    list as a whole), and so is a map the server keeps as one value (`atomic`)."""
    if isinstance(value, Mapping) and value and path not in atomic:
        for key, child in value.items():
            yield from _body_paths(child, atomic, (*path, f"f:{key}"))
    else:
        yield path


def _field_paths(fields: Mapping[str, Any], path: PathKey = ()) -> Iterator[PathKey]:
    """Leaf paths of a FieldsV1 set, lists (k:, i:, v: children) cut at the list itself."""
    named = [key for key in fields if key.startswith("f:")]
    if not named:
        yield path
        return
    for key in named:
        child = fields[key]
        yield from _field_paths(child if isinstance(child, Mapping) else {}, (*path, key))


def already_applied(
    live: Mapping[str, Any], body: Mapping[str, Any], manager: str, subresource: str = ""
) -> bool:
    """Whether a server-side apply of `body` by `manager` (through `subresource`, e.g. a
    Graph's status patch) would leave `live` unchanged."""
    entries = [
        entry
        for entry in (live.get("metadata") or {}).get("managedFields") or []
        if entry.get("manager") == manager
        and entry.get("operation") == "Apply"
        and (entry.get("subresource") or "") == subresource
    ]
    if len(entries) != 1 or not isinstance(entries[0].get("fieldsV1"), Mapping):
        return False
    owned = frozenset(_field_paths(entries[0]["fieldsV1"]))
    # A map listed without its keys is atomic (a Deployment's selector, a Service's): owned
    # as one value, so it must equal ours exactly, not merely contain it.
    atomic = frozenset(
        p for p in owned if isinstance(value_at(body, p), Mapping) and value_at(body, p)
    )
    wanted = set(_body_paths(body, atomic)) - _IDENTITY
    return (
        owned == wanted
        and holds(live, body)
        and all(value_at(live, p) == value_at(body, p) for p in atomic)
    )
