"""kro.runtime.informer: keep a local cache of one resource in step with the API server.

An `Informer` is client-go's reflector + indexer + handler fan-out in one class:

1. LIST (paginated) into a fresh `Store`, then WATCH from the list's resourceVersion with
   bookmarks, so the resume point stays fresh even when nothing changes.
2. A watch that ends (server timeout), stalls (idle timeout) or breaks is resumed from the last
   resourceVersion seen, bookmarks included; only failures back off (jittered, capped).
3. 410 Gone means the server no longer has our resume point: LIST again, and synthesize
   on_delete for every cached object the new list lacks, so handlers never miss a deletion
   that happened while we were disconnected.
4. A list or watch the API server refuses (403 Forbidden) is retried like any failure, and
   kept as `refused` until the same call succeeds again (a list; a watch that delivers an
   event or ends cleanly). Why: a controller whose informer cannot list must be able to say
   so (and to whom) rather than wait in silence; listeners (`add_state_listener`) hear of
   every such change, and of the first list, so that whoever reports the refusal also hears of
   the recovery without polling. A refused watch is not cleared by a list that succeeds: where
   RBAC grants list but not watch, the informer stays refused instead of flapping.

Handlers are plain synchronous callables invoked on the loop in event order. They must be quick
(typically: put a key on a work queue) and must not change the objects they receive: the same
dict is in the store and shared with every other handler. A failing handler is logged and the
others still run. The transform hook runs once per received object before it is cached; the
default drops `metadata.managedFields`, which is ~30% of a typical object and never needed by a
controller's cache, and shares repeated metadata strings (see `strip_managed_fields`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import structlog

from kro.runtime.client import Client, WatchEvent
from kro.runtime.clock import Clock, RealClock, wait_with_timeout
from kro.runtime.errors import (
    ApiError,
    Forbidden,
    Gone,
    KubeError,
    RequestTimeout,
    TransportError,
)
from kro.runtime.gvk import GVR
from kro.runtime.metrics import NOOP, MetricsProvider
from kro.runtime.sharding import ShardView
from kro.runtime.store import Obj, Store, object_key

log = structlog.get_logger(__name__)

Transform = Callable[[Obj], Obj]
StateListener = Callable[["Informer"], None]
"""Called with the informer when its first list is in, or a refusal starts or ends."""

SHORT_WATCH_S = 1.0
"""A watch that ends sooner than this without a single event counts as a failure (backoff),
so a server that closes watches at once cannot make us spin."""


class _ShardMoved(Exception):
    """The owned shard ranges changed: list again with the new selector."""


class EventHandler(Protocol):
    """Receives changes in order; `on_delete` gets the last known state of the object."""

    def on_add(self, obj: Obj) -> None: ...

    def on_update(self, old: Obj, new: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


SHARED_VALUE_MAX_LEN = 64
"""Label and annotation values up to this long are shared (interned); longer ones are
mostly unique (digests, descriptions, records) and an intern table entry would only add."""


def strip_managed_fields(obj: Obj) -> Obj:
    """The default transform: drop managedFields (large, and only the server needs them) and
    share the strings that repeat from object to object.

    Why share: a cache holds thousands of objects whose metadata repeats the same values, the
    namespace, `apiVersion` and `kind`, and the labels and annotations kro and others stamp on
    every child (`kro.run/owned: "true"`, the instance's name, id and applyset on each of its
    children). The decoder makes a new string for every value (it shares keys only), so each
    copy costs its full size: ~900 of the ~2,500 bytes a kro child's metadata takes in a
    metadata-only cache (bench/bench_controller.py, docs/performance.md). Interned, equal values
    are one object. Names, uids, resourceVersions and timestamps are unique and left alone.
    """
    intern = sys.intern
    for field in ("apiVersion", "kind"):
        value = obj.get(field)
        if type(value) is str:
            obj[field] = intern(value)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        namespace = meta.get("namespace")
        if type(namespace) is str:
            meta["namespace"] = intern(namespace)
        for field in ("labels", "annotations"):
            values = meta.get(field)
            if type(values) is dict:
                for key, value in values.items():  # replacing values keeps the dict's size
                    if type(value) is str and len(value) <= SHARED_VALUE_MAX_LEN:
                        values[key] = intern(value)
    return obj


def _client_metrics(client: Client) -> MetricsProvider:
    """The provider the client records rest_client_* in (test doubles may have none)."""
    options = getattr(client, "options", None)
    provider = getattr(options, "metrics", None)
    return provider if provider is not None else NOOP


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Informer:
    """List+watch one GVR (optionally one namespace and selectors) into `store`.

    resync_period_s: if set, every period each cached object is re-delivered as
        on_update(obj, obj), so level-based controllers re-check what no event reports.
    page_size: LIST page size; bounds memory per response on large collections.
    watch_timeout_s: server-side watch timeout; each watch picks a random value in
        [t, 2t) so many informers do not reconnect in lockstep (client-go does the same).
    backoff_base_s, backoff_cap_s: failed lists and watches wait base * 2^n, capped, with
        jitter in [d/2, d]; a working watch resets the count.
    shard: list and watch only this replica's hash ranges (kro.runtime.sharding): the
        selector goes to the server, every object is also checked here (the fallback when
        the server ignores or rejects it), and a change of ranges relists, dropping what left
        the ranges without on_delete (the object still exists; another replica owns it).
    metrics: where `kro_informer_watch_events_total` and `kro_informer_cached_objects` go
        (default: the client's provider). The counter counts the ADDED/MODIFIED/DELETED events
        received, before the shard filter, by `sharded` (true for informers with a shard): what
        sharding saves on the wire. The gauge is the objects in the stores of the running
        informers, by the same label: what sharding saves in memory. Informers share a series,
        so each adds the changes of its own count rather than setting the value, and takes its
        count back when it stops (its cache is no longer kept in step).
    """

    def __init__(
        self,
        client: Client,
        gvr: GVR,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = strip_managed_fields,
        resync_period_s: float | None = None,
        clock: Clock | None = None,
        page_size: int = 500,
        watch_timeout_s: int = 300,
        backoff_base_s: float = 0.8,
        backoff_cap_s: float = 30.0,
        rng: random.Random | None = None,
        shard: ShardView | None = None,
        metrics: MetricsProvider | None = None,
    ) -> None:
        self.client = client
        self.shard = shard
        provider = metrics if metrics is not None else _client_metrics(client)
        self._m_events = provider.counter(
            "kro_informer_watch_events_total",
            "Watch events (ADDED, MODIFIED, DELETED) informers received, before the shard filter.",
            ("sharded",),
        )
        self._m_cached = provider.gauge(
            "kro_informer_cached_objects",
            "Objects in the caches of the running informers (after the shard filter).",
            ("sharded",),
        )
        self._sharded = "true" if shard is not None else "false"
        self._counted = 0  # what this informer has added to kro_informer_cached_objects
        self._m_cached.inc(0, sharded=self._sharded)  # the series exists from the start
        self._shard_version = shard.version if shard is not None else 0
        self._listed_version = -1  # the shard version the cache was last listed with
        self.gvr = gvr
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.metadata_only = metadata_only
        self.store = Store()
        self._transform = transform
        self._resync_period_s = resync_period_s
        self._clock = clock or RealClock()
        self._page_size = page_size
        self._watch_timeout_s = watch_timeout_s
        self._backoff_base_s = backoff_base_s
        self._backoff_cap_s = backoff_cap_s
        self._rng = rng or random.Random()
        self._handlers: tuple[EventHandler, ...] = ()  # replaced, never mutated: safe to iterate
        self._synced = asyncio.Event()
        self._refused: Forbidden | None = None
        self._refused_call = ""  # "list" or "watch": what `_refused` refused
        self._refused_event = asyncio.Event()  # set while `_refused` is
        self._listeners: tuple[StateListener, ...] = ()
        self._resource_version = ""
        self._running = False
        self._log = log.bind(gvr=str(gvr), namespace=namespace or "", sharded=shard is not None)

    @property
    def last_resource_version(self) -> str:
        """The resourceVersion the next watch resumes from ("" before the first list)."""
        return self._resource_version

    def has_synced(self) -> bool:
        """True once the first LIST is in the store (stays true across relists)."""
        return self._synced.is_set()

    @property
    def refused(self) -> Forbidden | None:
        """The API server's refusal (403) of this informer's list or watch; None once the
        refused call succeeds (module docstring, 4). A refused informer keeps retrying with
        backoff; if it listed before, its cache holds what it last saw and no longer follows
        the server."""
        return self._refused

    def add_state_listener(self, listener: StateListener) -> None:
        """Call `listener(informer)` when the first list is in, and whenever a refusal of a
        list or watch starts or ends. Like handlers, listeners must be quick."""
        self._listeners = (*self._listeners, listener)

    def remove_state_listener(self, listener: StateListener) -> None:
        listeners = list(self._listeners)
        with contextlib.suppress(ValueError):
            listeners.remove(listener)
            self._listeners = tuple(listeners)

    def covers(self, namespace: str | None) -> bool:
        """Whether the cache holds every object of `namespace` ("": cluster-scoped, None:
        every namespace) as of the last event, so that an object missing from it does not exist.

        Why: a reader that confirms "unchanged" from the cache must not mistake an object the
        cache never received for a deleted one. False before the first list and while the
        server refuses the list or watch (`refused`: the cache no longer follows it); for a
        sharded informer also outside its ranges and while a change of ranges awaits the relist.
        """
        if not self._synced.is_set() or self._refused is not None:
            return False
        if self.namespace is not None and namespace != self.namespace:
            return False
        shard = self.shard
        if shard is None:
            return True
        return (
            namespace is not None
            and self._listed_version == shard.version
            and shard.owns(namespace)
        )

    async def wait_for_sync(
        self, timeout_s: float | None = None, *, until_refused: bool = False
    ) -> bool:
        """Wait for the first LIST; False if `timeout_s` (clock time) passes first.

        `until_refused`: also stop waiting (False) as soon as a list is refused (`refused`):
        a caller that can report the refusal need not wait for a deadline to find out.
        """
        waited = self._synced_or_refused() if until_refused else self._synced.wait()
        if timeout_s is None:
            await waited
            return self._synced.is_set()
        try:
            await wait_with_timeout(self._clock, waited, timeout_s)
        except TimeoutError:
            return self._synced.is_set()
        return self._synced.is_set()

    async def _synced_or_refused(self) -> None:
        waits = {
            asyncio.ensure_future(self._synced.wait()),
            asyncio.ensure_future(self._refused_event.wait()),
        }
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; objects already cached are replayed to it as on_add."""
        self._handlers = (*self._handlers, handler)
        for obj in self.store.list():
            self._call(handler, "on_add", obj)

    def remove_handler(self, handler: EventHandler) -> None:
        handlers = list(self._handlers)
        with contextlib.suppress(ValueError):
            handlers.remove(handler)
            self._handlers = tuple(handlers)

    async def run(self) -> None:
        """List and watch until cancelled. Never returns otherwise; errors are retried."""
        if self._running:
            raise RuntimeError(f"informer for {self.gvr} is already running")
        self._running = True
        try:
            await self._run()
        finally:
            self._running = False
            self._m_cached.dec(self._counted, sharded=self._sharded)
            self._counted = 0

    async def _run(self) -> None:
        # Not a TaskGroup: a crash should surface as itself, not wrapped in an ExceptionGroup.
        resync = None
        if self._resync_period_s:
            resync = asyncio.create_task(self._resync_loop(), name=f"informer.resync:{self.gvr}")
        try:
            await self._reflect()
        finally:
            if resync is not None:
                resync.cancel()
                await asyncio.wait([resync])

    # -- the reflector ------------------------------------------------------------------------

    async def _reflect(self) -> None:
        failures = 0
        need_list = True
        while True:
            if need_list:
                try:
                    await self._list()
                except KubeError as e:
                    self._log.warning("informer.list_failed", error=str(e), attempt=failures + 1)
                    if isinstance(e, Forbidden):
                        self._set_refused(e, "list")
                    await self._backoff(failures)
                    failures += 1
                    continue
                need_list, failures = False, 0
            started = self._clock.now()
            try:
                received = await self._watch()
            except _ShardMoved:
                self._log.info("informer.shard_moved", version=self._shard_version)
                need_list = True
                continue
            except Gone:
                self._log.info("informer.watch_expired", resource_version=self._resource_version)
                need_list = True
            except RequestTimeout:
                self._log.debug("informer.watch_idle", resource_version=self._resource_version)
            except (TransportError, ApiError) as e:
                self._log.warning("informer.watch_failed", error=str(e), attempt=failures + 1)
                if isinstance(e, Forbidden):
                    self._set_refused(e, "watch")
                await self._backoff(failures)
                failures += 1
            else:
                self._set_refused(None, "watch")
                if received or self._clock.now() - started >= SHORT_WATCH_S:
                    failures = 0
                else:  # closed at once with nothing to say (client-go: "very short watch")
                    await self._backoff(failures)
                    failures += 1

    async def _backoff(self, failures: int) -> None:
        delay = min(self._backoff_cap_s, self._backoff_base_s * 2**failures)
        await self._clock.sleep(delay / 2 + self._rng.random() * delay / 2)

    async def _list_items(self) -> tuple[list[Obj], str]:
        shard = self.shard
        sent: str | None = None
        if shard is not None:
            self._shard_version = shard.version
            sent = shard.selector()
        try:
            items, rv = await self.client.list_all(
                self.gvr,
                namespace=self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                page_size=self._page_size,
                metadata_only=self.metadata_only,
                shard_selector=sent,
                each=self._transform,
            )
        except ApiError as e:
            # kube-apiserver v1.36 answers a selector it cannot parse with 500 ("invalid shard
            # selector"); a server or proxy that refuses the parameter with 400.
            refused = e.status == 400 or "shard selector" in e.message
            if shard is None or sent is None or not refused:
                raise
            shard.enter_fallback("rejected", gvr=str(self.gvr), error=str(e))
            return await self._list_items()
        if shard is None:
            return items, rv
        owned = [o for o in items if shard.owns_object(o)]
        if sent is not None and len(owned) != len(items):
            shard.enter_fallback("ignored", gvr=str(self.gvr), outside=len(items) - len(owned))
        return owned, rv

    async def _list(self) -> None:
        objs, rv = await self._list_items()  # transformed page by page
        previous = self.store.replace(objs)
        cached = len(self.store)
        self._m_cached.inc(cached - self._counted, sharded=self._sharded)
        self._counted = cached
        self._resource_version = rv
        self._listed_version = self._shard_version  # the ranges this list was asked for
        relist = self._synced.is_set()
        deleted = 0
        for obj in objs:
            old = previous.get(object_key(obj))
            if old is None:
                self._dispatch("on_add", obj)
            elif _resource_version(old) != _resource_version(obj):
                self._dispatch("on_update", old, obj)
        for key, old in previous.items():
            if key not in self.store:
                if self.shard is not None and not self.shard.owns_object(old):
                    continue  # moved to another replica's range, not deleted
                deleted += 1
                self._dispatch("on_delete", old)
        self._synced.set()
        if not relist and self._refused is None:
            self._notify()
        self._set_refused(None, "list")
        self._log.info(
            "informer.relisted" if relist else "informer.listed",
            objects=len(objs),
            deleted=deleted,
            resource_version=rv,
        )

    async def _watch(self) -> bool:
        """One watch connection; True if it delivered anything before ending cleanly.
        Raises _ShardMoved when the owned ranges change meanwhile."""
        shard = self.shard
        if shard is None:
            return await self._consume_watch()
        if shard.version != self._shard_version:
            raise _ShardMoved
        consume = asyncio.create_task(self._consume_watch(), name=f"informer.watch:{self.gvr}")
        moved = asyncio.create_task(shard.changed(self._shard_version))
        try:
            await asyncio.wait({consume, moved}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (consume, moved):
                task.cancel()
            await asyncio.wait({consume, moved})
        if consume.done() and not consume.cancelled():
            return consume.result()  # ended (or failed) on its own: as without sharding
        raise _ShardMoved

    async def _consume_watch(self) -> bool:
        timeout_s = int(self._watch_timeout_s * (1 + self._rng.random()))
        received = False
        events = self.client.watch(
            self.gvr,
            namespace=self.namespace,
            resource_version=self._resource_version or None,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_bookmarks=True,
            timeout_s=timeout_s,
            metadata_only=self.metadata_only,
            drop_managed_fields=self._transform is strip_managed_fields,
            **({"shard_selector": self.shard.selector()} if self.shard is not None else {}),
        )
        async with contextlib.aclosing(events):
            async for event in events:
                received = True
                if self._refused is not None:  # the server accepted this watch after all
                    self._set_refused(None, "watch")
                self._apply(event)
        return received

    def _apply(self, event: WatchEvent) -> None:
        # The per-event hot path (bench/bench_informer.py): it calls no helper it can do without.
        kind, obj = event.type, event.object
        if kind == "BOOKMARK":
            rv = _resource_version(obj)
            if rv:
                self._resource_version = rv
            return
        self._m_events.inc(sharded=self._sharded)
        shard = self.shard
        if shard is not None and not shard.owns_object(obj):
            if shard.selector() is not None:
                shard.enter_fallback("ignored", gvr=str(self.gvr), via="watch")
            rv = _resource_version(obj)
            if rv:
                self._resource_version = rv
            return
        if self._transform is not None:
            obj = self._transform(obj)
        if kind == "DELETED":
            if self.store.delete(object_key(obj)) is not None:
                self._m_cached.dec(sharded=self._sharded)
                self._counted -= 1
            self._dispatch("on_delete", obj)
        else:
            old = self.store.add(obj)
            if old is None:
                self._m_cached.inc(sharded=self._sharded)
                self._counted += 1
                self._dispatch("on_add", obj)
            else:
                self._dispatch("on_update", old, obj)
        rv = _resource_version(obj)
        if rv:
            self._resource_version = rv

    async def _resync_loop(self) -> None:
        assert self._resync_period_s is not None
        while True:
            await self._clock.sleep(self._resync_period_s)
            if not self._synced.is_set():
                continue
            for obj in self.store.list():
                self._dispatch("on_update", obj, obj)

    # -- refusals -------------------------------------------------------------------------------

    def _set_refused(self, error: Forbidden | None, call: str) -> None:
        """Record the start (an error) or end (None) of a refusal of `call` ("list" or
        "watch"; a success ends only a refusal of the same call); listeners hear of changes."""
        was = self._refused
        if error is None and self._refused_call != call:
            return
        self._refused, self._refused_call = error, call if error is not None else ""
        if error is None:
            self._refused_event.clear()
        else:
            self._refused_event.set()
        if (was is None) != (error is None):
            if error is not None:
                self._log.warning("informer.refused", error=str(error))
            else:
                self._log.info("informer.refusal_ended")
            self._notify()

    def _notify(self) -> None:
        for listener in self._listeners:
            try:
                listener(self)
            except Exception:
                self._log.exception("informer.listener_failed")

    # -- fan-out --------------------------------------------------------------------------------

    def _dispatch(self, method: str, *args: Obj) -> None:
        for handler in self._handlers:  # a snapshot: a handler may add or remove handlers
            try:
                getattr(handler, method)(*args)
            except Exception:
                self._log.exception("informer.handler_failed", handler_method=method)

    def _call(self, handler: EventHandler, method: str, *args: Obj) -> None:
        try:
            getattr(handler, method)(*args)
        except Exception:
            self._log.exception("informer.handler_failed", handler_method=method)
