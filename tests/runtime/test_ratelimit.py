"""Rate limiters: per-item exponential backoff, a global token bucket, and their maximum."""

from __future__ import annotations

import pytest

from kro.runtime.clock import FakeClock
from kro.runtime.ratelimit import (
    ItemExponentialBackoff,
    MaxOf,
    TokenBucket,
    default_controller_rate_limiter,
)


def test_backoff_doubles_per_failure_from_the_base() -> None:
    limiter = ItemExponentialBackoff[str](base_s=0.005, cap_s=1000.0)
    assert [limiter.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]


def test_backoff_is_capped() -> None:
    limiter = ItemExponentialBackoff[str](base_s=1.0, cap_s=10.0)
    delays = [limiter.when("a") for _ in range(8)]
    assert delays[-1] == 10.0
    assert max(delays) == 10.0


def test_backoff_survives_huge_failure_counts() -> None:
    limiter = ItemExponentialBackoff[str](base_s=0.005, cap_s=1000.0)
    for _ in range(2000):
        delay = limiter.when("a")
    assert delay == 1000.0


def test_backoff_is_per_item() -> None:
    limiter = ItemExponentialBackoff[str](base_s=1.0, cap_s=100.0)
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == 1.0
    assert limiter.num_requeues("a") == 2


def test_forget_resets_an_items_backoff() -> None:
    limiter = ItemExponentialBackoff[str](base_s=1.0, cap_s=100.0)
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 1.0


@pytest.mark.parametrize(
    ("base_s", "cap_s"), [(0.0, 1.0), (2.0, 1.0)], ids=["zero-base", "cap-below-base"]
)
def test_backoff_rejects_nonsense_bounds(base_s: float, cap_s: float) -> None:
    with pytest.raises(ValueError, match="base_s"):
        ItemExponentialBackoff[str](base_s=base_s, cap_s=cap_s)


def test_bucket_allows_a_burst_without_delay() -> None:
    bucket = TokenBucket[str](qps=10.0, burst=3, clock=FakeClock())
    assert [bucket.when("x") for _ in range(3)] == [0.0, 0.0, 0.0]


def test_bucket_spaces_requests_past_the_burst_at_qps() -> None:
    bucket = TokenBucket[str](qps=10.0, burst=1, clock=FakeClock())
    assert bucket.when("x") == 0.0
    assert bucket.when("y") == pytest.approx(0.1)
    assert bucket.when("z") == pytest.approx(0.2)  # debt carries over


async def test_bucket_refills_with_clock_time() -> None:
    clock = FakeClock()
    bucket = TokenBucket[str](qps=10.0, burst=1, clock=clock)
    bucket.when("x")
    await clock.advance(0.1)
    assert bucket.when("y") == pytest.approx(0.0)


async def test_bucket_never_holds_more_than_its_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket[str](qps=10.0, burst=2, clock=clock)
    await clock.advance(1000.0)
    assert [bucket.when("x") for _ in range(3)] == [0.0, 0.0, pytest.approx(0.1)]


def test_bucket_try_acquire_never_goes_into_debt() -> None:
    bucket = TokenBucket[str](qps=1.0, burst=1, clock=FakeClock())
    assert bucket.try_acquire()
    assert not bucket.try_acquire()
    assert not bucket.try_acquire()


def test_bucket_has_no_per_item_state() -> None:
    bucket = TokenBucket[str](qps=1.0, burst=1, clock=FakeClock())
    bucket.when("a")
    bucket.forget("a")
    assert bucket.num_requeues("a") == 0


def test_max_of_takes_the_longest_delay() -> None:
    clock = FakeClock()
    limiter = MaxOf(
        ItemExponentialBackoff[str](base_s=1.0, cap_s=100.0),
        TokenBucket[str](qps=0.1, burst=1, clock=clock),
    )
    assert limiter.when("a") == 1.0  # bucket had a token; backoff says 1 s
    assert limiter.when("a") == pytest.approx(10.0)  # bucket now owes 10 s > backoff 2 s


def test_max_of_forgets_in_every_limiter_and_reports_the_most_requeues() -> None:
    backoff = ItemExponentialBackoff[str](base_s=1.0, cap_s=100.0)
    limiter = MaxOf(backoff, TokenBucket[str](qps=100.0, burst=100, clock=FakeClock()))
    limiter.when("a")
    limiter.when("a")
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert backoff.num_requeues("a") == 0


def test_default_controller_rate_limiter_matches_client_go() -> None:
    limiter: MaxOf[str] = default_controller_rate_limiter(FakeClock())
    assert limiter.when("a") == 0.005
    assert limiter.when("a") == 0.01
