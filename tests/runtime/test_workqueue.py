"""WorkQueue: de-duplication, one worker per key, delays, rate limiting, shutdown, metrics."""

from __future__ import annotations

import asyncio

import pytest
from fakes_control import RecordingMetrics

from kro.runtime.clock import FakeClock
from kro.runtime.metrics import NOOP, MetricsProvider
from kro.runtime.ratelimit import ItemExponentialBackoff
from kro.runtime.workqueue import QueueEmpty, QueueShutDown, WorkQueue

pytestmark = pytest.mark.usefixtures("no_task_leaks")


def make_queue(clock: FakeClock, name: str = "", metrics: MetricsProvider = NOOP) -> WorkQueue[str]:
    limiter = ItemExponentialBackoff[str](base_s=1.0, cap_s=60.0)
    return WorkQueue[str](name, clock=clock, rate_limiter=limiter, metrics=metrics)


async def get(queue: WorkQueue[str]) -> str:
    return await asyncio.wait_for(queue.get(), timeout=1.0)


async def test_added_key_is_handed_out() -> None:
    queue = make_queue(FakeClock())
    queue.add("default/app")
    assert await get(queue) == "default/app"


async def test_repeated_adds_of_a_waiting_key_coalesce() -> None:
    queue = make_queue(FakeClock())
    for _ in range(3):
        queue.add("a")
    assert len(queue) == 1


async def test_keys_come_out_in_insertion_order() -> None:
    queue = make_queue(FakeClock())
    for key in ("a", "b", "c"):
        queue.add(key)
    assert [await get(queue) for _ in range(3)] == ["a", "b", "c"]


async def test_key_added_while_processing_waits_until_done() -> None:
    queue = make_queue(FakeClock())
    queue.add("a")
    assert await get(queue) == "a"
    queue.add("a")
    assert len(queue) == 0  # not handed to a second worker while the first holds it
    queue.done("a")
    assert await get(queue) == "a"


async def test_done_without_readd_does_not_requeue() -> None:
    queue = make_queue(FakeClock())
    queue.add("a")
    await get(queue)
    queue.done("a")
    assert len(queue) == 0
    assert queue.processing == 0


async def test_done_for_a_key_never_taken_does_not_duplicate_it() -> None:
    queue = make_queue(FakeClock())
    queue.add("a")
    queue.done("a")
    assert len(queue) == 1


async def test_blocked_get_returns_when_a_key_arrives() -> None:
    queue = make_queue(FakeClock())
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    queue.add("a")
    assert await asyncio.wait_for(getter, timeout=1.0) == "a"


async def test_cancelled_getter_does_not_swallow_a_key() -> None:
    queue = make_queue(FakeClock())
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")  # wakes `first` ...
    first.cancel()  # ... which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, timeout=1.0) == "a"


async def test_get_nowait_on_an_empty_queue_raises_queue_empty() -> None:
    with pytest.raises(QueueEmpty):
        make_queue(FakeClock()).get_nowait()


async def test_add_after_holds_the_key_until_its_delay_passes() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 5.0)
    await clock.advance(4.9)
    assert len(queue) == 0
    await clock.advance(0.1)
    assert await get(queue) == "a"
    queue.shutdown()


async def test_add_after_earlier_schedule_wins() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 10.0)
    queue.add_after("a", 2.0)
    await clock.advance(2.0)
    assert await get(queue) == "a"
    queue.done("a")
    await clock.advance(10.0)
    assert len(queue) == 0  # the superseded 10 s entry does not fire again
    queue.shutdown()


async def test_add_after_later_schedule_does_not_postpone() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 2.0)
    queue.add_after("a", 10.0)
    await clock.advance(2.0)
    assert await get(queue) == "a"
    queue.shutdown()


async def test_delayed_keys_fire_in_due_order() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("late", 3.0)
    queue.add_after("early", 1.0)
    await clock.advance(3.0)
    assert [await get(queue), await get(queue)] == ["early", "late"]
    queue.shutdown()


async def test_add_after_without_delay_adds_now() -> None:
    queue = make_queue(FakeClock())
    queue.add_after("a", 0.0)
    assert len(queue) == 1


async def test_failed_key_returns_after_its_backoff() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_rate_limited("default/app")
    assert len(queue) == 0  # not due yet
    await clock.advance(1.0)  # fires the delay; no real time passes
    assert await get(queue) == "default/app"
    queue.shutdown()


async def test_rate_limited_readds_back_off_exponentially() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_rate_limited("a")  # 1 s
    queue.add_rate_limited("a")  # 2 s, but the earlier 1 s schedule wins
    assert queue.num_requeues("a") == 2
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.shutdown()


async def test_shutdown_ignores_new_keys() -> None:
    queue = make_queue(FakeClock())
    queue.shutdown()
    queue.add("a")
    queue.add_after("b", 1.0)
    queue.add_rate_limited("c")
    assert len(queue) == 0
    assert queue.waiting == 0


async def test_shutdown_still_hands_out_queued_keys_then_raises() -> None:
    queue = make_queue(FakeClock())
    queue.add("a")
    queue.shutdown()
    assert await get(queue) == "a"
    with pytest.raises(QueueShutDown):
        await get(queue)


async def test_shutdown_wakes_blocked_getters() -> None:
    queue = make_queue(FakeClock())
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(getter, timeout=1.0)


async def test_shutdown_drops_delayed_keys() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 1.0)
    queue.shutdown()
    await clock.advance(5.0)
    assert len(queue) == 0
    assert queue.waiting == 0


async def test_shutdown_with_drain_waits_for_keys_in_flight() -> None:
    queue = make_queue(FakeClock())
    queue.add("a")
    await get(queue)
    drained = asyncio.create_task(queue.shutdown_with_drain())
    await asyncio.sleep(0)
    assert not drained.done()
    queue.done("a")
    await asyncio.wait_for(drained, timeout=1.0)


async def test_shutdown_with_drain_of_an_idle_queue_returns_at_once() -> None:
    await asyncio.wait_for(make_queue(FakeClock()).shutdown_with_drain(), timeout=1.0)


async def test_named_queue_records_client_go_metrics() -> None:
    clock = FakeClock()
    metrics = RecordingMetrics()
    queue = make_queue(clock, name="q", metrics=metrics)
    queue.add("a")
    queue.add("a")
    assert metrics.value("workqueue_adds_total", name="q") == 1
    assert metrics.value("workqueue_depth", name="q") == 1
    await clock.advance(2.0)
    await get(queue)
    assert metrics.observed("workqueue_queue_duration_seconds", name="q") == [2.0]
    await clock.advance(3.0)
    queue.done("a")
    assert metrics.observed("workqueue_work_duration_seconds", name="q") == [3.0]
    queue.add_rate_limited("b")
    assert metrics.value("workqueue_retries_total", name="q") == 1
    queue.shutdown()


async def test_unfinished_work_gauges_grow_while_a_worker_is_stuck() -> None:
    clock = FakeClock()
    metrics = RecordingMetrics()
    queue = make_queue(clock, name="q", metrics=metrics)
    queue.add("a")
    queue.add("b")
    await get(queue)
    await clock.advance(4.0)
    await get(queue)
    await clock.advance(1.0)
    queue.update_unfinished_work()
    assert metrics.value("workqueue_unfinished_work_seconds", name="q") == 6.0
    assert metrics.value("workqueue_longest_running_processor_seconds", name="q") == 5.0


async def test_unnamed_queue_records_no_metrics() -> None:
    metrics = RecordingMetrics()
    queue = make_queue(FakeClock(), metrics=metrics)
    queue.add("a")
    assert metrics.values == {}
