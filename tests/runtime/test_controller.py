"""Controller: outcomes of a reconcile, retries and drops, concurrency, metrics, log context."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import structlog
from fakes_control import RecordingMetrics, yield_until

from kro.runtime.clock import FakeClock
from kro.runtime.controller import Controller
from kro.runtime.ratelimit import ItemExponentialBackoff
from kro.runtime.reconcile import Request, Result, TerminalError
from kro.runtime.workqueue import WorkQueue

pytestmark = pytest.mark.usefixtures("no_task_leaks")

A = Request("default", "a")
B = Request("default", "b")

Behaviour = Callable[[Request], Awaitable[Result]]


async def succeed(request: Request) -> Result:
    return Result()


class Recorder:
    """A reconciler that records calls and delegates to a behaviour."""

    def __init__(self, behaviour: Behaviour = succeed) -> None:
        self.behaviour = behaviour
        self.calls: list[Request] = []
        self.contexts: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()

    async def reconcile(self, request: Request) -> Result:
        self.calls.append(request)
        self.contexts.append(structlog.contextvars.get_contextvars())
        async with self._changed:
            self._changed.notify_all()
        return await self.behaviour(request)

    async def wait_for_calls(self, count: int) -> None:
        async def wait() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.calls) >= count)

        await asyncio.wait_for(wait(), timeout=2.0)


class Env:
    def __init__(self, behaviour: Behaviour = succeed, **options: Any) -> None:
        self.clock = FakeClock()
        self.metrics = RecordingMetrics()
        self.queue = WorkQueue[Request](
            "test",
            clock=self.clock,
            rate_limiter=ItemExponentialBackoff(base_s=1.0, cap_s=60.0),
            metrics=self.metrics,
        )
        self.reconciler = Recorder(behaviour)
        self.controller = Controller(
            "test",
            self.reconciler,
            self.queue,
            clock=self.clock,
            metrics=self.metrics,
            **options,
        )

    def total(self, result: str) -> float:
        return self.metrics.value(
            "controller_runtime_reconcile_total", controller="test", result=result
        )

    def count(self, metric: str) -> float:
        return self.metrics.value(metric, controller="test")


@asynccontextmanager
async def running(env: Env) -> AsyncIterator[asyncio.Task[None]]:
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(env.controller.run())
        try:
            yield task
        finally:
            env.controller.shutdown()


async def wait_until(env: Env, predicate: Callable[[], bool]) -> None:
    await yield_until(predicate)


async def test_successful_reconcile_is_counted_and_forgotten() -> None:
    env = Env()
    env.queue.add_rate_limited(A)  # a failure on record, to be forgotten
    async with running(env):
        await env.clock.advance(1.0)
        await env.reconciler.wait_for_calls(1)
        await wait_until(env, lambda: env.total("success") == 1)
    assert env.reconciler.calls == [A]
    assert env.queue.num_requeues(A) == 0


async def test_failed_reconcile_is_retried_after_backoff() -> None:
    failures = iter([RuntimeError("boom")])

    async def fail_once(request: Request) -> Result:
        for error in failures:
            raise error
        return Result()

    env = Env(fail_once)
    env.queue.add(A)
    async with running(env):
        await env.reconciler.wait_for_calls(1)
        await wait_until(env, lambda: env.queue.waiting == 1)
        await env.clock.advance(1.0)
        await env.reconciler.wait_for_calls(2)
        await wait_until(env, lambda: env.total("success") == 1)
    assert env.total("error") == 1
    assert env.count("controller_runtime_reconcile_errors_total") == 1


async def test_worker_survives_a_failure_and_takes_the_next_key() -> None:
    async def fail_a(request: Request) -> Result:
        if request == A:
            raise RuntimeError("boom")
        return Result()

    env = Env(fail_a)
    env.queue.add(A)
    env.queue.add(B)
    async with running(env):
        await env.reconciler.wait_for_calls(2)
    assert env.reconciler.calls == [A, B]


async def test_key_is_dropped_after_max_retries() -> None:
    async def always_fail(request: Request) -> Result:
        raise RuntimeError("boom")

    env = Env(always_fail, max_retries=2)
    env.queue.add(A)
    with structlog.testing.capture_logs() as logs:
        async with running(env):
            await env.reconciler.wait_for_calls(1)
            await env.clock.advance(1.0)
            await env.reconciler.wait_for_calls(2)
            await env.clock.advance(2.0)
            await env.reconciler.wait_for_calls(3)
            await wait_until(env, lambda: env.total("error") == 3)
            await env.clock.advance(100.0)
    assert len(env.reconciler.calls) == 3  # first try + 2 retries
    dropped = [e for e in logs if e["event"] == "queue.item_dropped"]
    assert len(dropped) == 1
    assert dropped[0]["attempt"] == 3
    assert env.queue.num_requeues(A) == 0
    # The same cause twice: one traceback, then a debug line (once per change of cause).
    assert [e["log_level"] for e in logs if e["event"] == "reconcile.failed"] == ["error"]
    assert [e["attempt"] for e in logs if e["event"] == "reconcile.retrying"] == [2]


async def test_terminal_error_is_not_retried() -> None:
    async def terminal(request: Request) -> Result:
        raise TerminalError("spec.replicas must be positive")

    env = Env(terminal)
    env.queue.add(A)
    async with running(env):
        await env.reconciler.wait_for_calls(1)
        await wait_until(env, lambda: env.total("error") == 1)
        await env.clock.advance(100.0)
    assert len(env.reconciler.calls) == 1
    assert env.queue.waiting == 0
    assert env.count("controller_runtime_terminal_reconcile_errors_total") == 1


async def test_requeue_after_brings_the_key_back_without_counting_a_retry() -> None:
    async def later(request: Request) -> Result:
        return Result(requeue_after_s=30.0)

    env = Env(later)
    env.queue.add(A)
    async with running(env):
        await env.reconciler.wait_for_calls(1)
        await wait_until(env, lambda: env.queue.waiting == 1)
        assert env.queue.num_requeues(A) == 0
        await env.clock.advance(30.0)
        await env.reconciler.wait_for_calls(2)
    assert env.total("requeue_after") >= 1


async def test_requeue_is_rate_limited_and_not_an_error() -> None:
    async def again(request: Request) -> Result:
        return Result(requeue=True)

    env = Env(again)
    env.queue.add(A)
    async with running(env):
        await env.reconciler.wait_for_calls(1)
        await wait_until(env, lambda: env.total("requeue") == 1)
        assert env.queue.num_requeues(A) == 1
        await env.clock.advance(1.0)
        await env.reconciler.wait_for_calls(2)
    assert env.count("controller_runtime_reconcile_errors_total") == 0


async def test_bug_exceptions_count_as_panics() -> None:
    async def buggy(request: Request) -> Result:
        raise AttributeError("'NoneType' object has no attribute 'spec'")

    env = Env(buggy)
    env.queue.add(A)
    async with running(env):
        await env.reconciler.wait_for_calls(1)
        await wait_until(env, lambda: env.total("error") == 1)
    assert env.count("controller_runtime_reconcile_panics_total") == 1


async def test_workers_reconcile_different_keys_concurrently() -> None:
    inside = 0
    peak = 0
    release = asyncio.Event()

    async def hold(request: Request) -> Result:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        await release.wait()
        inside -= 1
        return Result()

    env = Env(hold, workers=3)
    for name in ("a", "b", "c"):
        env.queue.add(Request("default", name))
    async with running(env):
        await env.reconciler.wait_for_calls(3)
        assert env.count("controller_runtime_active_workers") == 3
        release.set()
        await wait_until(env, lambda: env.total("success") == 3)
    assert peak == 3
    assert env.count("controller_runtime_max_concurrent_reconciles") == 3
    assert env.count("controller_runtime_active_workers") == 0


async def test_one_key_is_never_reconciled_by_two_workers_at_once() -> None:
    release = asyncio.Event()
    inside = 0
    peak = 0

    async def hold(request: Request) -> Result:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        await release.wait()
        inside -= 1
        return Result()

    env = Env(hold, workers=4)
    env.queue.add(A)
    async with running(env):
        await env.reconciler.wait_for_calls(1)
        env.queue.add(A)  # an event while A is in flight
        await asyncio.sleep(0)
        assert len(env.reconciler.calls) == 1
        release.set()
        await env.reconciler.wait_for_calls(2)  # deferred re-add runs after the first finishes
    assert peak == 1


async def test_log_context_is_bound_per_reconcile() -> None:
    env = Env()
    env.queue.add(A)
    env.queue.add(B)
    async with running(env):
        await env.reconciler.wait_for_calls(2)
    first, second = env.reconciler.contexts
    assert first["controller"] == "test"
    assert (first["namespace"], first["name"]) == ("default", "a")
    assert second["name"] == "b"
    assert first["reconcile_id"] != second["reconcile_id"]
    assert structlog.contextvars.get_contextvars() == {}


async def test_run_returns_once_the_queue_is_shut_down_and_drained() -> None:
    env = Env()
    env.queue.add(A)
    env.controller.shutdown()
    await asyncio.wait_for(env.controller.run(), timeout=2.0)
    assert env.reconciler.calls == [A]  # queued work is drained, not lost


async def test_cancelling_run_hands_the_in_flight_key_back() -> None:
    async def hang(request: Request) -> Result:
        await asyncio.Event().wait()
        return Result()

    env = Env(hang)
    env.queue.add(A)
    task = asyncio.create_task(env.controller.run())
    await env.reconciler.wait_for_calls(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(env.queue) == 1
    assert env.queue.processing == 0


async def test_unfinished_work_is_reported_while_a_reconcile_hangs() -> None:
    release = asyncio.Event()

    async def hold(request: Request) -> Result:
        await release.wait()
        return Result()

    env = Env(hold, unfinished_work_period_s=1.0)
    env.queue.add(A)
    async with running(env):
        await env.reconciler.wait_for_calls(1)
        await env.clock.advance(3.0)
        longest = env.metrics.value("workqueue_longest_running_processor_seconds", name="test")
        release.set()
    assert longest == 3.0


def test_controller_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="worker"):
        Env(workers=0)


def test_error_series_exist_at_zero_before_any_reconcile() -> None:
    """As controller-runtime: alerts on error rates see the series before the first error."""
    env = Env()
    keys = {key for key in env.metrics.values if dict(key[1]).get("controller") == "test"}
    names = {(name, dict(labels).get("result", "")) for name, labels in keys}
    assert {
        ("controller_runtime_reconcile_errors_total", ""),
        ("controller_runtime_terminal_reconcile_errors_total", ""),
        ("controller_runtime_reconcile_panics_total", ""),
        ("controller_runtime_reconcile_total", "error"),
        ("controller_runtime_reconcile_total", "success"),
    } <= names
    assert env.count("controller_runtime_reconcile_errors_total") == 0
