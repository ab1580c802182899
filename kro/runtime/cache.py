"""kro.runtime.cache: the process's informers, one per watched resource, shared by everyone.

Each informer costs a watch connection and a copy of every object it lists, so two controllers
that watch the same resource must share one. controller-runtime gives every controller of a
manager one cache for that; `InformerCache` is it, and it is the only informer registry of a
kro.runtime process: the manager runs it (`Manager.cache`), controllers built with
kro.runtime.builder take their informers from it, kro.runtime.reader answers reads from it, and
controllers whose kinds come and go at runtime borrow from it.

Two ways to hold an informer, one informer per key either way:

* `informer(gvr, ...)` (and `add(informer)` for one built elsewhere) keeps it for the life of the
  cache. These are the informers controllers start on: readiness and the start of controllers
  wait until each has listed (`has_synced`).
* `acquire(gvr, ...)` / `release(informer)` count references, and the last release stops the
  informer. A controller that watches kinds as graphs come and go must be able to stop watching
  them, and it waits for the first list itself (`Informer.wait_for_sync`), so these never hold
  readiness back. A key held both ways stays until the cache stops.

An informer asked for while the cache runs starts at once; `acquire` starts it even before
`run` (its caller is about to wait for it). `run` parks until cancelled and re-raises the first
informer that crashed (informers retry API failures themselves, so a crash is a bug); leaving it,
or `close()`, stops every informer, and nothing can be acquired afterwards.

Informers are keyed by (resource, namespace, label selector, field selector, metadata-only,
sharded). Only full-object, unfiltered informers can answer arbitrary reads (`covering`): one
with a selector does not know whether an object it lacks exists, so it answers only lists whose
selector implies its own, and gets of objects it holds (`holding`). Sharded informers (the
`shard` view, kro.runtime.sharding) hold only this replica's ranges and answer only gets of
objects they hold.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, TypedDict, Unpack

import structlog

from .client import Client
from .clock import Clock
from .gvk import GVR
from .informer import Informer, Transform, strip_managed_fields
from .labels import implies
from .sharding import ShardView

__all__ = ["InformerCache", "InformerKey", "Selection", "Source"]

log = structlog.get_logger(__name__)


class Source(Protocol):
    """What the cache runs: an Informer, or anything that lists, watches and reports its sync."""

    async def run(self) -> None: ...

    def has_synced(self) -> bool: ...


class Selection(TypedDict, total=False):
    """Which objects of a resource an informer holds (every field optional).

    namespace: one namespace (None: all). label_selector / field_selector: filtered by the
    server. metadata_only: metadata alone (PartialObjectMetadata). sharded: only the cache's
    shard ranges (ignored without a shard view).
    """

    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    metadata_only: bool
    sharded: bool


@dataclass(frozen=True, slots=True)
class InformerKey:
    """What makes two informers different; equal keys share one informer."""

    gvr: GVR
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    metadata_only: bool = False
    sharded: bool = False

    @classmethod
    def of(cls, informer: Informer) -> InformerKey:
        return cls(
            informer.gvr,
            informer.namespace or None,
            informer.label_selector or None,
            informer.field_selector or None,
            informer.metadata_only,
            informer.shard is not None,
        )


@dataclass(slots=True)
class _Entry:
    source: Source
    refs: int = 0  # acquire() references
    pinned: bool = False  # held for the life of the cache (informer(), add())
    task: asyncio.Task[None] | None = None


_opaque = itertools.count()


class InformerCache:
    """Shared informers over one client, run as one manager runnable (module docstring).

    shard: this replica's ShardView (kro.runtime.sharding); informers asked for with
    `sharded=True` hold only its ranges. Without it, `sharded` is ignored. The other options
    apply to every informer the cache creates.
    """

    def __init__(
        self,
        client: Client | None,
        *,
        clock: Clock | None = None,
        resync_period_s: float | None = None,
        transform: Transform | None = strip_managed_fields,
        page_size: int = 500,
        shard: ShardView | None = None,
    ) -> None:
        self._client = client
        self.shard = shard
        self._clock = clock
        self._resync_period_s = resync_period_s
        self._transform = transform
        self._page_size = page_size
        self._entries: dict[Hashable, _Entry] = {}
        self._failed: asyncio.Future[None] | None = None
        self._running = False
        self._closed = False

    @property
    def client(self) -> Client:
        """The client the informers list and watch with."""
        if self._client is None:
            raise ValueError("this informer cache has no client: it can only run added informers")
        return self._client

    # -- holding informers ----------------------------------------------------------------------

    def informer(self, gvr: GVR, **selection: Unpack[Selection]) -> Informer:
        """The informer for this combination, kept for the life of the cache; created (and
        started, if the cache runs) on first ask. Controllers wait for its first list."""
        entry = self._entry(self._key(gvr, **selection))
        entry.pinned = True
        if self._running:
            self._start(entry)
        return self._informer(entry)

    def add(self, source: Source) -> None:
        """Run `source` for the life of the cache, and wait for its first sync as for the
        cache's own (an informer built by hand; kept under its key, so others share it)."""
        key: Hashable = InformerKey.of(source) if isinstance(source, Informer) else next(_opaque)
        existing = self._entries.get(key)
        if existing is not None and existing.source is not source:
            raise ValueError(f"the cache already holds an informer for {key}")
        entry = existing or self._entries.setdefault(key, _Entry(source))
        entry.pinned = True
        if self._running:
            self._start(entry)

    async def acquire(self, gvr: GVR, **selection: Unpack[Selection]) -> Informer:
        """The shared informer for this combination, started if new. Pair with `release`."""
        if self._closed:
            raise RuntimeError("the informer cache is closed")
        key = self._key(gvr, **selection)
        entry = self._entry(key)
        entry.refs += 1
        if entry.task is None:
            self._start(entry)
            log.info("informer.started", gvr=str(gvr), namespace=key.namespace or "", refs=1)
        return self._informer(entry)

    async def release(self, informer: Informer) -> None:
        """Drop one reference; the last one stops the informer (unless it is held for the life
        of the cache) and waits for it to finish."""
        key = InformerKey.of(informer)
        entry = self._entries.get(key)
        if entry is None or entry.source is not informer or entry.refs < 1:
            raise ValueError("informer was not acquired from this cache")
        entry.refs -= 1
        if entry.refs > 0 or entry.pinned:
            return
        del self._entries[key]
        if entry.task is not None:
            entry.task.cancel()
            await asyncio.wait([entry.task])
        log.info("informer.stopped", gvr=str(key.gvr), namespace=key.namespace or "")

    # -- reads ----------------------------------------------------------------------------------

    def informers(self) -> list[Informer]:
        """Every informer the cache holds, either way."""
        return [e.source for e in self._entries.values() if isinstance(e.source, Informer)]

    def _readable(self, gvr: GVR) -> list[tuple[InformerKey, Informer]]:
        """The synced full-object informers of `gvr` (metadata-only ones cannot answer reads)."""
        return [
            (key, entry.source)
            for key, entry in self._entries.items()
            if isinstance(key, InformerKey)
            and key.gvr == gvr
            and not key.metadata_only
            and isinstance(entry.source, Informer)
            and entry.source.has_synced()
        ]

    def covering(
        self, gvr: GVR, namespace: str | None, label_selector: str | None = None
    ) -> Informer | None:
        """A synced informer that holds every object of `gvr` in `namespace` (None: in every
        namespace) that `label_selector` selects, or None when no informer can answer for all
        of them. An unfiltered informer answers anything; one filtered by labels answers the
        queries its selector is implied by; one filtered by fields, or sharded, answers
        nothing."""
        unfiltered: Informer | None = None
        filtered: Informer | None = None
        for key, informer in self._readable(gvr):
            if key.field_selector or key.sharded:
                continue
            if key.namespace is not None and key.namespace != namespace:
                continue
            if key.label_selector is None:
                unfiltered = unfiltered or informer
            elif label_selector and implies(label_selector, key.label_selector):
                filtered = filtered or informer
        return unfiltered or filtered

    def holding(self, gvr: GVR, namespace: str | None) -> tuple[Informer | None, bool]:
        """The synced informer to look an object of `gvr` in `namespace` up in, and whether it
        is complete (a miss means NotFound). Without a complete one, a filtered or sharded
        informer of that namespace scope serves the objects it holds (a primary watched with a
        selector), and its misses must be asked of the server."""
        complete = self.covering(gvr, namespace)
        if complete is not None:
            return complete, True
        for key, informer in self._readable(gvr):
            if key.namespace is None or key.namespace == namespace:
                return informer, False
        return None, False

    # -- running --------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """Whether every informer held for the life of the cache has listed."""
        return not self.unsynced()

    def unsynced(self) -> list[str]:
        """The informers held for the life of the cache still waiting for their first list."""
        return [
            _describe(e.source)
            for e in self._entries.values()
            if e.pinned and not e.source.has_synced()
        ]

    async def run(self) -> None:
        """Run every informer, and each one added later, until cancelled; re-raise a crash.
        Stops every informer on the way out."""
        if self._running:
            raise RuntimeError("the informer cache is already running")
        self._running = True
        try:
            for entry in list(self._entries.values()):
                if entry.pinned:
                    self._start(entry)
            await self._failure()
        finally:
            self._running = False
            await self.close()

    async def close(self) -> None:
        """Stop every informer; acquire fails afterwards. The informers held for the life of
        the cache stay in it, stopped (their stores keep what they last saw)."""
        self._closed = True
        tasks = [e.task for e in self._entries.values() if e.task is not None]
        self._entries = {k: e for k, e in self._entries.items() if e.pinned}
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        for entry in self._entries.values():
            entry.task = None

    def _key(self, gvr: GVR, **selection: Unpack[Selection]) -> InformerKey:
        return InformerKey(
            gvr,
            selection.get("namespace") or None,
            selection.get("label_selector") or None,
            selection.get("field_selector") or None,
            selection.get("metadata_only", False),
            selection.get("sharded", False) and self.shard is not None,
        )

    def _entry(self, key: InformerKey) -> _Entry:
        entry = self._entries.get(key)
        if entry is None:
            informer = Informer(
                self.client,
                key.gvr,
                namespace=key.namespace,
                label_selector=key.label_selector,
                field_selector=key.field_selector,
                metadata_only=key.metadata_only,
                transform=self._transform,
                resync_period_s=self._resync_period_s,
                clock=self._clock,
                page_size=self._page_size,
                shard=self.shard if key.sharded else None,
            )
            entry = self._entries[key] = _Entry(informer)
        return entry

    @staticmethod
    def _informer(entry: _Entry) -> Informer:
        assert isinstance(entry.source, Informer)  # keyed entries are the cache's own
        return entry.source

    def _start(self, entry: _Entry) -> None:
        if entry.task is not None:
            return
        entry.task = asyncio.create_task(
            entry.source.run(), name=f"cache:{_describe(entry.source)}"
        )
        entry.task.add_done_callback(self._on_done)

    def _failure(self) -> asyncio.Future[None]:
        if self._failed is None:
            self._failed = asyncio.get_running_loop().create_future()
        return self._failed

    def _on_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            return
        log.error("informer.crashed", task=task.get_name(), error=repr(error))
        failed = self._failure()
        if not failed.done():
            failed.set_exception(error)


def _describe(source: object) -> str:
    """A name for an informer in errors and task names: its GVR (and namespace) if it has one."""
    gvr = getattr(source, "gvr", None)
    if gvr is None:
        return type(source).__name__
    namespace = getattr(source, "namespace", None)
    return f"{gvr} in {namespace}" if namespace else str(gvr)
