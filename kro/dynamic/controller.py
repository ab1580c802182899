"""kro.dynamic.controller: one process-wide controller for parent kinds that come and go at runtime.

Upstream kro's DynamicController (W-01..W-07, W-10). kro generates a CRD per graph and must start
reconciling its instances without a restart, and stop when the graph is deleted; a static
controller per kind cannot do that. So one controller hosts a handler per parent GVR:

* `register(gvr, handler)` ensures a metadata-only informer for `gvr` (shared through
  kro.dynamic._informers with the child watches), attaches the parent event handler and
  enqueues every cached object; registering again replaces the handler and re-enqueues every
  existing object (N-05). `deregister(gvr)` undoes it all, watches included.
* Parent events: add and delete enqueue; an update enqueues only if `should_enqueue_update(old,
  new)` says so (default: `generation_changed`; kro adds "suspension flipped", W-06/N-04).
  Periodic resyncs arrive as updates with old == new and are filtered the same way.
* One rate-limited queue, `dynamic-controller-queue`, of `ObjectRef(gvr, namespace, name)`
  items, worked by `options.workers` tasks; a key is never processed twice at once (the queue
  guarantees it). Child events reach the same queue through `watches` (kro.dynamic.watches).

The worker loop, the requeue contract and the retry judgement are kro.runtime.Controller's:
the dynamic controller wraps it, dispatching each `ObjectRef` (kro.runtime.objectref) to the
handler of its kind, and keeps upstream's per-kind score through a `ReconcileObserver`. Outcomes
of a handler call (W-05), each counted in dynamic_controller_requeue_total{type}:

* `Result()`                   -> forget the item's failures
* `Result(requeue_after_s=d)`  -> forget, re-add after d seconds        (type="requeue_after")
* `Result(requeue=True)`       -> rate-limited re-add, not an error     (type="requeue")
                                  (upstream re-adds at once; kro's instance handler never asks)
* `TerminalError`              -> forget, not retried: upstream NoRequeue (type="no_requeue")
* `NotFound`                   -> forget, dropped (the object is gone)
* any other exception          -> rate-limited re-add while fewer than `max_retries` re-adds
                                  are on record, then dropped            (type="rate_limited")
* no handler (deregistered)    -> dropped

Every exception other than TerminalError counts in dynamic_controller_handler_errors_total, and
those that signal a bug in the handler rather than a failure of the world
(kro.runtime.outcomes.is_bug) also in dynamic_controller_reconcile_panics_total. No exception
ever ends a worker.

Leadership and sharding are the runtime controller's too: the manager's work gate
(`set_work_gate`) is asked before each item, and a sharded replica's view admits only the items
of its range.

Shutdown (W-10): `shutdown()` stops the queue; workers finish what is queued, then `run()`
returns after releasing every informer. Cancelling `run()` is the hard stop; a deadline on a
graceful shutdown is the owner's (`asyncio.timeout` around the task). Either way the controller
is spent: its queue is shut down and its registrations are gone, so `run()` refuses a second
call (a new term needs a new controller, which is why losing leadership ends the process).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog

from kro.dynamic._informers import InformerPool
from kro.dynamic._metrics import PARENT, DynamicMetrics, gvr_key, gvr_string
from kro.dynamic.watches import Enqueue, RouterMetrics, WatchCoordinator
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.clock import Clock, RealClock
from kro.runtime.controller import Admission, Controller
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.runtime.metrics import NOOP, MetricsProvider
from kro.runtime.objectref import ObjectRef
from kro.runtime.outcomes import Outcome, ReconcileObserver, is_bug
from kro.runtime.ratelimit import ItemExponentialBackoff, MaxOf, TokenBucket
from kro.runtime.reconcile import Request, Result
from kro.runtime.store import Obj
from kro.runtime.workqueue import WorkQueue

log = structlog.get_logger(__name__)

QUEUE_NAME: Final = "dynamic-controller-queue"
CONTROLLER_NAME: Final = "dynamic-controller"

Handler = Callable[[Request], Awaitable[Result]]
"""Reconciles one object of the GVR it is registered for (`reconciler.reconcile` fits)."""

UpdatePredicate = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""`(old, new) -> bool`: does this parent update need a reconcile?"""

SettledPredicate = Callable[[Mapping[str, Any]], bool]
"""`(cached parent) -> bool`: is this object probably settled (its reconcile can wait)?"""

_REQUEUE_TYPES: Final = {
    Outcome.REQUEUE_AFTER: "requeue_after",
    Outcome.REQUEUE: "requeue",
    Outcome.BACKGROUND: "requeue",
    Outcome.TERMINAL: "no_requeue",
    Outcome.RETRY: "rate_limited",
}
"""dynamic_controller_requeue_total's `type` per outcome (success and a drop add nothing)."""


def generation_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """The default update filter: only spec changes (a new metadata.generation) count."""
    return (old.get("metadata") or {}).get("generation") != (new.get("metadata") or {}).get(
        "generation"
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class DynamicControllerOptions:
    """Tuning of the dynamic controller; defaults are upstream's flag defaults (§1.S).

    workers: concurrent handler calls (`--dynamic-controller-concurrent-reconciles`, 1).
    retry_min_delay_s / retry_max_delay_s: per-item exponential backoff of failures, doubling
        from min to max (`--dynamic-controller-rate-limiter-min-delay` 200ms / `-max-delay` 1000s),
        so one broken object backs off alone.
    retry_qps / retry_burst: the global token bucket over all failures
        (`--dynamic-controller-rate-limiter-rate-limit` 10/s, `-burst-limit` 100), so a mass
        failure cannot flood the API server. The delay is the larger of the two.
    max_retries: rate-limited re-adds of a failing item before it is dropped until its next
        event (`--dynamic-controller-default-queue-max-retries`, 20).
    unfinished_work_period_s: how often the queue's stuck-worker gauges are refreshed (None:
        never; the controller binary uses 0.5 s, as controller-runtime's default period).
    informer_sync_timeout_s: how long registering a kind or watching a new one waits for the
        informer's first LIST (upstream's fixed 30s); a timeout raises InformerSyncTimeout. A
        LIST the API server refuses (403) ends the wait at once (kro.dynamic._informers).

    The resync period (`--dynamic-controller-default-resync-period`) is a property of the
    informers, so it is given to the InformerCache (kro.runtime.cache) passed to the controller.
    """

    workers: int = 1
    retry_min_delay_s: float = 0.2
    retry_max_delay_s: float = 1000.0
    retry_qps: float = 10.0
    retry_burst: int = 100
    max_retries: int = 20
    informer_sync_timeout_s: float = 30.0
    unfinished_work_period_s: float | None = None
    gate_poll_s: float = 0.1


@dataclass(slots=True)
class _Registration:
    """A registered parent kind: its handler, update filter, informer and event handler."""

    handler: Handler
    should_enqueue_update: UpdatePredicate
    informer: Informer
    events: _ParentEvents | None = None
    probably_settled: SettledPredicate | None = None


class _ParentEvents:
    """The parent informer's event handler (W-06); reads the registration on every event."""

    def __init__(self, controller: DynamicController, gvr: GVR) -> None:
        self._controller = controller
        self._gvr = gvr
        self._label = gvr_string(gvr)
        self.replaying = False  # set while the informer replays its cache on attach

    def on_add(self, obj: Obj) -> None:
        registration = self._controller._registrations.get(self._gvr)
        settled = registration.probably_settled if registration is not None else None
        if self.replaying and settled is not None and settled(obj):
            # The initial list after a start: behind new and changed objects, and outside
            # the rate limiter (that is for failures).
            self._controller._metrics.informer_events.inc(gvr=self._label, event_type="add")
            self._controller.queue.add_background(ObjectRef.of(self._gvr, obj))
            self._controller._metrics.queue_length.set(len(self._controller.queue))
            return
        self._enqueue(obj, "add")

    def on_update(self, old: Obj, new: Obj) -> None:
        registration = self._controller._registrations.get(self._gvr)
        if registration is not None and registration.should_enqueue_update(old, new):
            self._enqueue(new, "update")

    def on_delete(self, obj: Obj) -> None:
        self._enqueue(obj, "delete")

    def _enqueue(self, obj: Obj, event_type: str) -> None:
        self._controller._metrics.informer_events.inc(gvr=self._label, event_type=event_type)
        self._controller.enqueue(ObjectRef.of(self._gvr, obj))


class _Dispatch:
    """The runtime controller's reconciler: hands each item to the handler of its kind."""

    def __init__(self, controller: DynamicController) -> None:
        self._controller = controller

    async def reconcile(self, item: ObjectRef) -> Result:
        controller = self._controller
        registration = controller._registrations.get(item.gvr)
        if registration is None:
            log.debug("queue.item_dropped", reason="no_handler")
            return Result()
        log.debug("dynamic.reconcile")
        try:
            return await registration.handler(item.request)
        except NotFound:
            log.debug("queue.item_dropped", reason="not_found")
            return Result()
        finally:
            if item.gvr not in controller._registrations:
                # Deregistered while the handler ran: whatever it watched meanwhile goes too
                # (its series went with `deregister`, and the score skips the kind).
                await controller.watches.forget(item)


class _Score(ReconcileObserver[ObjectRef]):
    """Upstream kro's per-kind families, from the runtime controller's judgement."""

    def __init__(self, controller: DynamicController) -> None:
        self._controller = controller
        self._metrics = controller._metrics

    def taken(self, item: ObjectRef) -> None:
        self._metrics.queue_length.set(len(self._controller.queue))

    def reconciled(
        self, item: ObjectRef, outcome: Outcome, seconds: float, error: Exception | None
    ) -> None:
        if item.gvr not in self._controller._registrations:
            return  # no handler, or deregistered meanwhile: the kind's series are gone
        m, key = self._metrics, gvr_key(item.gvr)
        m.reconcile_total.inc(gvr=key)
        m.reconcile_duration.observe(seconds, gvr=key)
        if outcome in (Outcome.RETRY, Outcome.DROPPED):
            m.handler_errors.inc(gvr=key)
            if error is not None and is_bug(error):
                m.panics.inc(gvr=key)
        requeue = _REQUEUE_TYPES.get(outcome)
        if requeue is not None:
            m.requeue_total.inc(gvr=key, type=requeue)


class DynamicController:
    """Handlers for many parent GVRs on one shared queue; see the module docstring.

    `informers` is the process's informer registry (a Manager's `cache`), whose informers
    parents, children and other controllers share; the controller only acquires and releases
    through it, so the cache's owner runs and closes it. `admission`: which keys it may reconcile,
    when not the cache's shard view (a member cluster's spoke, owned as a whole by one replica:
    kro.controllers.spokes).
    """

    def __init__(
        self,
        informers: InformerCache,
        *,
        options: DynamicControllerOptions | None = None,
        clock: Clock | None = None,
        metrics: MetricsProvider = NOOP,
        admission: Admission | None = None,
    ) -> None:
        self.options = options or DynamicControllerOptions()
        if self.options.workers < 1:
            raise ValueError("the dynamic controller needs at least one worker")
        self._clock: Clock = clock or RealClock()
        self._metrics = DynamicMetrics(metrics)
        limiter = MaxOf[ObjectRef](
            ItemExponentialBackoff(self.options.retry_min_delay_s, self.options.retry_max_delay_s),
            TokenBucket(self.options.retry_qps, self.options.retry_burst, clock=self._clock),
        )
        self.queue = WorkQueue[ObjectRef](
            QUEUE_NAME, rate_limiter=limiter, clock=self._clock, metrics=metrics
        )
        self._pool = InformerPool(
            informers,
            sync_timeout_s=self.options.informer_sync_timeout_s,
            clock=self._clock,
            metrics=self._metrics,
        )
        self.watches = WatchCoordinator(self._pool, self.enqueue, self._metrics)
        """Child and external watches; handlers call `watch`/`done`/`forget` on it."""
        self._coordinators: list[WatchCoordinator] = []
        self._registrations: dict[GVR, _Registration] = {}
        # Sharded replicas (kro.runtime.sharding): parents come from sharded informers and a
        # worker reconciles only what the view owns, counted in flight for the handover drain.
        self.shard: Admission | None = admission or informers.shard
        self._controller = Controller[ObjectRef](
            CONTROLLER_NAME,
            _Dispatch(self),
            self.queue,
            workers=self.options.workers,
            max_retries=self.options.max_retries,
            clock=self._clock,
            unfinished_work_period_s=self.options.unfinished_work_period_s,
            gate_poll_s=self.options.gate_poll_s,
            shard=self.shard,
            observer=_Score(self),
        )
        self._ran = False
        self._locks: defaultdict[GVR, asyncio.Lock] = defaultdict(asyncio.Lock)

    # -- registration ---------------------------------------------------------------------------

    async def register(
        self,
        gvr: GVR,
        handler: Handler,
        *,
        should_enqueue_update: UpdatePredicate = generation_changed,
        probably_settled: SettledPredicate | None = None,
    ) -> None:
        """Reconcile objects of `gvr` with `handler`; idempotent, re-enqueues all (W-07).

        `probably_settled(obj)`: objects of the first listing it says yes to are queued in the
        background lane (after every other item), so a restart serves new work first.

        Raises InformerSyncTimeout if `gvr` cannot be listed in time, WatchForbidden as soon
        as the API server refuses to list it (nothing is registered either way).
        """
        async with self._locks[gvr]:
            existing = self._registrations.get(gvr)
            if existing is not None:
                existing.handler = handler
                existing.should_enqueue_update = should_enqueue_update
                existing.probably_settled = probably_settled
                for obj in existing.informer.store.list():
                    self.enqueue(ObjectRef.of(gvr, obj))
                log.info("dynamic.handler_replaced", gvr=gvr_key(gvr))
                return
            informer = await self._pool.acquire(gvr, sharded=True)
            registration = _Registration(
                handler, should_enqueue_update, informer, probably_settled=probably_settled
            )
            self._registrations[gvr] = registration
            registration.events = events = _ParentEvents(self, gvr)
            events.replaying = True
            try:
                informer.add_handler(events)  # replays the cache: enqueues all
            finally:
                events.replaying = False
            self._metrics.handler_attach.inc(type=PARENT)
            # Error series exist from registration on, at 0, so alerts see them before any error.
            self._metrics.handler_errors.inc(0, gvr=gvr_key(gvr))
            self._metrics.panics.inc(0, gvr=gvr_key(gvr))
            self._count_registrations()
            log.info("dynamic.handler_registered", gvr=gvr_key(gvr), objects=len(informer.store))

    async def deregister(self, gvr: GVR) -> None:
        """Stop reconciling `gvr`: drop its watches, detach, release its informer and remove
        its metric series (kinds come and go with their RGDs). Idempotent.

        Queued items of `gvr` are dropped when a worker reaches them. A controller that is
        shutting down keeps the kind's reconcile, requeue, error and event series: stopping
        is not the kind going away, and they are the term's record for the last scrapes (the
        watch series follow the watches, which end either way).
        """
        lock = self._locks[gvr]
        try:
            async with lock:
                registration = self._registrations.pop(gvr, None)
                if registration is None:
                    return
                await self.watches.forget_kind(gvr)
                if registration.events is not None:
                    registration.informer.remove_handler(registration.events)
                    self._metrics.handler_detach.inc(type=PARENT)
                await self._pool.release(registration.informer)
                if not self.queue.is_shutting_down:
                    self._metrics.forget_parent(gvr)
                    if gvr not in self._pool.gvrs():  # else watched as another kind's child
                        self._metrics.forget_informer(gvr)
                self._count_registrations()
                log.info("dynamic.handler_deregistered", gvr=gvr_key(gvr))
        finally:
            # Kinds come and go with their RGDs: drop the lock once nobody holds or awaits it
            # (a caller still queued on it must not meet a second lock for the same kind).
            if gvr not in self._registrations and not lock.locked() and not lock._waiters:
                self._locks.pop(gvr, None)

    def is_registered(self, gvr: GVR) -> bool:
        return gvr in self._registrations

    def registered(self) -> frozenset[GVR]:
        """The parent GVRs with a handler."""
        return frozenset(self._registrations)

    def set_work_gate(self, gate: Callable[[], bool]) -> None:
        """Ask `gate()` before each item; items wait in the queue while it says no."""
        self._controller.set_work_gate(gate)

    def enqueue(self, ref: ObjectRef) -> None:
        """Queue `ref` for its handler (de-duplicated while it waits)."""
        self.queue.add(ref)
        self._metrics.queue_length.set(len(self.queue))

    # -- running --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Work the queue with `options.workers` tasks until `shutdown()` or cancellation.

        On the way out every registration is dropped and every informer released, and the
        controller cannot run again.
        """
        if self._ran:
            raise RuntimeError("a DynamicController runs once; build a new one for a new term")
        self._ran = True
        try:
            await self._controller.run()
        finally:
            self.queue.shutdown()
            await self._close()

    def shutdown(self) -> None:
        """Stop accepting items; `run()` returns once the queued and in-flight ones are done."""
        self.queue.shutdown()

    def coordinator(
        self,
        enqueue: Enqueue,
        metrics: RouterMetrics | None = None,
        *,
        client: Client | None = None,
        sync_timeout_s: float | None = None,
    ) -> WatchCoordinator:
        """Watches routed to `enqueue` (this controller's `enqueue` for its own parents, another
        controller's for kro's `Graph`s), recorded in `metrics` (default: this controller's
        families).

        Over this controller's informers, and closed with it; or, with `client`, over
        informers of that client's cluster of their own (a member cluster's objects whose
        owners live here), which the caller closes (`WatchCoordinator.close`) when it lets go
        of the cluster. `sync_timeout_s`: how long a watch there waits for an informer's first
        list (default: `options.informer_sync_timeout_s`)."""
        if client is None:
            coordinator = WatchCoordinator(self._pool, enqueue, metrics or self._metrics)
            self._coordinators.append(coordinator)
            return coordinator
        pool = InformerPool(
            InformerCache(client, clock=self._clock),
            sync_timeout_s=sync_timeout_s or self.options.informer_sync_timeout_s,
            clock=self._clock,
            metrics=self._metrics,
        )
        return WatchCoordinator(pool, enqueue, metrics or self._metrics)

    async def _close(self) -> None:
        for gvr in list(self._registrations):
            await self.deregister(gvr)
        await self.watches.close()
        for coordinator in self._coordinators:
            await coordinator.close()

    def _count_registrations(self) -> None:
        self._metrics.gvr_count.set(len(self._registrations))
        self._metrics.handler_count.set(len(self._registrations), type=PARENT)
