"""kro.runtime.controller: N workers that take keys from a WorkQueue and reconcile them.

The controller is the one place where reconcile outcomes are judged (controller-runtime's
reconcileHandler): it counts, logs and backs off failures so reconcilers never do. Its neighbours
are kro.runtime.workqueue (where keys wait, de-duplicated and rate limited), kro.runtime.reconcile
(the contract with the reconciler) and kro.runtime.manager (which runs controllers while this
process leads and drains their queues on shutdown).

Outcomes, per key:
* a `Result()`                 -> forget its failures                    (result="success")
* `Result(requeue_after_s=d)`  -> forget, come back in d seconds          (result="requeue_after")
* `Result(requeue=True)`       -> rate-limited re-add, not an error       (result="requeue")
* `Result(background=True)`    -> forget, re-add behind every other key   (result="requeue")
* `TerminalError`              -> forget, never retried                   (result="error")
* any other exception          -> rate-limited re-add until `max_retries`,
                                  then dropped with `queue.item_dropped`  (result="error")

Each judged reconcile is reported to an optional `ReconcileObserver` (kro.runtime.outcomes) as
an `Outcome`, so a controller hosting many kinds can keep its own score (kro's dynamic
controller keeps upstream kro's per-kind families this way) without a second worker loop.

Leadership: the manager gives the controller a work gate (`set_work_gate`), asked before each
key. While it is closed (leadership in doubt or lost, the process failing) the key goes back to
the queue untouched and the worker waits `gate_poll_s`: a replica that may have been replaced
never starts a reconcile.

Sharding: with a `shard` (kro.runtime.sharding.ShardView, or anything with `begin`/`end`), a
key is reconciled only if `shard.begin(namespace, name)` admits it; a key of another replica's
range is forgotten (its owner has its own events), and `end` is called when the reconcile is
over, so a handover can drain what is in flight.

A key may add fields to the reconcile's log lines with a `log_fields()` method (ObjectRef
adds its resource).

Go has panics and errors; Python has only exceptions. We count as a "panic"
(controller_runtime_reconcile_panics_total) the exception types that signal a bug in the
reconciler rather than a failure of the world (kro.runtime.outcomes.is_bug); they are still retried
like errors.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar, cast

import structlog

from .clock import Clock, RealClock
from .failurelog import FailureLog
from .metrics import NOOP, MetricsProvider
from .outcomes import Observers, Outcome, ReconcileObserver, is_bug
from .reconcile import ObjectKey, Reconciler, Result, TerminalError
from .workqueue import QueueShutDown, WorkQueue

log = structlog.get_logger(__name__)


class _Key(ObjectKey, Hashable, Protocol):
    """A queue key we can label logs with."""


K = TypeVar("K", bound=_Key)


class Admission(Protocol):
    """Which keys this process may reconcile now (kro.runtime.sharding.ShardView is one)."""

    def begin(self, namespace: str, name: str = "") -> bool:
        """Admit one reconcile; False: not ours, skip the key."""
        ...

    def end(self, namespace: str, name: str = "") -> None:
        """The reconcile `begin` admitted is over."""
        ...


# controller-runtime's reconcile_time_seconds buckets.
RECONCILE_TIME_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50,
    60,
)  # fmt: skip


class _ControllerMetrics:
    """controller-runtime's controller metrics, bound to one controller name."""

    def __init__(self, provider: MetricsProvider) -> None:
        c = ("controller",)
        self.total = provider.counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ("controller", "result"),
        )
        self.errors = provider.counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            c,
        )
        self.terminal = provider.counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            c,
        )
        self.panics = provider.counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            c,
        )
        self.time = provider.histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            c,
            RECONCILE_TIME_BUCKETS,
        )
        self.active = provider.gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            c,
        )
        self.max_concurrent = provider.gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            c,
        )

    def initialise(self, controller: str) -> None:
        """Every series at 0 from the start, as controller-runtime does, so that rates and
        alerts on errors exist before the first error."""
        for result in ("success", "error", "requeue", "requeue_after"):
            self.total.inc(0, controller=controller, result=result)
        for counter in (self.errors, self.terminal, self.panics):
            counter.inc(0, controller=controller)


class Controller(Generic[K]):
    """Runs `workers` concurrent reconciles over one queue; a key is never reconciled twice at once.

    max_retries: failures of one key after which it is dropped (None: retry forever with backoff,
    as controller-runtime does). A dropped key returns with its next event.
    unfinished_work_period_s: how often the queue's stuck-worker gauges are refreshed (None:
        never).
    gate_poll_s: how long a worker waits before asking a closed work gate again.
    shard: admits the keys of this replica's share (see the module docstring).
    observer: told about every key taken and every judged reconcile.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler[K],
        queue: WorkQueue[K],
        *,
        workers: int = 1,
        max_retries: int | None = None,
        clock: Clock | None = None,
        metrics: MetricsProvider = NOOP,
        unfinished_work_period_s: float | None = 0.5,
        gate_poll_s: float = 0.1,
        shard: Admission | None = None,
        observer: ReconcileObserver[K] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.queue = queue
        self.workers = workers
        self.max_retries = max_retries
        self._reconciler = reconciler
        self._clock: Clock = clock or RealClock()
        self._metrics = _ControllerMetrics(metrics)
        self._failures = FailureLog(log)
        self._metrics.initialise(name)
        self._unfinished_period_s = unfinished_work_period_s
        self._gate: Callable[[], bool] = _always_open
        self._gate_poll_s = gate_poll_s
        self._shard = shard
        self._observer: ReconcileObserver[K] = observer or ReconcileObserver()

    def add_observer(self, observer: ReconcileObserver[K]) -> None:
        """Tell `observer` too about every key taken and every judged reconcile (after the
        observers given before)."""
        if type(self._observer) is ReconcileObserver:  # the default, which does nothing
            self._observer = observer
        else:
            self._observer = Observers(self._observer, observer)

    def set_work_gate(self, gate: Callable[[], bool]) -> None:
        """Ask `gate()` before each reconcile; keys wait in the queue while it says no."""
        self._gate = gate

    async def run(self) -> None:
        """Work until the queue is shut down and drained; returns (re-raising) on cancellation."""
        self._metrics.max_concurrent.set(self.workers, controller=self.name)
        log.info("controller.started", controller=self.name, workers=self.workers)
        try:
            async with asyncio.TaskGroup() as tg:
                ticker = (
                    tg.create_task(
                        self._report_unfinished_work(self._unfinished_period_s),
                        name=f"controller:{self.name}:metrics",
                    )
                    if self._unfinished_period_s
                    else None
                )
                async with asyncio.TaskGroup() as workers:
                    for i in range(self.workers):
                        workers.create_task(self._work(), name=f"controller:{self.name}:worker-{i}")
                if ticker is not None:
                    ticker.cancel()
        finally:
            log.info("controller.stopped", controller=self.name)

    def shutdown(self) -> None:
        """Stop taking new keys; `run` returns once the queued and in-flight ones are done."""
        self.queue.shutdown()

    async def _work(self) -> None:
        queue = self.queue
        while True:
            try:
                item = await queue.get()
            except QueueShutDown:
                return
            try:
                self._observer.taken(item)
            except Exception:
                log.exception("controller.observer_failed", controller=self.name)
            if not self._gate():
                queue.done(item)
                queue.add(item)
                log.debug("controller.gate_closed", controller=self.name)
                await self._clock.sleep(self._gate_poll_s)
                continue
            try:
                await self._admit(item)
            except asyncio.CancelledError:
                # Stopped mid-reconcile (leadership lost, hard stop): hand the key back so
                # whoever runs next reconciles it.
                queue.done(item)
                queue.add(item)
                raise
            except Exception:
                # Reconciler errors are judged in _reconcile_one; this is the controller's own
                # bug (or an observer's): log it, and never let it end the worker.
                log.exception("controller.process_failed", controller=self.name, key=str(item))
            queue.done(item)
            # A no-op reconcile never suspends, and neither does get() on a non-empty queue;
            # yield so the other workers and the informers get the loop.
            await asyncio.sleep(0)

    async def _admit(self, item: K) -> None:
        """Reconcile `item` if this replica's shard admits it (always without sharding)."""
        shard = self._shard
        if shard is None:
            await self._reconcile_one(item)
            return
        if not shard.begin(item.namespace, item.name):
            log.debug("queue.item_dropped", reason="other_shard", controller=self.name)
            self.queue.forget(item)
            return
        try:
            await self._reconcile_one(item)
        finally:
            shard.end(item.namespace, item.name)

    async def _reconcile_one(self, item: K) -> None:
        m = self._metrics
        fields = cast(Callable[[], dict[str, str]], getattr(item, "log_fields", dict))()
        error: Exception | None = None
        with structlog.contextvars.bound_contextvars(
            controller=self.name,
            namespace=item.namespace,
            name=item.name,
            reconcile_id=secrets.token_hex(4),
            **fields,
        ):
            started = self._clock.now()
            m.active.inc(controller=self.name)
            try:
                result = await self._reconciler.reconcile(item)
            except TerminalError as exc:
                error, outcome = exc, Outcome.TERMINAL
                m.errors.inc(controller=self.name)
                m.terminal.inc(controller=self.name)
                log.exception("reconcile.terminal_error")
                self._failures.forget(item)
                self.queue.forget(item)
            except Exception as exc:
                error = exc
                m.errors.inc(controller=self.name)
                if is_bug(exc):
                    m.panics.inc(controller=self.name)
                outcome = self._retry_or_drop(item, exc)
            else:
                self._failures.succeeded(item)
                outcome = self._requeue_or_forget(item, result)
            finally:
                m.active.dec(controller=self.name)
                seconds = self._clock.now() - started
                m.time.observe(seconds, controller=self.name)
            m.total.inc(controller=self.name, result=outcome.result_label)
            self._observer.reconciled(item, outcome, seconds, error)

    def _retry_or_drop(self, item: K, error: Exception) -> Outcome:
        """Back off a failed key, or give up on it after max_retries (logged with the traceback).

        The traceback is logged once per change of cause (`FailureLog`), not on every retry.
        """
        attempt = self.queue.num_requeues(item) + 1
        if self.max_retries is not None and attempt > self.max_retries:
            log.error("queue.item_dropped", reason="max_retries", attempt=attempt, exc_info=error)
            self._failures.forget(item)
            self.queue.forget(item)
            return Outcome.DROPPED
        self._failures.failed(item, error, event="reconcile.failed", attempt=attempt)
        self.queue.add_rate_limited(item)
        return Outcome.RETRY

    def _requeue_or_forget(self, item: K, result: Result) -> Outcome:
        if result.requeue_after_s is not None and result.requeue_after_s > 0:
            self.queue.forget(item)
            self.queue.add_after(item, result.requeue_after_s)
            return Outcome.REQUEUE_AFTER
        if result.requeue:
            self.queue.add_rate_limited(item)
            return Outcome.REQUEUE
        self.queue.forget(item)
        if result.background:
            self.queue.add_background(item)
            return Outcome.BACKGROUND
        return Outcome.SUCCESS

    async def _report_unfinished_work(self, period_s: float) -> None:
        while True:
            self.queue.update_unfinished_work()
            await self._clock.sleep(period_s)


def _always_open() -> bool:
    return True
