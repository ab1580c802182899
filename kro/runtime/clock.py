"""kro.runtime.clock: the one source of time for every delay, backoff, lease and timeout.

Everything in kro.runtime that waits or measures (work-queue delays, rate limiters, leader
election, the event recorder) takes a `Clock` instead of calling `asyncio.sleep` or
`time.monotonic`, so tests swap in `FakeClock` and run hours of backoff in microseconds,
deterministically, without fixed sleeps.

`Clock.now()` is monotonic seconds with an arbitrary origin: use it for durations and deadlines,
never as wall-clock time (leader election and events take a separate wall-time source).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable
from typing import Protocol, TypeVar

T = TypeVar("T")

_SETTLE_MAX_YIELDS = 200


class Clock(Protocol):
    """Monotonic time and sleeping; the injection point for every delay."""

    def now(self) -> float:
        """Monotonic seconds (arbitrary origin)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend for `seconds` of this clock's time; a non-positive value just yields."""
        ...


class RealClock:
    """The event loop's own monotonic clock, so our deadlines agree with asyncio's timers."""

    def now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:  # called outside a loop (construction time); same source
            return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


class FakeClock:
    """A clock that moves only when a test calls `advance`.

    Sleepers wake in deadline order (ties in the order they went to sleep). After each wake-up the
    clock lets the event loop run the woken task until it blocks again before moving on, so a
    task that sleeps again within the advanced window is woken in the same `advance` call, and
    side effects happen in the order a real clock would produce them.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._changed: asyncio.Event | None = None

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        self._notify()
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, waking every sleeper whose deadline falls inside."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        target = self._now + seconds
        await _settle()
        while True:
            self._drop_cancelled()
            if not self._sleepers or self._sleepers[0][0] > target:
                break
            deadline, _, future = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            future.set_result(None)
            await _settle()
        self._now = target
        await _settle()

    def jump(self, seconds: float) -> None:
        """Move time forward without waking anyone, as if the process had been paused
        (SIGSTOP, a frozen VM): sleepers past their deadline wake at the next `advance`."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds

    @property
    def sleepers(self) -> int:
        """How many tasks are currently sleeping on this clock."""
        self._drop_cancelled()
        return sum(1 for _, _, f in self._sleepers if not f.done())

    @property
    def next_deadline(self) -> float | None:
        """When the earliest sleeper is due, or None when nobody sleeps."""
        self._drop_cancelled()
        return self._sleepers[0][0] if self._sleepers else None

    async def wait_for_sleepers(self, count: int = 1) -> None:
        """Wait until at least `count` tasks sleep on this clock (wrap in a deadline)."""
        while self.sleepers < count:
            if self._changed is None:
                self._changed = asyncio.Event()
            self._changed.clear()
            await self._changed.wait()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()

    def _drop_cancelled(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)


async def _settle() -> None:
    """Yield until the loop has nothing ready to run (bounded), letting woken tasks progress."""
    loop = asyncio.get_running_loop()
    ready = getattr(loop, "_ready", None)
    for _ in range(_SETTLE_MAX_YIELDS):
        await asyncio.sleep(0)
        if ready is not None and not ready:
            return


async def wait_with_timeout(clock: Clock, awaitable: Awaitable[T], timeout_s: float) -> T:
    """Await `awaitable`, cancelling it and raising TimeoutError after `timeout_s` of `clock` time.

    `asyncio.timeout` would measure real time and escape a FakeClock; this races the work against
    `clock.sleep` instead.
    """
    work = asyncio.ensure_future(awaitable)
    timer = asyncio.ensure_future(clock.sleep(timeout_s))
    try:
        await asyncio.wait({work, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        if not work.done():
            work.cancel()
    if work.done():
        return work.result()
    raise TimeoutError(f"no result within {timeout_s}s")
