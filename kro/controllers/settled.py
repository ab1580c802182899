"""kro.controllers.settled: skip an owner's reconcile whose every read is unchanged.

Why: every event of a watched child enqueues its owner (an RGD instance, a `Graph`), and a full
pass re-reads the owner and every child (one GET or LIST each) even when the event was our own
write coming back, a resync, or a requeue timer. A pass is a function of what it reads (the
owner, its children, external references, its program): when none of them changed since a pass
that needed no follow-up, the next pass would do exactly the same, i.e. nothing. The proof is the
resourceVersion, which the API server changes on every write: the informers the dynamic
controller runs for the owner's kind and every watched kind (metadata-only, so they are cheap)
hold the current versions, and comparing them costs no request.

What is remembered per instance is small (versions, not objects): the graph it was computed
with, the instance's resourceVersion after the pass's own writes, and per watch request the
(namespace, name) -> resourceVersion it saw. A request for one object by name (every child and
external reference) keeps only the version string, or None when the object was absent: its
(namespace, name) is the request's own, and a one-entry dict with its key tuple would cost
~250 bytes more per read, ~1.2 KiB per instance of five children. A cache that is not synced,
answers "changed", and the pass runs as before: the skip is never a guess. A cache that lags
behind the pass's own writes (it shows a version older than the pass saw or wrote, which
resourceVersions tell: kro.runtime.versions) answers "unchanged": the event of that write is on
its way and brings the instance back; without this, every settled instance was re-read once
or twice as the events of its own last writes arrived.

Only passes that asked for no follow-up are remembered (no requeue, no contested field, no
failure); anything else forgets the entry, so backoff and retries are unaffected.

This memory goes with the process, and nothing is written anywhere to keep it: the first pass
of a restarted controller over a converged owner reads what it reads, proves from the bodies that
nothing needs applying (kro.applyset.cache) and is remembered here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kro.dynamic import ScalarWatch, WatchCoordinator
from kro.dynamic.watches import Versions, WatchRequest
from kro.graph.model import Graph
from kro.runtime.gvk import GVR
from kro.runtime.memory import Fact, ObjectMemory
from kro.runtime.versions import not_newer

Key = tuple[str, str]


Seen = str | Versions | None
"""What a pass saw for one watch request: the resourceVersion of a named object (None: absent),
or the versions of every object a selector covered."""


def _compact(request: WatchRequest, found: Versions) -> Seen:
    """`found` as kept: a named object's version alone when that says the same."""
    if isinstance(request, ScalarWatch):
        if not found:
            return None
        version = found.get((request.namespace, request.name)) if len(found) == 1 else None
        if version is not None:
            return version
    return dict(found)


def _same(request: WatchRequest, cached: Versions | None, seen: Seen) -> bool:
    """Whether the cache's answer for `request` is what the pass saw, or the same object at a
    version the pass already left behind (False: cannot tell)."""
    if cached is None:
        return False
    if seen is None:
        return not cached
    if isinstance(seen, str):  # only ever kept for a ScalarWatch
        return (
            isinstance(request, ScalarWatch)
            and len(cached) == 1
            and not_newer(cached.get((request.namespace, request.name)), seen)
        )
    if cached == seen:  # the common answer, without a loop
        return True
    return cached.keys() == seen.keys() and all(not_newer(cached[k], v) for k, v in seen.items())


@dataclass(frozen=True, slots=True)
class _Entry:
    graph: Graph
    reads: tuple[tuple[WatchRequest, Seen], ...]


SETTLED: Fact[_Entry] = Fact("settled-pass")
"""Per instance: its last settled pass's reads (bounded by the instances kro serves)."""


class SettledPasses:
    """Per instance of one kind: the reads of its last pass that needed no follow-up, as the
    `SETTLED` fact of the process's one skip memory (kro.runtime.memory), keyed by the
    instance and valid while the instance's resourceVersion is the one the pass left."""

    def __init__(
        self,
        watches: WatchCoordinator,
        gvr: GVR,
        memory: ObjectMemory | None = None,
        *,
        owners: Callable[[ScalarWatch], Versions | None] | None = None,
    ) -> None:
        """`owners`: the owner's own version, from the informer whose events enqueue it (default:
        the coordinator's, which enqueues RGD instances). Another cache could still show the
        version a pass left after the owner changed, and the change would be skipped."""
        self._watches = watches
        self._gvr = gvr
        self.memory = memory if memory is not None else ObjectMemory()
        self._owners = owners if owners is not None else watches.cached_versions

    def _parent(self, key: Key) -> ScalarWatch:
        return ScalarWatch("", self._gvr, key[0], key[1])

    def record(
        self,
        key: Key,
        graph: Graph,
        instance_version: str,
        reads: Mapping[WatchRequest, Versions],
    ) -> None:
        """Remember a settled pass of `key`: with these inputs it changes nothing."""
        if not instance_version:
            self.forget(key)
            return
        entry = _Entry(
            graph,
            tuple((request, _compact(request, found)) for request, found in reads.items()),
        )
        self.memory.remember(SETTLED, (self._gvr, *key), instance_version, entry)

    def forget(self, key: Key) -> None:
        self.memory.forget(SETTLED, (self._gvr, *key))

    def unchanged(self, key: Key, graph: Graph | None) -> bool:
        """Whether the caches confirm that nothing the last settled pass of `key` read has
        changed since, with the same graph; False whenever a cache cannot tell."""
        if graph is None:
            return False
        watches = self._watches
        shown = (self._owners(self._parent(key)) or {}).get(key)
        entry = self.memory.recall(SETTLED, (self._gvr, *key), shown)
        if entry is None or entry.graph is not graph:
            return False
        return all(
            _same(request, watches.cached_versions(request), seen) for request, seen in entry.reads
        )
