"""kro.runtime.workqueue: the keyed, de-duplicating, rate-limited queue between events and workers.

Client-go's util/workqueue in one asyncio class. Informer handlers `add` keys; controller workers
`get` a key, reconcile it and call `done`. The invariants, each guarded by one field:

* `_dirty`: a key waits at most once. Ten events for one object before a worker picks it up
  cost one reconcile (reconciliation is level-based, so the coalesced events lose nothing).
* `_processing`: a key is never handed to two workers at once. A key added while it is being
  processed is remembered in `_dirty` and queued again only when `done` is called.
* `_waiting`: keys scheduled with `add_after` / `add_rate_limited`, keyed by their earliest due
  time, released by one timer task the queue owns and cancels at shutdown.

After `shutdown`, adds are ignored but keys already queued are still handed out; `get` raises
`QueueShutDown` only once the queue is empty, so workers drain it and exit.
`shutdown_with_drain` also waits for every handed-out key to be `done`.

Two lanes: `add_background` queues a key behind every key `add` queues, and `add` of a key
waiting in the background promotes it. Why: a restarted controller re-lists every object it
serves; the ones that are probably settled must not delay a new or changed one, and must not
go through the rate limiter (which is for failures) to be spread out either.

Metrics (client-go names, label `name`) are recorded only for named queues, as client-go does.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from .clock import Clock, RealClock
from .metrics import NOOP, MetricsProvider
from .ratelimit import RateLimiter, default_controller_rate_limiter

T = TypeVar("T", bound=Hashable)

# client-go: prometheus.ExponentialBuckets(10e-9, 10, 10) -> 1e-8 s .. 10 s.
DURATION_BUCKETS = tuple(1e-8 * 10**i for i in range(10))


class QueueShutDown(Exception):
    """The queue was shut down and holds nothing more: the worker should exit."""


class QueueEmpty(Exception):
    """`get_nowait` found nothing ready."""


class _QueueMetrics:
    """The seven client-go workqueue metrics, bound to one queue name."""

    def __init__(self, provider: MetricsProvider, name: str) -> None:
        labels = ("name",)
        self.name = name
        self.depth = provider.gauge("workqueue_depth", "Current depth of workqueue", labels)
        self.adds = provider.counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", labels
        )
        self.queue_duration = provider.histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels,
            DURATION_BUCKETS,
        )
        self.work_duration = provider.histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            labels,
            DURATION_BUCKETS,
        )
        self.unfinished = provider.gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed "
            "by work_duration. Large values indicate stuck threads.",
            labels,
        )
        self.longest = provider.gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels,
        )
        self.retries = provider.counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", labels
        )


class WorkQueue(Generic[T]):
    """A rate-limiting, delaying, de-duplicating work queue (see the module docstring)."""

    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: RateLimiter[T] | None = None,
        clock: Clock | None = None,
        metrics: MetricsProvider = NOOP,
    ) -> None:
        self.name = name
        self._clock: Clock = clock or RealClock()
        self._limiter: RateLimiter[T] = rate_limiter or default_controller_rate_limiter(self._clock)
        self._metrics = _QueueMetrics(metrics if name else NOOP, name)
        self._queue: deque[T] = deque()
        self._background: deque[T] = deque()  # may hold stale entries: `_low` says which count
        self._low: set[T] = set()  # dirty keys whose next hand-out is in the background lane
        self._dirty: set[T] = set()
        self._processing: dict[T, float] = {}  # key -> when a worker took it
        self._added_at: dict[T, float] = {}  # key -> when it became dirty (queue duration)
        self._getters: deque[asyncio.Future[None]] = deque()
        self._waiting: list[tuple[float, int, T]] = []  # heap of (due, seq, key); may hold stale
        self._due: dict[T, float] = {}  # key -> its earliest due time; the heap entry that counts
        self._seq = itertools.count()
        self._timer: asyncio.Task[None] | None = None
        self._timer_wake = asyncio.Event()
        self._shutting_down = False
        self._drained = asyncio.Event()

    # -- adding ---------------------------------------------------------------------------------

    def add(self, item: T) -> None:
        """Queue `item` unless it is already waiting; defer it if a worker holds it.

        A key waiting in the background lane moves to the front lane.
        """
        if self._shutting_down:
            return
        if item in self._dirty:
            if item in self._low:
                self._low.discard(item)
                if item not in self._processing:
                    self._queue.append(item)
                    self._metrics.depth.set(len(self), name=self.name)
                    self._wakeup_getter()
            return
        self._metrics.adds.inc(name=self.name)
        self._dirty.add(item)
        self._added_at[item] = self._clock.now()
        if item in self._processing:
            return
        self._queue.append(item)
        self._metrics.depth.set(len(self), name=self.name)
        self._wakeup_getter()

    def add_background(self, item: T) -> None:
        """Queue `item` behind every key of the front lane, unless it is already waiting."""
        if self._shutting_down or item in self._dirty:
            return
        self._metrics.adds.inc(name=self.name)
        self._dirty.add(item)
        self._low.add(item)
        self._added_at[item] = self._clock.now()
        if item in self._processing:
            return
        self._background.append(item)
        self._metrics.depth.set(len(self), name=self.name)
        self._wakeup_getter()

    def add_after(self, item: T, delay_s: float) -> None:
        """Queue `item` after `delay_s`; an earlier pending schedule for it wins."""
        if self._shutting_down:
            return
        if delay_s <= 0:
            self.add(item)
            return
        due = self._clock.now() + delay_s
        current = self._due.get(item)
        if current is not None and current <= due:
            return
        self._due[item] = due
        heapq.heappush(self._waiting, (due, next(self._seq), item))
        if self._waiting[0][2] == item:
            self._timer_wake.set()  # a new earliest deadline: re-arm the timer
        self._ensure_timer()

    def add_rate_limited(self, item: T) -> None:
        """Queue `item` after the delay its rate limiter decides (one more recorded failure)."""
        if self._shutting_down:
            return
        self._metrics.retries.inc(name=self.name)
        self.add_after(item, self._limiter.when(item))

    def forget(self, item: T) -> None:
        """Clear the failure history of `item` (it succeeded, or we gave up on it)."""
        self._limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many rate-limited re-adds of `item` are on record."""
        return self._limiter.num_requeues(item)

    # -- taking ---------------------------------------------------------------------------------

    async def get(self) -> T:
        """Wait for a key and mark it processing; raises QueueShutDown once shut down and empty."""
        while not self._ready():
            if self._shutting_down:
                raise QueueShutDown
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except BaseException:
                getter.cancel()
                with contextlib.suppress(ValueError):
                    self._getters.remove(getter)
                if self._ready() and not getter.cancelled():
                    self._wakeup_getter()  # pass on the wake-up we were given
                raise
        return self._take()

    def get_nowait(self) -> T:
        """Take a ready key without waiting; QueueEmpty if none, QueueShutDown if finished."""
        if not self._ready():
            raise QueueShutDown if self._shutting_down else QueueEmpty
        return self._take()

    def done(self, item: T) -> None:
        """A worker finished `item`; if it was re-added meanwhile, queue it again now."""
        started = self._processing.pop(item, None)
        if started is None:
            return  # not handed out: nothing to finish (and re-queueing would duplicate it)
        self._metrics.work_duration.observe(self._clock.now() - started, name=self.name)
        if item in self._dirty:
            (self._background if item in self._low else self._queue).append(item)
            self._metrics.depth.set(len(self), name=self.name)
            self._wakeup_getter()
        elif self._shutting_down and not self._processing and not self._ready():
            self._drained.set()

    def __len__(self) -> int:
        """Keys ready to be handed out (not those processing or waiting on a delay; a key
        re-added to the background lane while a worker holds it counts already)."""
        return len(self._queue) + len(self._low)

    @property
    def processing(self) -> int:
        """Keys handed out and not yet done."""
        return len(self._processing)

    @property
    def waiting(self) -> int:
        """Keys scheduled for later by add_after / add_rate_limited."""
        return len(self._due)

    # -- shutting down --------------------------------------------------------------------------

    @property
    def is_shutting_down(self) -> bool:
        return self._shutting_down

    def shutdown(self) -> None:
        """Stop accepting keys and drop delayed ones; workers drain what is queued, then exit."""
        if self._shutting_down:
            return
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting.clear()
        self._due.clear()
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
        if not self._processing and not self._ready():
            self._drained.set()

    async def shutdown_with_drain(self) -> None:
        """Shut down and wait until every queued and handed-out key is done.

        Workers must keep running for this to finish; bound it with a timeout.
        """
        self.shutdown()
        await self._drained.wait()

    # -- metrics --------------------------------------------------------------------------------

    def update_unfinished_work(self) -> None:
        """Refresh the stuck-worker gauges; a controller calls this periodically."""
        now = self._clock.now()
        ages = [now - started for started in self._processing.values()]
        self._metrics.unfinished.set(sum(ages), name=self.name)
        self._metrics.longest.set(max(ages, default=0.0), name=self.name)

    # -- internals ------------------------------------------------------------------------------

    def _ready(self) -> bool:
        """Whether a key can be handed out now, from either lane (drops stale background
        entries on the way: keys promoted to the front lane or already handed out)."""
        if self._queue:
            return True
        while self._background:
            item = self._background[0]
            if item in self._low and item not in self._processing:
                return True
            self._background.popleft()
        return False

    def _take(self) -> T:
        if self._queue:
            item = self._queue.popleft()
        else:
            item = self._background.popleft()  # `_ready` left a live entry at the head
            self._low.discard(item)
        now = self._clock.now()
        self._processing[item] = now
        self._dirty.discard(item)
        added = self._added_at.pop(item, None)
        if added is not None:
            self._metrics.queue_duration.observe(now - added, name=self.name)
        self._metrics.depth.set(len(self), name=self.name)
        return item

    def _wakeup_getter(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _ensure_timer(self) -> None:
        if self._timer is None or self._timer.done():
            label = self.name or hex(id(self))
            self._timer = asyncio.get_running_loop().create_task(
                self._run_timer(), name=f"workqueue-timer:{label}"
            )

    async def _run_timer(self) -> None:
        """Move due keys from `_waiting` into the queue; sleeps on the clock until the next one."""
        while True:
            self._timer_wake.clear()
            now = self._clock.now()
            while self._waiting and self._waiting[0][0] <= now:
                due, _, item = heapq.heappop(self._waiting)
                if self._due.get(item) == due:  # else a stale entry superseded by an earlier one
                    del self._due[item]
                    self.add(item)
            if not self._waiting:
                await self._timer_wake.wait()
                continue
            await self._sleep_or_wake(self._waiting[0][0] - now)

    async def _sleep_or_wake(self, delay_s: float) -> None:
        sleeper = asyncio.ensure_future(self._clock.sleep(delay_s))
        waker = asyncio.ensure_future(self._timer_wake.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()
