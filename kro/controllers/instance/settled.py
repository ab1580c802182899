"""kro.controllers.instance.settled: skip a reconcile whose every read is unchanged.

Why: every event of a watched child enqueues its instance, and a full pass re-reads the instance
and every child (one GET each) even when the event was our own write coming back, a resync, or
a requeue timer. A pass is a function of what it reads (the instance, its children, external
references, the graph revision): when none of them changed since a pass that needed no follow-up,
the next pass would do exactly the same, i.e. nothing. The proof is the resourceVersion, which
the API server changes on every write: the informers the dynamic controller runs for the parent
kind and every watched kind (metadata-only, so they are cheap) hold the current versions, and
comparing them costs no request.

What is remembered per instance is small (versions, not objects): the graph it was computed
with, the instance's resourceVersion after the pass's own writes, and per watch request the
(namespace, name) -> resourceVersion it saw. A cache that is not synced, or that lags behind our
own write, answers "changed", and the pass runs as before: the skip is never a guess.

Only passes that asked for no follow-up are remembered (no requeue, no contested field, no
failure); anything else forgets the entry, so backoff and retries are unaffected.

This memory goes with the process; what survives a restart is the settled record an ACTIVE
pass writes on its instance (kro.controllers.instance.settled_record), which the first pass of
a restarted controller confirms with one read and then remembers here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kro.dynamic import ScalarWatch, WatchCoordinator
from kro.dynamic.watches import Versions, WatchRequest
from kro.graph.model import Graph
from kro.runtime.gvk import GVR

Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Entry:
    graph: Graph
    instance: Versions
    reads: tuple[tuple[WatchRequest, Versions], ...]


class SettledPasses:
    """Per instance of one kind: the reads of its last pass that needed no follow-up."""

    def __init__(self, watches: WatchCoordinator, gvr: GVR) -> None:
        self._watches = watches
        self._gvr = gvr
        self._entries: dict[Key, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

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
            self._entries.pop(key, None)
            return
        self._entries[key] = _Entry(
            graph,
            {key: instance_version},
            tuple((request, dict(found)) for request, found in reads.items()),
        )

    def forget(self, key: Key) -> None:
        self._entries.pop(key, None)

    def unchanged(self, key: Key, graph: Graph | None) -> bool:
        """Whether the caches confirm that nothing the last settled pass of `key` read has
        changed since, with the same graph; False whenever a cache cannot tell."""
        entry = self._entries.get(key)
        if entry is None or graph is None or entry.graph is not graph:
            return False
        watches = self._watches
        if watches.cached_versions(self._parent(key)) != entry.instance:
            return False
        return all(watches.cached_versions(request) == seen for request, seen in entry.reads)
