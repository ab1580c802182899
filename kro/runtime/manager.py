"""kro.runtime.manager: runs an operator process: caches, controllers, probes, metrics, shutdown.

The manager owns every long-lived task of the process (controller-runtime's Manager):

* informers (the `cache`) and other runnables run for the whole life of the process, leader or
  not, so a replica that takes over leadership has warm caches;
* controllers run only while this replica holds the leader Lease (kro.runtime.leaderelection),
  or always when leader election is off, and only once every informer has synced (a sync that
  does not finish within `cache_sync_timeout_s` is fatal, naming the informers);
* a controller added with `leader_only=False` (controller-runtime's `NeedLeaderElection()`
  returning false) runs on every replica, leader or not, from the first full cache sync until
  the process stops, and is drained on a graceful stop like the others. Replicas that share
  work run their controllers that way and ask `may_reconcile()` (the gate leader-only
  controllers get) before a write only the leader may make; a replica that wins the Lease
  starts its leader-only controllers beside them without stopping them;
* losing the Lease is fatal, as in controller-runtime: leader-only controllers are cancelled at
  once (those of every replica are drained) and `run` raises LeaderElectionLost, so the process
  exits non-zero and the kubelet starts a fresh one. Nothing of the old term (queues shut down,
  registrations dropped, caches of what was applied) can then leak into a new one, and no
  replica ever leads without reconciling. Workers also ask `may_reconcile()` before each key,
  which is false as soon as the renew deadline has passed on our clock: a leader resumed after a
  pause reconciles nothing before it steps down;
* any informer, runnable or controller that fails is fatal too: `run` stops everything and
  raises it, so a broken process never keeps answering probes as if it worked;
* one aiohttp server answers /healthz, /readyz (informers synced and custom checks pass) and
  /metrics (kro.runtime.prometheus), on one or two addresses;
* with webhooks registered (`manager.webhooks`, or the builder's `validate`, `default` and
  `convert`), an HTTPS server answers the API server's admission and conversion reviews
  (kro.runtime.webhook_server) on every replica, from before the caches start until after the
  controllers drained;
* SIGTERM/SIGINT (or `stop()`) begin a graceful stop: readiness fails, controller queues stop
  accepting keys and drain what they hold within `graceful_shutdown_timeout_s`, then the Lease is
  released and everything else is cancelled. A second signal cancels at once.

Opt in with `ManagerOptions(gc_tuning=GcTuning())` and it tunes the garbage collector after the
first full cache sync: a big informer cache is long-lived, and without tuning every full
collection walks all of it (184 ms pauses measured at 10k objects; `bench/bench_gc.py`). It is
off by default because the collector is process-wide: a library embedded in someone else's
process must not change it behind their back.

Events: a manager with a Client runs one EventRecorder for the process (core/v1 Events,
reporting as `name`; `events`), and `event_recorder(name)` is a view of it named after a
controller (controller-runtime's GetEventRecorderFor), through which the builder's controllers
post a Warning on the object of each failed reconcile. What was recorded before a graceful stop
is sent before the manager lets go (kro.runtime.events, kro.runtime.failureevents).

Nothing listens by default either: probes and metrics are served only on the addresses given
(kubebuilder's conventions are ":8081" for probes and ":8080" for metrics; `kro controller`
passes upstream kro's ":8079" / ":8078"), so an embedded manager never takes a port, and two
operators on one host never clash.

Every informer of the process runs in the manager's one informer registry, `cache`
(kro.runtime.cache): the informers of controllers built with kro.runtime.builder, those of
controllers that watch kinds as they come and go (acquired and released), and any informer built
by hand and handed over with `add_informer`. With a `Client` (`Manager(options, client=client)`)
the manager also offers a reader on that cache (`reader`) and `client`: controller-runtime's
default client, reading from that cache and writing to the API server, with kinds named once and
resolved through discovery (kro.runtime.managerclient). `ManagerOptions.resync_period_s` and
`.shard` configure every informer the cache creates.
`controller(name)` starts a builder on this manager. `ManagerOptions.namespace` is where its
controllers watch unless told otherwise. Kinds named by name (`"Deployment"`) are resolved
through discovery, which `run` reads before it starts anything (`add_prestart`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import socket
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import structlog
from aiohttp import web

from .builder import ControllerBuilder
from .cache import InformerCache, Source
from .client import Client
from .clock import Clock, RealClock, wait_with_timeout
from .events import EventRecorder, EventRecorderOptions, NamedRecorder
from .leaderelection import LeaderElectionConfig, LeaderElectionLost, LeaderElector, LeaseClient
from .managerclient import ManagerClient
from .prometheus import CONTENT_TYPE, PrometheusProvider
from .reader import CachedReader
from .sharding import ShardView

if TYPE_CHECKING:  # loaded with the first webhook (`Manager.webhooks`): ~13 ms at import
    from .webhook_server import WebhookOptions, WebhookServer

log = structlog.get_logger(__name__)

Check = Callable[[], bool]


class Runnable(Protocol):
    """Anything long-lived: `run` works until cancelled (or until its work is done)."""

    async def run(self) -> None: ...


class Drainable(Runnable, Protocol):
    """A runnable that can stop taking work and let `run` return (a Controller)."""

    def shutdown(self) -> None: ...


@runtime_checkable
class Gated(Protocol):
    """A controller that asks before each reconcile whether it may still work (a Controller)."""

    def set_work_gate(self, gate: Callable[[], bool]) -> None: ...


class CacheSyncTimeout(Exception):
    """Informers did not finish their first sync in time; controllers never started."""


class ControllersStopped(Exception):
    """Controllers returned while this replica should be running them (a bug, never silent)."""


__all__ = [
    "CacheSyncTimeout",
    "ControllersStopped",
    "Drainable",
    "Gated",
    "GcTuning",
    "LeaderElectionLost",
    "Manager",
    "ManagerOptions",
    "Runnable",
    "parse_bind_address",
    "tune_gc",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class GcTuning:
    """What to do to the collector once caches are synced.

    freeze: move everything alive now (the synced cache, imported modules) into the permanent
    generation, so full collections stop re-walking it.
    thresholds: gc.set_threshold values; a raised gen0 threshold means fewer young collections
    while watch events churn. Freezing alone removes the old population that damps full
    collections, so it goes with raised thresholds (python-client.md §3.3).
    """

    freeze: bool = True
    thresholds: tuple[int, int, int] | None = (50_000, 20, 100)


def tune_gc(tuning: GcTuning) -> None:
    """Apply `tuning` to this process: collect, then freeze and set thresholds."""
    gc.collect()
    if tuning.freeze:
        gc.freeze()
    if tuning.thresholds is not None:
        gc.set_threshold(*tuning.thresholds)
    log.info("manager.gc_tuned", frozen=gc.get_freeze_count(), thresholds=list(gc.get_threshold()))


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerOptions:
    """How the manager binds, elects and stops.

    health_probe_bind_address / metrics_bind_address: "host:port"; "0" disables (the default:
    an embedded manager takes no port unless asked); port 0 picks a free port (see
    `Manager.addresses`); ":8081" binds every interface, as a pod needs. The `kro` binary passes
    upstream's ":8079" / ":8078".
    webhook: how the admission and conversion webhook server listens and which certificate it
        serves (kro.runtime.webhook_server); it runs only once a webhook is registered.
    leader_election: None runs controllers unconditionally (a single replica, or tests).
    graceful_shutdown_timeout_s: how long controllers may drain their queues on stop.
    handle_signals: install SIGTERM/SIGINT handlers while `run` runs (main thread only).
    gc_tuning: applied once after the initial cache sync; None (the default) leaves the
        process-wide collector alone.
    sync_poll_s: how often the initial sync is checked (controller start, GC hook).
    cache_sync_timeout_s: how long controllers wait for every informer's first sync before the
        manager gives up with CacheSyncTimeout (controller-runtime's CacheSyncTimeout, 2 min).
    namespace: where controllers built on this manager watch (None: every namespace), unless a
        builder says otherwise (controller-runtime's cache DefaultNamespaces).
    resync_period_s: every informer of `cache` re-delivers each cached object this often (None:
        never; controller-runtime's cache SyncPeriod).
    shard: this replica's share of the objects (kro.runtime.sharding); informers asked for with
        `sharded=True` hold only its ranges.
    name: the operator's name: the field manager of `Manager.client`'s writes.
    """

    health_probe_bind_address: str = "0"
    metrics_bind_address: str = "0"
    webhook: WebhookOptions | None = None
    leader_election: LeaderElectionConfig | None = None
    graceful_shutdown_timeout_s: float = 30.0
    handle_signals: bool = True
    gc_tuning: GcTuning | None = None
    sync_poll_s: float = 0.1
    cache_sync_timeout_s: float = 120.0
    namespace: str | None = None
    name: str = "kro-runtime"
    resync_period_s: float | None = None
    shard: ShardView | None = None


def parse_bind_address(address: str) -> tuple[str | None, int] | None:
    """ "host:port" -> (host, port); "0" or "" -> None (disabled); ":p" -> (None, p): all hosts."""
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {address!r} is not host:port")
    host = host.strip("[]")
    return (host or None, int(port))


class Manager:
    """Owns informers, runnables and controllers and runs them with probes and metrics."""

    def __init__(
        self,
        options: ManagerOptions | None = None,
        *,
        client: LeaseClient | None = None,
        metrics: PrometheusProvider | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.options = options or ManagerOptions()
        if self.options.leader_election is not None and client is None:
            raise ValueError("leader election needs a client for the Lease")
        self.metrics = metrics or PrometheusProvider()
        self._client = client
        self._clock: Clock = clock or RealClock()
        self._runnables: list[Runnable] = []
        self._controllers: list[Drainable] = []  # leader-only
        self._everywhere: list[Drainable] = []  # every replica (leader_only=False)
        self._health_checks: dict[str, Check] = {"ping": lambda: True}
        self._ready_checks: dict[str, Check] = {
            "informers": self._informers_synced,
            "shutdown": lambda: not self._stopping,  # take us out of Service endpoints first
        }
        self._elector: LeaderElector | None = None
        self._stop_requested = asyncio.Event()
        self._controllers_idle = asyncio.Event()
        self._controllers_idle.set()
        self._everywhere_idle = asyncio.Event()
        self._everywhere_idle.set()
        self._stopping = False
        self._runner: web.AppRunner | None = None
        self._run_task: asyncio.Task[None] | None = None
        self._serving = asyncio.Event()
        self._fatal: BaseException | None = None
        self._cache = InformerCache(
            client if isinstance(client, Client) else None,
            clock=self._clock,
            resync_period_s=self.options.resync_period_s,
            shard=self.options.shard,
        )
        self._reader: CachedReader | None = None
        self._manager_client: ManagerClient | None = None
        self._prestart: list[Callable[[], Coroutine[Any, Any, None]]] = []
        self._webhooks: WebhookServer | None = None
        if self.options.leader_election is not None:
            self._health_checks["leaderElection"] = self._elector_healthy
        # -- events: one recorder for the process (see "events" below) ---------------------
        self._events = self._new_event_recorder(client)

    # -- registration ---------------------------------------------------------------------------

    def add_informer(self, informer: Source) -> None:
        """Run `informer` (built by hand) in `cache`, always; readiness and controllers wait
        for its first sync. Others asking the cache for its key share it."""
        self._cache.add(informer)

    def add_runnable(self, runnable: Runnable) -> None:
        """Run `runnable` always, leader or not (an event recorder, a cache warmer)."""
        self._runnables.append(runnable)

    def add_controller(self, controller: Drainable, *, leader_only: bool = True) -> None:
        """Run `controller` only while leading (the default), or on every replica
        (`leader_only=False`) from the first full cache sync on; drained on graceful stop.

        A `Gated` controller is given a gate to ask before each key: `may_reconcile` when it is
        leader-only, `may_work` (closed only once the process is failing) when it runs on every
        replica.
        """
        if isinstance(controller, Gated):
            controller.set_work_gate(self.may_reconcile if leader_only else self.may_work)
        (self._controllers if leader_only else self._everywhere).append(controller)

    def add_prestart(self, hook: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Await `hook()` at the start of `run`, before anything runs (a builder wiring kinds
        that discovery must resolve first); a hook that raises ends `run` with that error."""
        self._prestart.append(hook)

    def controller(self, name: str | None = None) -> ControllerBuilder[Any]:
        """A ControllerBuilder on this manager (kro.runtime.builder)."""
        return ControllerBuilder(self, name=name)

    def add_health_check(self, name: str, check: Check) -> None:
        self._health_checks[name] = check

    def add_readiness_check(self, name: str, check: Check) -> None:
        self._ready_checks[name] = check

    # -- the shared cache -----------------------------------------------------------------------

    @property
    def cache(self) -> InformerCache:
        """The process's one informer registry (kro.runtime.cache), run for the life of the
        manager; readiness and controllers wait for the informers it holds for good. Creating
        informers needs the manager's client."""
        if not isinstance(self._client, Client):
            raise ValueError("the shared cache needs Manager(..., client=Client)")
        return self._cache

    @property
    def reader(self) -> CachedReader:
        """Reads from `cache`, falling back to the API server for kinds it does not hold."""
        if self._reader is None:
            self._reader = CachedReader(self.cache, self.cache.client)
        return self._reader

    @property
    def client(self) -> ManagerClient:
        """Reads from `cache` (the API server for kinds nothing caches), writes to the server;
        kinds by name, model or GVR (controller-runtime's `mgr.GetClient()`)."""
        if self._manager_client is None:
            self._manager_client = ManagerClient(
                self.reader, self.cache.client, field_manager=self.options.name
            )
        return self._manager_client

    # -- events ---------------------------------------------------------------------------------
    # One EventRecorder for the process (one buffer, one sender, one spam filter per object, as
    # client-go's broadcaster), run as a runnable and flushed on a graceful stop; controllers
    # report through named views of it. core/v1 Events, as controller-runtime's recorder
    # writes them: `kubectl describe` shows them and every API server version takes them.

    def _new_event_recorder(self, client: LeaseClient | None) -> EventRecorder | None:
        if not isinstance(client, Client):
            return None
        instance = os.environ.get("POD_NAME") or socket.gethostname()
        options = EventRecorderOptions(
            reporting_controller=self.options.name, reporting_instance=instance[:128], api="v1"
        )
        recorder = EventRecorder(client, options, clock=self._clock)
        self.add_runnable(recorder)
        return recorder

    @property
    def events(self) -> EventRecorder:
        """The process's EventRecorder, reporting as the manager's `name`."""
        if self._events is None:
            raise ValueError("Events need Manager(..., client=Client)")
        return self._events

    def event_recorder(self, name: str) -> NamedRecorder:
        """A recorder reporting as `name` (controller-runtime's `GetEventRecorderFor`); the
        builder hands each controller the one named after it, for its failure Warnings."""
        return self.events.named(name)

    async def _flush_events(self, timeout_s: float = 2.0) -> None:
        """Send what controllers recorded before they drained (their last failures)."""
        if self._events is None:
            return
        try:
            await wait_with_timeout(self._clock, self._events.flush(), timeout_s)
        except TimeoutError:
            log.warning("manager.events_dropped", pending=self._events.pending)

    # -- state ----------------------------------------------------------------------------------

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """(host, port) of every bound probe/metrics socket, once `run` has started serving."""
        if self._runner is None:
            return []
        return [(str(a[0]), int(a[1])) for a in self._runner.addresses]

    @property
    def is_leader(self) -> bool:
        if self.options.leader_election is None:
            return not self._controllers_idle.is_set()
        return self._elector is not None and self._elector.is_leader

    def may_reconcile(self) -> bool:
        """May leader-only work start now? False once leadership is in doubt or lost, and after
        a fatal failure (the process is on its way out). Controllers that run on every replica
        ask it before a write only the leader may make."""
        if self._fatal is not None:
            return False
        if self.options.leader_election is None:
            return True
        return self._elector is not None and self._elector.is_leader

    def may_work(self) -> bool:
        """May a controller that runs on every replica start a reconcile now? False only after
        a fatal failure."""
        return self._fatal is None

    async def wait_for_serving(self) -> None:
        """Wait until `run` has bound its probe/metrics sockets (or found none to bind)."""
        await self._serving.wait()

    def is_ready(self) -> bool:
        return not self._failing(self._ready_checks)

    def _informers_synced(self) -> bool:
        return not self._unsynced()

    def _unsynced(self) -> list[str]:
        return self._cache.unsynced()

    def _failing(self, checks: dict[str, Check]) -> list[str]:
        failing = []
        for name, check in checks.items():
            try:
                ok = check()
            except Exception:
                log.warning("manager.check_failed", check=name, exc_info=True)
                ok = False
            if not ok:
                failing.append(name)
        return failing

    # -- running --------------------------------------------------------------------------------

    def stop(self) -> None:
        """Begin a graceful stop; a second call cancels `run` outright."""
        if self._stop_requested.is_set():
            if self._run_task is not None:
                log.warning("manager.forced_stop")
                self._run_task.cancel()
            return
        log.info("manager.stop_requested")
        self._stop_requested.set()

    async def run(self) -> None:
        """Serve and run everything until `stop()` or a signal; returns (re-raises) on cancel.

        Raises what was fatal: LeaderElectionLost, CacheSyncTimeout, ControllersStopped, or the
        exception of a failed informer, runnable or controller, after stopping everything else.
        """
        self._run_task = asyncio.current_task()
        self._install_signal_handlers()
        try:
            for hook in self._prestart:
                await hook()
            await self._start_webhooks()
            await self._start_server()
            self._serving.set()
            try:
                async with asyncio.TaskGroup() as tg:
                    background = [
                        tg.create_task(
                            self._guard(self._cache.run(), "informer"), name="manager:cache"
                        )
                    ]
                    background += [
                        tg.create_task(
                            self._guard(r.run(), "runnable"), name=f"manager:runnable-{i}"
                        )
                        for i, r in enumerate(self._runnables)
                    ]
                    background.append(tg.create_task(self._tune_gc_after_sync(), name="manager:gc"))
                    leader = tg.create_task(
                        self._guard(self._lead(), "leader"), name="manager:leader"
                    )
                    if self._everywhere:
                        leader_or_not = self._run_controllers(
                            self._everywhere, self._everywhere_idle
                        )
                        background.append(
                            tg.create_task(
                                self._guard(leader_or_not, "controller"),
                                name="manager:controllers-every-replica",
                            )
                        )
                    await self._stop_requested.wait()
                    await self._shutdown(leader)
                    for task in background:
                        task.cancel()
            finally:
                await self._stop_server()
        finally:
            await self._stop_webhooks()
            self._remove_signal_handlers()
            log.info("manager.stopped", failed=self._fatal is not None)
        if self._fatal is not None:
            raise self._fatal

    async def _guard(self, work: Coroutine[Any, Any, None], what: str) -> None:
        """Run `work`; if it fails, record the failure and stop the manager (never silently)."""
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail(exc, what)

    def _fail(self, exc: BaseException, what: str) -> None:
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]  # a TaskGroup's wrapping (the elector's): report the cause
        if self._fatal is None:
            self._fatal = exc
            if isinstance(exc, LeaderElectionLost | CacheSyncTimeout | ControllersStopped):
                log.error("manager.fatal", part=what, error=str(exc))
            else:
                log.error("manager.fatal", part=what, error=str(exc), exc_info=exc)
        self._stopping = True  # readiness fails from now on
        self._stop_requested.set()

    async def _lead(self) -> None:
        cfg = self.options.leader_election
        if cfg is None:
            await self._run_leader_controllers()
            return
        assert self._client is not None  # checked in __init__
        self._elector = LeaderElector(
            self._client,
            cfg,
            on_started_leading=self._run_leader_controllers,
            clock=self._clock,
            metrics=self.metrics,
        )
        await self._elector.run(campaign_again=False)

    def _elector_healthy(self) -> bool:
        return self._elector is None or self._elector.is_healthy(tolerance_s=20.0)

    async def _run_leader_controllers(self) -> None:
        await self._run_controllers(self._controllers, self._controllers_idle)

    async def _run_controllers(self, controllers: list[Drainable], idle: asyncio.Event) -> None:
        """Run `controllers` (one group: the leader-only ones, or those of every replica) once
        the caches have synced; `idle` is clear while they run."""
        if self._stopping or not await self._wait_for_cache_sync():
            return
        idle.clear()
        try:
            log.info(
                "manager.controllers_starting",
                controllers=len(controllers),
                leader_only=controllers is self._controllers,
            )
            try:
                async with asyncio.TaskGroup() as tg:
                    for i, controller in enumerate(controllers):
                        tg.create_task(controller.run(), name=f"manager:controller-{i}")
            except BaseExceptionGroup as group:
                # One controller failed and the others were cancelled: surface the cause itself.
                first = group.exceptions[0]
                raise first from group
        finally:
            idle.set()
        if not self._stopping and controllers:
            raise ControllersStopped("every controller returned while the manager was running")

    async def _wait_for_cache_sync(self) -> bool:
        """Controllers start on a complete cache, as controller-runtime's WaitForCacheSync.

        False when the manager began stopping meanwhile (nothing is started then).
        """
        timeout_s = self.options.cache_sync_timeout_s
        deadline = self._clock.now() + timeout_s
        while unsynced := self._unsynced():
            if self._stopping:
                return False
            if self._clock.now() >= deadline:
                raise CacheSyncTimeout(
                    f"caches did not sync within {timeout_s:g}s: {', '.join(unsynced)}"
                )
            await self._clock.sleep(self.options.sync_poll_s)
        return not self._stopping

    async def _shutdown(self, leader: asyncio.Task[None]) -> None:
        """Drain controllers within the grace period, then release leadership."""
        self._stopping = True
        timeout_s = self.options.graceful_shutdown_timeout_s
        log.info("manager.draining", timeout_s=timeout_s)
        for controller in (*self._controllers, *self._everywhere):
            controller.shutdown()

        async def drained() -> None:
            await self._controllers_idle.wait()
            await self._everywhere_idle.wait()

        try:
            await wait_with_timeout(self._clock, drained(), timeout_s)
        except TimeoutError:
            log.warning("manager.drain_timed_out", timeout_s=timeout_s)
        await self._flush_events()  # events: the drained controllers' last Events
        leader.cancel()  # stops what is left; the elector releases the Lease as it unwinds
        await asyncio.wait({leader})

    async def _tune_gc_after_sync(self) -> None:
        tuning = self.options.gc_tuning
        if tuning is None:
            return
        while not self._informers_synced():
            await self._clock.sleep(self.options.sync_poll_s)
        log.info("manager.caches_synced", informers=len(self._cache.informers()))
        tune_gc(tuning)

    # -- webhooks (kro.runtime.webhook_server) --------------------------------------------------

    @property
    def webhooks(self) -> WebhookServer:
        """The admission and conversion webhook server (`ManagerOptions.webhook`), on every
        replica; it listens only once a webhook is registered, before the caches start (a
        conversion webhook must answer the operator's own lists), and stops last."""
        if self._webhooks is None:
            from .webhook_server import WebhookServer

            self._webhooks = WebhookServer(
                self.options.webhook,
                name=self.options.name,
                client=self._client if isinstance(self._client, Client) else None,
                namespace=self.options.namespace,
            )
            self.add_readiness_check("webhooks", self._webhooks_ready)
        return self._webhooks

    def _webhooks_ready(self) -> bool:
        return (
            self._webhooks is None or not self._webhooks.has_webhooks or self._webhooks.is_ready()
        )

    async def _start_webhooks(self) -> None:
        if self._webhooks is not None and self._webhooks.has_webhooks:
            await self._webhooks.start()

    async def _stop_webhooks(self) -> None:
        if self._webhooks is not None:
            await self._webhooks.stop()

    # -- signals --------------------------------------------------------------------------------

    def _install_signal_handlers(self) -> None:
        if not self.options.handle_signals:
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self.stop)

    def _remove_signal_handlers(self) -> None:
        if not self.options.handle_signals:
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)

    # -- the probe and metrics server -----------------------------------------------------------

    async def _start_server(self) -> None:
        opts = self.options
        wanted = []
        for address in (opts.health_probe_bind_address, opts.metrics_bind_address):
            parsed = parse_bind_address(address)
            if parsed is not None and parsed not in wanted:
                wanted.append(parsed)
        if not wanted:
            return
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        if parse_bind_address(opts.metrics_bind_address) is not None:
            app.router.add_get("/metrics", self._metrics)  # "0" turns metrics off entirely
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        for host, port in wanted:
            await web.TCPSite(self._runner, host, port).start()
        log.info("manager.serving", addresses=[f"{h}:{p}" for h, p in self.addresses])

    async def _stop_server(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _probe(self, checks: dict[str, Check]) -> web.Response:
        failing = self._failing(checks)
        if not failing:
            return web.Response(text="ok")
        body = "".join(f"[-]{name} failed\n" for name in failing)
        return web.Response(status=500, text=body + "check failed\n")

    async def _healthz(self, request: web.Request) -> web.Response:
        return self._probe(self._health_checks)

    async def _readyz(self, request: web.Request) -> web.Response:
        return self._probe(self._ready_checks)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})
