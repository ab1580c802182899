"""kro.applyset.cache: knowing that work would change nothing, to skip it: an apply, from memory
(`AppliedCache`, one fact of kro's one skip memory, kro.runtime.memory) or by proof from the
live object alone (`already_applied`), and the prune's list (`MemberLedger`, another fact).

Why: kro re-applies the full desired state of every child on every reconcile (drift
correction, R-20). An apply of unchanged content changes nothing but is still a write request
through admission, and a steady-state cluster should cost zero writes.

The memory: after our apply of body B returned an object at resourceVersion R, an object still
at R has not been written by anyone since, so it holds exactly what applying B produced, with
our field manager owning B's fields; applying B again would change nothing. A foreign edit, a
re-creation (new UID) or a change of B (new digest) breaks the match. Keyed by UID with the
version in the entry, so a newer apply replaces the stale one; bounded LRU, in memory only
(forgetting costs one redundant apply). The same entries tell a reader, without a request, what
the server answered to kro's last apply of an object (`applied_version`).

The proof, for what the memory lost (a restarted controller would re-apply every child of every
converged instance once): our field manager's managedFields entry (operation Apply) lists the
fields our last apply set; if that set equals the body's, a new apply neither adds nor removes
a field of ours, and if every value of the body is already what the object holds, it changes no
value. The comparison is strict (no quantity or type normalisation, same list lengths): whenever
it cannot prove the no-op it says no, so a wrong "no" costs one write and a "yes" is sound.

The prune's list (a label-selector LIST per kind and namespace, which the API server answers
by filtering every object of the kind in the namespace) finds, on a converging instance,
exactly what the pass applied. Members are only ever made by kro's applies, so this process can
know an ApplySet's complete member set (`MemberLedger`'s methods say when), and a pass that
applies exactly that set (same UIDs) does not list. Kept per ApplySet: a 16-byte digest of the
sorted UIDs, or "started"; bounded LRU, in memory only (forgetting, or a restart, costs one
list). What it cannot see (an object someone else labels with the ApplySet's id, an orphan of a
parent whose finalizer was removed by hand created again under the same name) is pruned at the
next list (kro.applyset.prune).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from kro.applyset.contest import MISSING, PathKey, holds, value_at
from kro.runtime.memory import UNVERSIONED, Fact, ObjectMemory

__all__ = ["AppliedCache", "MemberLedger", "already_applied", "digest", "uid_and_version"]


def digest(body: Mapping[str, Any]) -> str:
    """A stable hash of an apply body (key order does not matter)."""
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def uid_and_version(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")


class AppliedCache:
    """uid -> (resourceVersion after our apply, digest of the body applied); exact versions."""

    def __init__(
        self,
        max_entries: int = 16384,
        *,
        memory: ObjectMemory | None = None,
        fact: str = "applied",
    ) -> None:
        """`fact`: the name the facts are kept under, one per identity that applies (an RGD
        instance's ApplySet, a `Graph`): one must never vouch for what the other applied."""
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._fact: Fact[str] = Fact(fact, max_entries, exact=True)
        self.memory = memory if memory is not None else ObjectMemory()

    def is_current(self, live: Mapping[str, Any], body_digest: str) -> bool:
        """Whether `live` is exactly what our last apply of this digest left behind."""
        uid, version = uid_and_version(live)
        if not uid or not version:
            return False
        return self.memory.recall(self._fact, uid, version) == body_digest

    def applied_version(self, uid: str) -> str | None:
        """The resourceVersion our last apply of object `uid` returned, if known."""
        return self.memory.version(self._fact, uid)

    def remember(self, applied: Mapping[str, Any], body_digest: str) -> None:
        """Record the server's answer to our apply of the body with `body_digest`."""
        uid, version = uid_and_version(applied)
        if not uid or not version:
            return
        self.memory.remember(self._fact, uid, version, body_digest)


_STARTED = b""


def _digest(uids: Iterable[str]) -> bytes:
    return hashlib.blake2b("\n".join(sorted(uids)).encode(), digest_size=16).digest()


class MemberLedger:
    """ApplySet id -> what this process knows its complete member set to be. Unversioned: only
    kro's own applies and prunes change an ApplySet's members, and this process sees them."""

    def __init__(self, max_entries: int = 16384, *, memory: ObjectMemory | None = None) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._fact: Fact[bytes] = Fact("members", max_entries)
        self.memory = memory if memory is not None else ObjectMemory()
        self._epoch = 0

    def epoch(self, epoch: int) -> None:
        """Forget every ApplySet when `epoch` (the shard ranges' version, kro.runtime.sharding)
        moved: what was known may have changed under another replica meanwhile."""
        if epoch != self._epoch:
            self.memory.clear(self._fact)
            self._epoch = epoch

    def started(self, applyset_id: str) -> None:
        """kro has just written the first inventory of this ApplySet: it has no member yet."""
        self.memory.remember(self._fact, applyset_id, UNVERSIONED, _STARTED)

    def settled(self, applyset_id: str, uids: Iterable[str]) -> None:
        """The ApplySet's members are exactly `uids` (a clean prune, or one skipped here)."""
        self.memory.remember(self._fact, applyset_id, UNVERSIONED, _digest(uids))

    def unpruned(self, applyset_id: str, applied: Iterable[str]) -> None:
        """A pass applied `applied` but did not prune (data pending, or an apply failed): the
        members are now what was known plus `applied`. A new ApplySet's members are exactly
        `applied`; a known set stays known only if `applied` is that same set."""
        entry = self.memory.recall(self._fact, applyset_id, None)
        if entry == _STARTED:
            self.settled(applyset_id, applied)
        elif entry is not None and entry != _digest(applied):
            self.forget(applyset_id)

    def nothing_to_prune(self, applyset_id: str, keep: Iterable[str]) -> bool:
        """Whether every member of the ApplySet is known to be in `keep`."""
        entry = self.memory.recall(self._fact, applyset_id, None)
        return entry is not None and entry in (_STARTED, _digest(keep))

    def knows(self, applyset_id: str) -> bool:
        """Whether this process knows the ApplySet's complete member set (a prune of it will
        list nothing unless the applied set differs)."""
        return self.memory.version(self._fact, applyset_id) is not None

    def forget(self, applyset_id: str) -> None:
        self.memory.forget(self._fact, applyset_id)


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


def _field_paths(
    fields: Mapping[str, Any], value: Any, path: PathKey = ()
) -> Iterator[tuple[PathKey, Any]]:
    """Leaf paths of a FieldsV1 set, lists (k:, i:, v: children) cut at the list itself, each
    with the body's `value` there (MISSING when the body has none): one walk of both."""
    named = [key for key in fields if key.startswith("f:")]
    if not named:
        yield path, value
        return
    for key in named:
        child = fields[key]
        below = value.get(key[2:], MISSING) if isinstance(value, Mapping) else MISSING
        yield from _field_paths(child if isinstance(child, Mapping) else {}, below, (*path, key))


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
    leaves = dict(_field_paths(entries[0]["fieldsV1"], body))
    owned = frozenset(leaves)
    # A map listed without its keys is atomic (a Deployment's selector, a Service's): owned
    # as one value, so it must equal ours exactly, not merely contain it.
    atomic = frozenset(p for p, v in leaves.items() if isinstance(v, Mapping) and v)
    wanted = set(_body_paths(body, atomic)) - _IDENTITY
    return (
        owned == wanted
        and holds(live, body)
        and all(value_at(live, p) == value_at(body, p) for p in atomic)
    )
