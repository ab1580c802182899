"""kro.runtime.memory: what this process last knew of objects, valid while nobody wrote them.

A controller that reconciles from watch events redoes the same work again and again: a pass
re-reads what it read last time, re-applies what it applied, re-lists what it listed. Most of
that work is provably useless, and the proof is always the same one, from one Kubernetes
guarantee: **the API server changes an object's `resourceVersion` on every write to it**. A
fact learnt about an object at version R (its content, what our apply left in it, what a pass
derived from it) holds for as long as the object is still at R; the informer caches show the
current version of every watched object, and comparing two versions costs no request.

`ObjectMemory` is that one mechanism. It keeps facts by the caller's key for an object (a uid,
or a kind and name), each with the version it was learnt at, under a named kind of fact
(`Fact`) with its own bound; `recall` returns a fact only when the version shown now proves it
still holds:

* `exact`: the object is at the very version the fact was learnt at;
* otherwise also when the version shown is *older* than that (kro.runtime.versions): the cache
  has yet to deliver a write this process made itself, which the fact already includes.

A fact without a version (`UNVERSIONED`) is one no write of others can change (what only this
process's own writes make), and is recalled as it is. What invalidates a fact: a newer version
(someone wrote the object), `forget` (the object is gone, or the caller learnt otherwise),
`clear` (everything this process knew may have changed elsewhere, e.g. the replica's shard
changed), and the bound (least recently used first; forgetting only costs the work it saved).

`enabled=False` turns the memory off for debugging: nothing is remembered, every recall misses,
so every read and write is made again as if for the first time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, cast

from kro.runtime.versions import not_newer

__all__ = ["UNVERSIONED", "Fact", "ObjectMemory"]

V = TypeVar("V")

UNVERSIONED: Final = ""
"""The version of a fact no write of others can change."""


@dataclass(frozen=True, slots=True)
class Fact(Generic[V]):
    """A kind of fact: its name (for counts and docs), its bound (None: as many as there are
    objects the caller keeps it for) and whether only the very same version proves it."""

    name: str
    max_entries: int | None = None
    exact: bool = False


class ObjectMemory:
    """Facts about objects, each valid while the object's resourceVersion says it is."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._facts: dict[str, OrderedDict[Hashable, tuple[str, Any]]] = {}

    def _entry(self, fact: Fact[Any], key: Hashable) -> tuple[str, Any] | None:
        store = self._facts.get(fact.name)
        return store.get(key) if store is not None else None

    def _store(self, fact: Fact[Any]) -> OrderedDict[Hashable, tuple[str, Any]]:
        store = self._facts.get(fact.name)
        if store is None:
            store = self._facts[fact.name] = OrderedDict()
        return store

    def size(self, fact: Fact[Any]) -> int:
        return len(self._facts.get(fact.name) or ())

    def keys(self, fact: Fact[Any]) -> list[Hashable]:
        """The keys a fact is kept for (least recently used first)."""
        return list(self._facts.get(fact.name) or ())

    def remember(self, fact: Fact[V], key: Hashable, version: str, value: V) -> None:
        """`value` holds for the object `key` at `version` (UNVERSIONED: until forgotten)."""
        if not self.enabled:
            return
        store = self._store(fact)
        store[key] = (version, value)
        store.move_to_end(key)
        if fact.max_entries is not None:
            while len(store) > fact.max_entries:
                store.popitem(last=False)

    def recall(self, fact: Fact[V], key: Hashable, version: str | None) -> V | None:
        """The fact about `key` if the object's version now (`version`; None: unknown)
        proves it still holds; None otherwise. An UNVERSIONED fact needs no version."""
        entry = self._entry(fact, key) if self.enabled else None
        if entry is None:
            return None
        known, value = entry
        if known != UNVERSIONED and not self._holds(fact, known, version):
            return None
        self._store(fact).move_to_end(key)
        return cast(V, value)

    @staticmethod
    def _holds(fact: Fact[Any], known: str, version: str | None) -> bool:
        if version is None:
            return False
        return version == known if fact.exact else not_newer(version, known)

    def version(self, fact: Fact[Any], key: Hashable) -> str | None:
        """The version the fact about `key` was learnt at, if one is kept."""
        entry = self._entry(fact, key) if self.enabled else None
        return entry[0] if entry is not None else None

    def take(self, fact: Fact[V], key: Hashable, version: str | None) -> V | None:
        """`recall`, then forget the fact either way (a caller that owns what it takes)."""
        value = self.recall(fact, key, version)
        self.forget(fact, key)
        return value

    def forget(self, fact: Fact[Any], key: Hashable) -> None:
        store = self._facts.get(fact.name)
        if store is not None:
            store.pop(key, None)

    def clear(self, fact: Fact[Any] | None = None) -> None:
        """Forget every fact (of one kind, or all)."""
        if fact is None:
            self._facts.clear()
        else:
            self._facts.pop(fact.name, None)
