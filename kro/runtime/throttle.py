"""kro.runtime.throttle: the client-side QPS/burst limiter (client-go's flowcontrol token bucket).

The API server protects itself with priority & fairness, but a controller that bursts thousands
of requests after a restart still starves its own watches and gets 429s. client-go therefore
throttles every client; kro (Go) runs with `--client-qps 100 --client-burst 150`. The client
calls `acquire()` once per request and once per watch (re)connect.

Waiters reserve tokens in arrival order (tokens may go negative) and sleep until theirs is due,
so the limiter is fair without a queue, and cancellation hands the reserved token back.
"""

from __future__ import annotations

import asyncio

from kro.runtime.clock import Clock, RealClock


class TokenBucket:
    """`qps` tokens per second, at most `burst` saved up; `qps <= 0` disables limiting."""

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock or RealClock()
        self._tokens = float(burst)
        self._updated = self._clock.now()

    def _refill(self) -> None:
        now = self._clock.now()
        elapsed = now - self._updated
        if elapsed > 0:
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._updated = now

    async def acquire(self) -> float:
        """Take one token, waiting for it if needed; returns the seconds waited."""
        if self.qps <= 0:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        wait_s = -self._tokens / self.qps
        try:
            await self._clock.sleep(wait_s)
        except asyncio.CancelledError:
            self._tokens += 1.0  # our reservation is not used; later waiters may go sooner
            raise
        return wait_s

    def acquire_nowait(self) -> bool:
        """Take a token if one is available now; never waits."""
        if self.qps <= 0:
            return True
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False
