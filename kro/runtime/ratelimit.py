"""kro.runtime.ratelimit: how long a failed work-queue item waits before it is tried again.

The work queue (kro.runtime.workqueue) asks a `RateLimiter` for a delay each time an item is
re-added with `add_rate_limited`, and tells it to `forget` the item once it succeeds. The policies
copy client-go's util/workqueue: a per-item exponential backoff so one broken object backs off
alone, a global token bucket so a mass failure cannot flood the API server, and `MaxOf` to
combine them. `default_controller_rate_limiter` is client-go's DefaultControllerRateLimiter.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from .clock import Clock, RealClock

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

_MAX_EXPONENT = 62  # 2**62 * any sane base is past every cap; avoids float overflow


class RateLimiter(Protocol[T_contra]):
    """Decides the delay before an item is retried, and remembers failures per item."""

    def when(self, item: T_contra) -> float:
        """Record one more failure of `item` and return how many seconds to wait."""
        ...

    def forget(self, item: T_contra) -> None:
        """The item succeeded (or was given up): stop tracking it."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures of `item` are on record."""
        ...


class ItemExponentialBackoff(Generic[T]):
    """Per-item delay base_s * 2**failures, capped at cap_s.

    Per item, so one object that keeps failing backs off without slowing its neighbours.
    """

    def __init__(self, base_s: float = 0.005, cap_s: float = 1000.0) -> None:
        if base_s <= 0 or cap_s < base_s:
            raise ValueError("need 0 < base_s <= cap_s")
        self.base_s = base_s
        self.cap_s = cap_s
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        if exponent >= _MAX_EXPONENT:
            return self.cap_s
        return min(self.base_s * float(1 << exponent), self.cap_s)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class TokenBucket(Generic[T]):
    """A global bucket of `burst` tokens refilled at `qps` per second, shared by all items.

    `when` reserves a token (like Go's rate.Limiter.Reserve): a caller that must wait is told how
    long, and the debt is carried, so sustained retries settle at `qps`. It keeps no per-item
    state, hence `forget` does nothing and `num_requeues` is always 0.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("need qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._clock: Clock = clock or RealClock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def when(self, item: T) -> float:
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_acquire(self) -> bool:
        """Take a token if one is available now; never goes into debt (for spam filters)."""
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def forget(self, item: T) -> None:
        return None

    def num_requeues(self, item: T) -> int:
        return 0

    def _refill(self) -> None:
        now = self._clock.now()
        elapsed = max(now - self._last, 0.0)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)


class MaxOf(Generic[T]):
    """Combine limiters: the delay is the longest any of them asks for."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOf needs at least one limiter")
        self.limiters = limiters

    def when(self, item: T) -> float:
        # Every limiter must see the failure (each keeps its own books), so no short-circuit.
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOf[T]:
    """client-go's DefaultControllerRateLimiter: 5 ms..1000 s per item, 10 qps / 100 burst."""
    return MaxOf(
        ItemExponentialBackoff[T](base_s=0.005, cap_s=1000.0),
        TokenBucket[T](qps=10.0, burst=100, clock=clock),
    )
