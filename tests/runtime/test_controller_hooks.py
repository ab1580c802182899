"""Controller hooks: the outcome observer, shard admission and per-key log fields.

These are what lets a controller that hosts many kinds (kro's dynamic controller) run on the
one worker loop instead of a copy of it.
"""

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
from kro.runtime.gvk import GVR
from kro.runtime.objectref import ObjectRef
from kro.runtime.outcomes import Outcome, ReconcileObserver
from kro.runtime.ratelimit import ItemExponentialBackoff
from kro.runtime.reconcile import Result, TerminalError
from kro.runtime.workqueue import WorkQueue

pytestmark = pytest.mark.usefixtures("no_task_leaks")

WIDGETS = GVR("example.com", "v1", "widgets")
MINE = ObjectRef(WIDGETS, "mine", "a")
THEIRS = ObjectRef(WIDGETS, "theirs", "b")

Behaviour = Callable[[ObjectRef], Awaitable[Result]]


class Reconciler:
    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.calls: list[ObjectRef] = []
        self.contexts: list[dict[str, Any]] = []

    async def reconcile(self, item: ObjectRef) -> Result:
        self.calls.append(item)
        self.contexts.append(structlog.contextvars.get_contextvars())
        return await self.behaviour(item)


class Score(ReconcileObserver[ObjectRef]):
    def __init__(self, *, fail: bool = False) -> None:
        self.taken_items: list[ObjectRef] = []
        self.outcomes: list[tuple[ObjectRef, Outcome, Exception | None]] = []
        self.fail = fail

    def taken(self, item: ObjectRef) -> None:
        self.taken_items.append(item)

    def reconciled(
        self, item: ObjectRef, outcome: Outcome, seconds: float, error: Exception | None
    ) -> None:
        self.outcomes.append((item, outcome, error))
        if self.fail:
            raise RuntimeError("observer bug")


class Shard:
    """Owns the namespace `mine`; records what it admitted and what ended."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, str]] = []

    def begin(self, namespace: str, name: str = "") -> bool:
        if namespace != "mine":
            return False
        self.log.append(("begin", namespace, name))
        return True

    def end(self, namespace: str, name: str = "") -> None:
        self.log.append(("end", namespace, name))


class Env:
    def __init__(self, behaviour: Behaviour, **options: Any) -> None:
        self.clock = FakeClock()
        self.metrics = RecordingMetrics()
        self.queue = WorkQueue[ObjectRef](
            "hooks",
            clock=self.clock,
            rate_limiter=ItemExponentialBackoff(base_s=1.0, cap_s=60.0),
            metrics=self.metrics,
        )
        self.reconciler = Reconciler(behaviour)
        self.controller = Controller[ObjectRef](
            "hooks", self.reconciler, self.queue, clock=self.clock, metrics=self.metrics, **options
        )

    def idle(self) -> bool:
        return not len(self.queue) and not self.queue.processing


@asynccontextmanager
async def running(env: Env) -> AsyncIterator[None]:
    async with asyncio.TaskGroup() as tg:
        tg.create_task(env.controller.run())
        try:
            yield
        finally:
            env.controller.shutdown()


def behaving(*results: Result | Exception) -> Behaviour:
    """A reconcile that returns (or raises) `results` in turn, then succeeds."""
    pending = list(results)

    async def behave(item: ObjectRef) -> Result:
        outcome = pending.pop(0) if pending else Result()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return behave


@pytest.mark.parametrize(
    ("first", "outcome", "label"),
    [
        (Result(), Outcome.SUCCESS, "success"),
        (Result(requeue_after_s=5.0), Outcome.REQUEUE_AFTER, "requeue_after"),
        (Result(requeue=True), Outcome.REQUEUE, "requeue"),
        (Result(background=True), Outcome.BACKGROUND, "requeue"),
        (TerminalError("no"), Outcome.TERMINAL, "error"),
        (RuntimeError("boom"), Outcome.RETRY, "error"),
    ],
)
async def test_the_observer_is_told_each_judgement(
    first: Result | Exception, outcome: Outcome, label: str
) -> None:
    score = Score()
    env = Env(behaving(first), observer=score)
    env.queue.add(MINE)
    async with running(env):
        await yield_until(lambda: bool(score.outcomes))
    item, judged, error = score.outcomes[0]
    assert (item, judged) == (MINE, outcome)
    assert (error is first) if isinstance(first, Exception) else error is None
    assert score.taken_items[0] == MINE
    assert outcome.result_label == label
    assert (
        env.metrics.value("controller_runtime_reconcile_total", controller="hooks", result=label)
        == 1
    )


async def test_a_background_result_comes_back_after_every_other_key_without_backoff() -> None:
    env: Env

    async def behaviour(item: ObjectRef) -> Result:
        if item == MINE and env.reconciler.calls.count(MINE) == 1:
            env.queue.add(THEIRS)  # new work arrives while MINE's follow-up is pending
            return Result(background=True)
        return Result()

    env = Env(behaviour)
    env.queue.add(MINE)
    async with running(env):
        await yield_until(lambda: len(env.reconciler.calls) == 3 and env.idle())
    # The fake clock never moved: the follow-up did not wait for the rate limiter.
    assert env.reconciler.calls == [MINE, THEIRS, MINE]
    assert env.queue.num_requeues(MINE) == 0


async def test_a_key_dropped_after_max_retries_is_reported_as_dropped() -> None:
    score = Score()
    env = Env(behaving(RuntimeError("boom")), observer=score, max_retries=0)
    env.queue.add(MINE)
    async with running(env):
        await yield_until(lambda: bool(score.outcomes))
    assert [o for _, o, _ in score.outcomes] == [Outcome.DROPPED]
    assert env.queue.waiting == 0


async def test_a_raising_observer_does_not_end_the_worker() -> None:
    score = Score(fail=True)
    env = Env(behaving(), observer=score)
    env.queue.add(MINE)
    env.queue.add(ObjectRef(WIDGETS, "mine", "c"))
    async with running(env):
        await yield_until(lambda: len(score.outcomes) == 2 and env.idle())
    assert len(env.reconciler.calls) == 2


async def test_the_shard_admits_its_keys_and_is_told_when_they_end() -> None:
    shard = Shard()
    env = Env(behaving(), shard=shard)
    env.queue.add(THEIRS)
    env.queue.add(MINE)
    async with running(env):
        await yield_until(lambda: len(shard.log) == 2 and env.idle())
    assert env.reconciler.calls == [MINE]  # another replica's key is not reconciled...
    assert shard.log == [("begin", "mine", "a"), ("end", "mine", "a")]
    assert env.queue.waiting == 0  # ...nor kept: its owner has its own events


async def test_the_shard_is_told_the_end_of_a_failed_reconcile() -> None:
    shard = Shard()
    env = Env(behaving(RuntimeError("boom")), shard=shard)
    env.queue.add(MINE)
    async with running(env):
        await yield_until(lambda: len(shard.log) == 2)
    assert shard.log[-1] == ("end", "mine", "a")


async def test_a_keys_log_fields_are_bound_to_its_reconcile() -> None:
    env = Env(behaving())
    env.queue.add(MINE)
    async with running(env):
        await yield_until(lambda: bool(env.reconciler.calls))
    context = env.reconciler.contexts[0]
    assert context["gvr"] == "example.com/v1, Resource=widgets"
    assert (context["namespace"], context["name"]) == ("mine", "a")


def test_object_refs_name_an_object_whatever_its_uid() -> None:
    """A queue key or a watch is about a name; the uid is carried for reports only."""
    obj = {"metadata": {"namespace": "mine", "name": "a", "uid": "u-1"}}
    ref = ObjectRef.of(WIDGETS, obj)
    assert ref.uid == "u-1"
    assert ref == MINE
    assert hash(ref) == hash(MINE)
    assert str(ref) == "widgets.v1.example.com:mine/a"
    assert ref.request.namespace == "mine"
