"""kro.runtime.informerfactory: one informer per watched resource, shared by everyone who asks.

Each informer costs a watch connection and a cache, so two controllers watching the same
resource must share one. `acquire` returns the running informer for a (GVR, namespace,
selectors, metadata_only) combination, starting it on first use; `release` drops a reference
and stops the informer when the last user lets go (kro's dynamic controllers watch and unwatch
kinds as graphs come and go, so informers must be stoppable, not only startable).

The factory owns the informer tasks. `run()` parks until cancelled and re-raises the first
informer that crashed (informers retry API failures themselves, so a crash is a bug);
leaving `run()` or calling `close()` stops every informer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from kro.runtime.client import Client
from kro.runtime.clock import Clock
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer, Transform, strip_managed_fields
from kro.runtime.sharding import ShardView

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class InformerKey:
    """What makes two informers different; equal keys share one informer."""

    gvr: GVR
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    metadata_only: bool = False
    sharded: bool = False


@dataclass(slots=True)
class _Entry:
    informer: Informer
    task: asyncio.Task[None]
    refs: int


class SharedInformerFactory:
    """Ref-counted informers over one client; the options apply to every informer it starts.

    shard: this replica's ShardView (kro.runtime.sharding); informers acquired with
    `sharded=True` hold only its ranges. Without it, `sharded` is ignored.
    """

    def __init__(
        self,
        client: Client,
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
        self._entries: dict[InformerKey, _Entry] = {}
        self._keys: dict[int, InformerKey] = {}
        self._failed: asyncio.Future[None] | None = None
        self._closed = False

    async def acquire(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        sharded: bool = False,
    ) -> Informer:
        """The shared informer for this combination, started if new. Pair with `release`."""
        if self._closed:
            raise RuntimeError("informer factory is closed")
        sharded = sharded and self.shard is not None
        key = InformerKey(gvr, namespace, label_selector, field_selector, metadata_only, sharded)
        entry = self._entries.get(key)
        if entry is not None:
            entry.refs += 1
            return entry.informer
        informer = Informer(
            self._client,
            gvr,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            metadata_only=metadata_only,
            transform=self._transform,
            resync_period_s=self._resync_period_s,
            clock=self._clock,
            page_size=self._page_size,
            shard=self.shard if sharded else None,
        )
        task = asyncio.create_task(informer.run(), name=f"informer:{gvr}:{namespace or ''}")
        task.add_done_callback(self._on_done)
        self._entries[key] = _Entry(informer, task, 1)
        self._keys[id(informer)] = key
        log.info("informer.started", gvr=str(gvr), namespace=namespace or "", refs=1)
        return informer

    async def release(self, informer: Informer) -> None:
        """Drop one reference; the last one stops the informer and waits for it to finish."""
        key = self._keys.get(id(informer))
        entry = self._entries.get(key) if key is not None else None
        if key is None or entry is None or entry.informer is not informer:
            raise ValueError("informer was not acquired from this factory")
        entry.refs -= 1
        if entry.refs > 0:
            return
        del self._entries[key]
        del self._keys[id(informer)]
        entry.task.cancel()
        await asyncio.wait([entry.task])
        log.info("informer.stopped", gvr=str(key.gvr), namespace=key.namespace or "")

    def informers(self) -> list[Informer]:
        return [e.informer for e in self._entries.values()]

    def has_synced(self) -> bool:
        return all(e.informer.has_synced() for e in self._entries.values())

    async def run(self) -> None:
        """Park until cancelled; re-raise an informer crash. Stops all informers on the way out."""
        try:
            await self._failure()
        finally:
            await self.close()

    async def close(self) -> None:
        """Stop every informer; acquire fails afterwards."""
        self._closed = True
        tasks = [e.task for e in self._entries.values()]
        self._entries.clear()
        self._keys.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

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
