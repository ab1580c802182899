"""FakeClock moves only on advance(), wakes sleepers in order; wait_with_timeout uses the clock."""

from __future__ import annotations

import asyncio

import pytest

from kro.runtime.clock import FakeClock, RealClock, wait_with_timeout

pytestmark = pytest.mark.usefixtures("no_task_leaks")


async def test_fake_clock_starts_where_told_and_does_not_move_by_itself() -> None:
    clock = FakeClock(start=100.0)
    await asyncio.sleep(0)
    assert clock.now() == 100.0


async def test_sleeper_wakes_only_once_its_deadline_is_reached() -> None:
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(5.0))
    await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=1.0)
    await clock.advance(4.9)
    assert not task.done()
    await clock.advance(0.1)
    assert task.done()
    assert clock.now() == pytest.approx(5.0)


async def test_sleepers_wake_in_deadline_order_seeing_their_own_deadline() -> None:
    clock = FakeClock()
    seen: list[tuple[str, float]] = []

    async def sleeper(label: str, seconds: float) -> None:
        await clock.sleep(seconds)
        seen.append((label, clock.now()))

    async with asyncio.TaskGroup() as tg:
        tg.create_task(sleeper("late", 3.0))
        tg.create_task(sleeper("early", 1.0))
        tg.create_task(sleeper("middle", 2.0))
        await asyncio.wait_for(clock.wait_for_sleepers(3), timeout=1.0)
        await clock.advance(10.0)
    assert seen == [("early", 1.0), ("middle", 2.0), ("late", 3.0)]
    assert clock.now() == 10.0


async def test_a_task_that_sleeps_again_within_the_window_wakes_in_the_same_advance() -> None:
    clock = FakeClock()
    ticks: list[float] = []

    async def ticker() -> None:
        for _ in range(3):
            await clock.sleep(1.0)
            ticks.append(clock.now())

    task = asyncio.create_task(ticker())
    await clock.advance(3.0)
    await asyncio.wait_for(task, timeout=1.0)
    assert ticks == [1.0, 2.0, 3.0]


async def test_cancelled_sleeper_is_no_longer_counted() -> None:
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(1.0))
    await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=1.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.sleepers == 0
    await clock.advance(2.0)  # must not try to wake the cancelled future


async def test_non_positive_sleep_returns_without_advancing() -> None:
    clock = FakeClock()
    await asyncio.wait_for(clock.sleep(0), timeout=1.0)
    assert clock.sleepers == 0


async def test_advance_refuses_to_go_backwards() -> None:
    with pytest.raises(ValueError, match="backwards"):
        await FakeClock().advance(-1.0)


async def test_next_deadline_reports_the_earliest_sleeper() -> None:
    clock = FakeClock()
    assert clock.next_deadline is None
    tasks = [asyncio.create_task(clock.sleep(s)) for s in (4.0, 2.0)]
    await asyncio.wait_for(clock.wait_for_sleepers(2), timeout=1.0)
    assert clock.next_deadline == 2.0
    await clock.advance(4.0)
    await asyncio.gather(*tasks)


async def test_real_clock_is_the_loop_clock() -> None:
    clock = RealClock()
    before = asyncio.get_running_loop().time()
    now = clock.now()
    assert before <= now <= asyncio.get_running_loop().time()


async def test_wait_with_timeout_returns_the_result_in_time() -> None:
    clock = FakeClock()

    async def answer() -> int:
        return 42

    assert await asyncio.wait_for(wait_with_timeout(clock, answer(), 5.0), timeout=1.0) == 42


async def test_wait_with_timeout_cancels_the_work_when_clock_time_runs_out() -> None:
    clock = FakeClock()
    never = asyncio.get_running_loop().create_future()

    async def hang() -> None:
        await never

    waiter = asyncio.create_task(wait_with_timeout(clock, hang(), 5.0))
    await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=1.0)
    await clock.advance(5.0)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(waiter, timeout=1.0)


async def test_wait_with_timeout_propagates_the_work_exception() -> None:
    async def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        await asyncio.wait_for(wait_with_timeout(FakeClock(), boom(), 5.0), timeout=1.0)
