"""kro.runtime.store: an informer's cache of one resource, keyed "namespace/name" with indexes.

Objects are shared, not copied: the informer stores the dict it decoded and hands the same dict
to every reader and handler, because a deep copy per read costs more than the decode itself
(~220 us per Deployment). Readers must treat them as read-only and copy before changing
(`orjson.loads(orjson.dumps(obj))` is the cheap deep copy).

Only the owning informer writes (`add`/`update`/`delete`/`replace`); writes keep the indexes in
step. The "namespace" index is always present. Single-threaded by design: it lives on one loop.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

Obj = dict[str, Any]
IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]
"""Returns the index values an object is filed under (several values are allowed)."""

NAMESPACE_INDEX: Final = "namespace"
_COMPARABLE: Final = (tuple, list, set, frozenset)
"""Index function results that `==` compares by value (a generator never equals another)."""


def object_key(obj: Mapping[str, Any]) -> str:
    """The cache key: `ns/name` for namespaced objects, `name` for cluster-scoped ones."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = str(meta.get("name", ""))
    return f"{ns}/{name}" if ns else name


def split_key(key: str) -> tuple[str, str]:
    """`ns/name` -> ("ns", "name"); `name` -> ("", "name")."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", key)


def _namespace_of(obj: Mapping[str, Any]) -> Iterable[str]:
    return ((obj.get("metadata") or {}).get("namespace") or "",)


class Store:
    """Keyed objects plus named indexes (value -> keys), maintained on every write."""

    def __init__(self) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self.add_indexer(NAMESPACE_INDEX, _namespace_of)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # -- reads ----------------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def get_by(self, namespace: str | None, name: str) -> Obj | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[Obj]:
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def index(self, name: str, value: str) -> builtins.list[Obj]:
        """Objects filed under `value` in index `name` (KeyError for an unknown index)."""
        keys = self._indices[name].get(value, ())
        return [self._items[k] for k in keys]

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        return list(self._indices[name].get(value, ()))

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index; existing objects are indexed at once. Names are unique."""
        if name in self._indexers:
            raise ValueError(f"indexer {name!r} already exists")
        self._indexers[name] = fn
        index: dict[str, set[str]] = {}
        self._indices[name] = index
        for key, obj in self._items.items():
            for value in fn(obj):
                index.setdefault(value, set()).add(key)

    # -- writes (the informer's) ----------------------------------------------------------------

    def add(self, obj: Obj) -> Obj | None:
        """Insert or replace; returns the previous object under the same key."""
        key = object_key(obj)
        items = self._items
        old = items.get(key)
        items[key] = obj
        if old is None:
            self._index(key, obj)
        else:
            self._reindex(key, old, obj)
        return old

    update = add

    def delete(self, key: str) -> Obj | None:
        """Remove by key; returns the removed object, or None if it was not there."""
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def replace(self, objs: Iterable[Obj]) -> dict[str, Obj]:
        """Swap the whole content (a relist); returns the previous content by key."""
        previous = self._items
        self._items = {object_key(o): o for o in objs}
        for name, fn in self._indexers.items():
            index: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)
            self._indices[name] = index
        return previous

    def _reindex(self, key: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        # The common update (a watch MODIFIED) files the object under the same values again:
        # comparing them costs less than taking the key out of every index and putting it back.
        for name, fn in self._indexers.items():
            before, after = fn(old), fn(new)
            if type(before) is type(after) and type(after) in _COMPARABLE and before == after:
                continue
            index = self._indices[name]
            _remove(index, key, before)
            _file(index, key, after)

    def _index(self, key: str, obj: Mapping[str, Any]) -> None:
        for name, fn in self._indexers.items():
            _file(self._indices[name], key, fn(obj))

    def _unindex(self, key: str, obj: Mapping[str, Any]) -> None:
        for name, fn in self._indexers.items():
            _remove(self._indices[name], key, fn(obj))


def _file(index: dict[str, set[str]], key: str, values: Iterable[str]) -> None:
    for value in values:
        index.setdefault(value, set()).add(key)


def _remove(index: dict[str, set[str]], key: str, values: Iterable[str]) -> None:
    for value in values:
        keys = index.get(value)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del index[value]
