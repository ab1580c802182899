"""DynamicController outcome handling (W-05), retries, isolation and per-key exclusivity (W-04)."""

from __future__ import annotations

import asyncio

import pytest
from dynamic_fakes import WIDGETS, FakeKube, MakeController, Metrics, Recorder, obj, running

from kro.dynamic import DynamicController, ObjectRef
from kro.runtime.clock import FakeClock
from kro.runtime.errors import NotFound
from kro.runtime.reconcile import Request, Result, TerminalError

A = ObjectRef(WIDGETS, "default", "a")
B = ObjectRef(WIDGETS, "default", "b")
GVR_KEY = "example.com/v1, Resource=widgets"  # one label format everywhere


async def wait_until_idle(dynamic: DynamicController) -> None:
    """Nothing ready and nothing in flight (delayed items may still wait on the clock)."""

    async def idle() -> None:
        # The queue has no "idle" event to wait on; yield (never sleep) until it drains.
        while len(dynamic.queue) or dynamic.queue.processing:  # noqa: ASYNC110
            await asyncio.sleep(0)

    await asyncio.wait_for(idle(), 2.0)


def requeues(metrics: Metrics, kind: str) -> float:
    return metrics.value("dynamic_controller_requeue_total", gvr=GVR_KEY, type=kind)


async def test_success_is_counted_and_not_requeued(
    dynamic: DynamicController, metrics: Metrics
) -> None:
    handler = Recorder()
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        dynamic.enqueue(A)
        await handler.wait_for_calls(1)
        await wait_until_idle(dynamic)
    assert handler.calls == [Request("default", "a")]
    assert metrics.value("dynamic_controller_reconcile_total", gvr=GVR_KEY) == 1
    assert len(metrics.observed("dynamic_controller_reconcile_duration_seconds", gvr=GVR_KEY)) == 1
    assert dynamic.queue.waiting == 0


async def test_requeue_after_comes_back_after_the_delay(
    dynamic: DynamicController, clock: FakeClock, metrics: Metrics
) -> None:
    async def later(request: Request) -> Result:
        return Result(requeue_after_s=5.0) if len(handler.calls) == 1 else Result()

    handler = Recorder(later)
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        dynamic.enqueue(A)
        await handler.wait_for_calls(1)
        await wait_until_idle(dynamic)
        assert dynamic.queue.waiting == 1
        await clock.advance(4.9)
        assert len(handler.calls) == 1
        await clock.advance(0.1)
        await handler.wait_for_calls(2)
    assert requeues(metrics, "requeue_after") == 1
    assert dynamic.queue.num_requeues(A) == 0  # not a retry


async def test_requeue_comes_back_after_the_rate_limited_delay_without_an_error(
    dynamic: DynamicController, clock: FakeClock, metrics: Metrics
) -> None:
    """One requeue contract with kro.runtime.Controller (controller-runtime's): a bare requeue
    is a rate-limited re-add, not an error and not a failure to remember."""

    async def again(request: Request) -> Result:
        return Result(requeue=len(handler.calls) == 1)

    handler = Recorder(again)
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        dynamic.enqueue(A)
        await handler.wait_for_calls(1)
        await wait_until_idle(dynamic)
        await clock.advance(0.19)  # the first per-item delay is 200ms
        assert len(handler.calls) == 1
        await clock.advance(0.01)
        await handler.wait_for_calls(2)
    assert requeues(metrics, "requeue") == 1
    assert metrics.value("dynamic_controller_handler_errors_total", gvr=GVR_KEY) == 0


@pytest.mark.parametrize(
    ("error", "counted_as_error", "requeue_type"),
    [
        (TerminalError("give up"), False, "no_requeue"),
        (NotFound(status=404, reason="NotFound", message="gone"), False, None),
    ],
    ids=["terminal-is-no-requeue", "not-found-dropped"],
)
async def test_errors_that_are_not_retried(
    dynamic: DynamicController,
    metrics: Metrics,
    error: Exception,
    counted_as_error: bool,
    requeue_type: str | None,
) -> None:
    async def fail(request: Request) -> Result:
        raise error

    handler = Recorder(fail)
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        dynamic.enqueue(A)
        await handler.wait_for_calls(1)
        await wait_until_idle(dynamic)
    assert dynamic.queue.waiting == 0
    assert metrics.value("dynamic_controller_handler_errors_total", gvr=GVR_KEY) == 0
    if requeue_type:
        assert requeues(metrics, requeue_type) == 1


async def test_failures_back_off_and_are_dropped_after_max_retries(
    dynamic: DynamicController, clock: FakeClock, metrics: Metrics
) -> None:
    async def fail(request: Request) -> Result:
        raise RuntimeError("boom")

    handler = Recorder(fail)
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        dynamic.enqueue(A)
        await handler.wait_for_calls(1)
        await wait_until_idle(dynamic)
        await clock.advance(0.19)  # first backoff is 200ms
        assert len(handler.calls) == 1
        await clock.advance(0.01)
        await handler.wait_for_calls(2)
        for _ in range(60):
            await wait_until_idle(dynamic)
            if not dynamic.queue.waiting:
                break
            await clock.advance(1000.0)  # the backoff cap
    assert len(handler.calls) == 21  # the first try + 20 retries
    assert requeues(metrics, "rate_limited") == 20
    assert metrics.value("dynamic_controller_handler_errors_total", gvr=GVR_KEY) == 21
    assert metrics.value("dynamic_controller_reconcile_panics_total", gvr=GVR_KEY) == 0
    assert dynamic.queue.num_requeues(A) == 0  # forgotten once dropped


async def test_retry_cap_is_configurable(make_controller: MakeController, clock: FakeClock) -> None:
    dynamic = make_controller(max_retries=1, retry_min_delay_s=1.0)

    async def fail(request: Request) -> Result:
        raise RuntimeError("boom")

    handler = Recorder(fail)
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        dynamic.enqueue(A)
        await handler.wait_for_calls(1)
        await wait_until_idle(dynamic)
        await clock.advance(1.0)
        await handler.wait_for_calls(2)
        await wait_until_idle(dynamic)
        assert dynamic.queue.waiting == 0


async def test_a_bug_in_a_handler_counts_as_panic_and_spares_the_worker(
    dynamic: DynamicController, metrics: Metrics
) -> None:
    async def buggy(request: Request) -> Result:
        if request.name == "a":
            raise KeyError("oops")
        return Result()

    handler = Recorder(buggy)
    await dynamic.register(WIDGETS, handler)  # one worker
    async with running(dynamic):
        dynamic.enqueue(A)
        dynamic.enqueue(B)
        await handler.wait_for_calls(1, Request("default", "b"))
    assert metrics.value("dynamic_controller_reconcile_panics_total", gvr=GVR_KEY) == 1
    assert metrics.value("dynamic_controller_handler_errors_total", gvr=GVR_KEY) == 1


async def test_a_key_is_never_reconciled_concurrently(make_controller: MakeController) -> None:
    dynamic = make_controller(workers=3)
    release = asyncio.Event()

    async def slow(request: Request) -> Result:
        if request.name == "a":
            await release.wait()
        return Result()

    handler = Recorder(slow)
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        dynamic.enqueue(A)
        await handler.wait_for_calls(1)
        dynamic.enqueue(A)  # while a worker holds it
        dynamic.enqueue(B)
        await handler.wait_for_calls(1, Request("default", "b"))  # other workers are free
        assert handler.count(Request("default", "a")) == 1
        release.set()
        await handler.wait_for_calls(2, Request("default", "a"))
    assert handler.max_active[Request("default", "a")] == 1


async def test_items_of_a_deregistered_kind_are_dropped(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    handler = Recorder()
    await dynamic.register(WIDGETS, handler)
    kube.put(WIDGETS, obj("a"))
    await kube.settle(WIDGETS)
    await dynamic.deregister(WIDGETS)
    async with running(dynamic):
        await wait_until_idle(dynamic)
    assert handler.calls == []


async def test_queue_length_gauge_follows_the_queue(
    dynamic: DynamicController, metrics: Metrics
) -> None:
    await dynamic.register(WIDGETS, Recorder())
    dynamic.enqueue(A)
    dynamic.enqueue(B)
    assert metrics.value("dynamic_controller_queue_length") == 2
    async with running(dynamic):
        await wait_until_idle(dynamic)
    assert metrics.value("dynamic_controller_queue_length") == 0


async def test_a_closed_work_gate_holds_items_until_it_opens(
    dynamic: DynamicController, clock: FakeClock
) -> None:
    leading = [False]
    dynamic.set_work_gate(lambda: leading[0])
    handler = Recorder()
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        dynamic.enqueue(A)
        await clock.advance(1.0)
        assert handler.calls == []  # not leading (or leadership in doubt): nothing reconciled
        leading[0] = True
        await clock.advance(0.1)
        await handler.wait_for_calls(1)
    assert handler.calls == [Request("default", "a")]


async def test_a_stopped_controller_cannot_be_run_for_a_second_term(
    dynamic: DynamicController,
) -> None:
    async with running(dynamic):
        pass
    with pytest.raises(RuntimeError, match="runs once"):
        await dynamic.run()
