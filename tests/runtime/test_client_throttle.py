"""TokenBucket: burst, then one token per 1/qps seconds of clock time; cancellation refunds."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from fakeapi_options import FAST

from kro.runtime.client import Client
from kro.runtime.clock import FakeClock
from kro.runtime.config import ConnectionConfig
from kro.runtime.throttle import TokenBucket
from kro.testing.fakeapi import FakeApiServer

pytestmark = pytest.mark.usefixtures("no_task_leaks")


async def test_burst_is_free_then_tokens_arrive_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=2.0, burst=3, clock=clock)
    for _ in range(3):
        assert await bucket.acquire() == 0.0
    waiter = asyncio.create_task(bucket.acquire())
    await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
    assert clock.next_deadline == pytest.approx(0.5)
    await clock.advance(0.5)
    assert await asyncio.wait_for(waiter, timeout=5) == pytest.approx(0.5)


async def test_waiters_queue_up_in_arrival_order() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=1.0, burst=1, clock=clock)
    await bucket.acquire()
    first = asyncio.create_task(bucket.acquire())
    second = asyncio.create_task(bucket.acquire())
    await asyncio.wait_for(clock.wait_for_sleepers(2), timeout=5)
    await clock.advance(1.0)
    assert first.done()
    assert not second.done()
    await clock.advance(1.0)
    assert await asyncio.wait_for(second, timeout=5) == pytest.approx(2.0)


async def test_cancelled_waiter_returns_its_token() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=1.0, burst=1, clock=clock)
    await bucket.acquire()
    waiter = asyncio.create_task(bucket.acquire())
    await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await clock.advance(1.0)
    assert bucket.acquire_nowait()
    assert not bucket.acquire_nowait()


async def test_tokens_do_not_accumulate_past_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10.0, burst=2, clock=clock)
    await clock.advance(100)
    assert [bucket.acquire_nowait() for _ in range(3)] == [True, True, False]


async def test_zero_qps_means_unlimited() -> None:
    bucket = TokenBucket(qps=0, burst=1, clock=FakeClock())
    assert all([bucket.acquire_nowait() for _ in range(100)])
    assert await bucket.acquire() == 0.0


def test_burst_must_be_positive() -> None:
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(qps=1, burst=0)


async def test_client_requests_wait_for_the_limiter(fake_api: FakeApiServer) -> None:
    clock = FakeClock()
    options = dataclasses.replace(FAST, qps=1.0, burst=1, clock=clock)
    async with Client.from_config(ConnectionConfig(server=fake_api.url), options) as client:
        await client.request("GET", "/version")
        second = asyncio.create_task(client.request("GET", "/version"))
        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
        assert len(fake_api.requests) == 1
        await clock.advance(1.0)
        await asyncio.wait_for(second, timeout=5)
    assert len(fake_api.requests) == 2
