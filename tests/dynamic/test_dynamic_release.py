"""Nothing kept per GVR outlives its use: a deregistered parent kind's metric series, the series
of a GVR nobody watches any more, and the coordinator's per-GVR locks all go (kinds come and go
with their RGDs, so anything kept per GVR would grow with every RGD ever created)."""

from __future__ import annotations

import asyncio

import pytest
from dynamic_fakes import (
    CONFIGMAPS,
    SECRETS,
    WIDGETS,
    FakeKube,
    Metrics,
    Recorder,
    obj,
    running,
)

from kro.dynamic import (
    DynamicController,
    InformerSyncTimeout,
    LabelSelector,
    ObjectRef,
    ScalarWatch,
    SelectorWatch,
)
from kro.runtime.cache import InformerCache
from kro.runtime.clock import FakeClock
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result, TerminalError

# One label format on every family (kro.dynamic._metrics): the key is the GVR string too.
WIDGETS_KEY = WIDGETS_STRING = "example.com/v1, Resource=widgets"
SECRETS_STRING = "/v1, Resource=secrets"
SYNC = "dynamic_controller_informer_sync_duration_seconds"
KINDS = tuple(GVR("churn.example.com", "v1", f"kind{i}s") for i in range(12))


@pytest.fixture
def kube() -> FakeKube:
    return FakeKube((CONFIGMAPS, SECRETS, WIDGETS, *KINDS))


def series(metrics: Metrics) -> set[tuple[str, frozenset[tuple[str, str]]]]:
    """Every recorded series: (metric, labels)."""
    return set(metrics.values) | set(metrics.observations)


def mentioning(metrics: Metrics, *values: str) -> set[tuple[str, frozenset[tuple[str, str]]]]:
    """The series with any of `values` as a label value."""
    return {s for s in series(metrics) if any(v in values for _, v in s[1])}


async def idle(dynamic: DynamicController) -> None:
    """Nothing ready and nothing in flight (delayed items may still wait on the clock)."""

    async def wait() -> None:
        while len(dynamic.queue) or dynamic.queue.processing:  # noqa: ASYNC110
            await asyncio.sleep(0)

    await asyncio.wait_for(wait(), 2.0)


# -- a deregistered parent kind -----------------------------------------------------------------


async def test_deregistering_a_kind_removes_every_series_of_it(
    dynamic: DynamicController, kube: FakeKube, metrics: Metrics
) -> None:
    async def widgets(request: Request) -> Result:
        parent = ObjectRef(WIDGETS, request.namespace, request.name)
        await dynamic.watches.watch(parent, ScalarWatch("s", SECRETS, "default", request.name))
        await dynamic.watches.done(parent, commit=True)
        if request.name == "broken":
            raise TypeError("a bug")  # handler error and panic, rate-limited requeue
        if request.name == "final":
            raise TerminalError("no requeue")
        return Result(requeue_after_s=60.0)

    configmaps = Recorder()
    await dynamic.register(CONFIGMAPS, configmaps)
    await dynamic.register(WIDGETS, widgets)
    async with running(dynamic):
        kube.put(CONFIGMAPS, obj("cm"))
        for name in ("ok", "broken", "final"):
            kube.put(WIDGETS, obj(name))
        await configmaps.wait_for_calls(1)
        await kube.settle(WIDGETS)
        await idle(dynamic)
        kube.put(SECRETS, obj("ok"))  # routed to the "ok" widget
        await kube.settle(SECRETS)
        await idle(dynamic)
        recorded = mentioning(metrics, WIDGETS_KEY, WIDGETS_STRING, SECRETS_STRING)
        assert {name for name, _ in recorded} >= {
            "dynamic_controller_reconcile_total",
            "dynamic_controller_reconcile_duration_seconds",
            "dynamic_controller_requeue_total",
            "dynamic_controller_handler_errors_total",
            "dynamic_controller_reconcile_panics_total",
            "dynamic_controller_informer_events_total",
            "dynamic_controller_informer_sync_duration_seconds",
            "dynamic_controller_instance_watch_count",
            "dynamic_controller_watch_request_count",
            "dynamic_controller_route_total",
            "dynamic_controller_route_match_total",
        }
        others = series(metrics) - recorded

        await dynamic.deregister(WIDGETS)
        assert mentioning(metrics, WIDGETS_KEY, WIDGETS_STRING, SECRETS_STRING) == set()
        assert series(metrics) >= others  # the configmaps kind keeps its series
        configmaps = "/v1, Resource=configmaps"
        assert metrics.value("dynamic_controller_reconcile_total", gvr=configmaps) == 1


async def test_a_reconcile_that_ends_after_deregistration_leaves_no_series(
    dynamic: DynamicController, kube: FakeKube, metrics: Metrics
) -> None:
    """The handler records its reconcile (and may watch) after `deregister` removed the series:
    those go once it returns."""
    release = asyncio.Event()

    async def slow(request: Request) -> Result:
        await release.wait()
        parent = ObjectRef(WIDGETS, request.namespace, request.name)
        await dynamic.watches.watch(parent, ScalarWatch("s", SECRETS, "default", "s"))
        await dynamic.watches.done(parent, commit=True)
        return Result(requeue=True)

    handler = Recorder(slow)
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        kube.put(WIDGETS, obj("a"))
        await handler.wait_for_calls(1)
        await dynamic.deregister(WIDGETS)
        release.set()
        await idle(dynamic)
        assert mentioning(metrics, WIDGETS_KEY, WIDGETS_STRING, SECRETS_STRING) == set()
        assert kube.watching[SECRETS] == 0


async def test_shutting_down_keeps_the_kinds_series_for_the_last_scrapes(
    dynamic: DynamicController, kube: FakeKube, metrics: Metrics
) -> None:
    """Stopping is not a kind going away: its reconciles stay on record. The watch series
    follow the watches, which stopping ends."""

    async def watching(request: Request) -> Result:
        parent = ObjectRef(WIDGETS, request.namespace, request.name)
        await dynamic.watches.watch(parent, ScalarWatch("s", SECRETS, "default", "s"))
        await dynamic.watches.done(parent, commit=True)
        return Result()

    handler = Recorder(watching)
    await dynamic.register(WIDGETS, handler)
    async with running(dynamic):
        kube.put(WIDGETS, obj("a"))
        await handler.wait_for_calls(1)
        await idle(dynamic)
    assert dynamic.registered() == frozenset()
    assert dynamic.watches.parents() == frozenset()
    assert metrics.value("dynamic_controller_reconcile_total", gvr=WIDGETS_KEY) == 1
    assert metrics.value(
        "dynamic_controller_informer_events_total", gvr=WIDGETS_STRING, event_type="add"
    )
    assert metrics.observed("dynamic_controller_informer_sync_duration_seconds", gvr=WIDGETS_STRING)
    assert mentioning(metrics, SECRETS_STRING) == set()


async def test_a_parent_kind_also_watched_as_a_child_keeps_its_informer_series(
    dynamic: DynamicController, kube: FakeKube, metrics: Metrics, cache: InformerCache
) -> None:
    """The sync duration belongs to the informer, which lives while anyone holds it; the
    routing series to the watches."""
    routes = {"dynamic_controller_route_total", "dynamic_controller_route_match_total"}
    await dynamic.register(SECRETS, Recorder())
    parent = ObjectRef(WIDGETS, "default", "p")
    await dynamic.watches.watch(parent, ScalarWatch("s", SECRETS, "default", "s"))
    await dynamic.watches.done(parent, commit=True)

    await dynamic.deregister(SECRETS)  # still held by the watch
    assert metrics.observed(SYNC, gvr=SECRETS_STRING)
    assert metrics.value(
        "dynamic_controller_watch_request_count", gvr=SECRETS_STRING, type="scalar"
    )

    await dynamic.watches.forget(parent)
    assert cache.informers() == []
    assert mentioning(metrics, SECRETS_STRING) == set()

    # The other way round: the last watch goes first, the registration keeps the informer.
    await dynamic.register(SECRETS, Recorder())
    await dynamic.watches.watch(parent, ScalarWatch("s", SECRETS, "default", "s"))
    kube.put(SECRETS, obj("s"))
    await kube.settle(SECRETS)
    assert {name for name, _ in mentioning(metrics, SECRETS_STRING)} >= {SYNC, *routes}
    await dynamic.watches.forget(parent)
    left = {name for name, _ in mentioning(metrics, SECRETS_STRING)}
    assert SYNC in left
    assert not left & routes


# -- watched GVRs -------------------------------------------------------------------------------


async def test_watch_gauges_are_removed_when_they_fall_to_zero(
    dynamic: DynamicController, kube: FakeKube, metrics: Metrics
) -> None:
    parent = ObjectRef(WIDGETS, "default", "p")
    for request in (
        ScalarWatch("s", SECRETS, "default", "s"),
        SelectorWatch("all", SECRETS, None, LabelSelector.parse("app=web")),
    ):
        await dynamic.watches.watch(parent, request)
    await dynamic.watches.done(parent, commit=True)
    kube.put(SECRETS, obj("s"))
    await kube.settle(SECRETS)
    assert {name for name, _ in mentioning(metrics, SECRETS_STRING, WIDGETS_STRING)} == {
        "dynamic_controller_informer_sync_duration_seconds",
        "dynamic_controller_instance_watch_count",
        "dynamic_controller_watch_request_count",
        "dynamic_controller_route_total",
        "dynamic_controller_route_match_total",
    }

    await dynamic.watches.watch(parent, ScalarWatch("s", SECRETS, "default", "s"))
    await dynamic.watches.done(parent, commit=True)  # the selector goes
    assert (
        "dynamic_controller_watch_request_count",
        frozenset({("gvr", SECRETS_STRING), ("type", "collection")}),
    ) not in series(metrics)
    assert metrics.value(
        "dynamic_controller_watch_request_count", gvr=SECRETS_STRING, type="scalar"
    )

    await dynamic.watches.done(parent, commit=True)  # a cycle that read nothing
    assert mentioning(metrics, SECRETS_STRING, WIDGETS_STRING) == set()


async def test_the_lock_map_keeps_nothing_for_gvrs_nobody_watches(
    dynamic: DynamicController, cache: InformerCache
) -> None:
    for i, gvr in enumerate(KINDS):
        parent = ObjectRef(WIDGETS, "default", f"p{i}")
        await dynamic.watches.watch(parent, ScalarWatch("c", gvr, "default", "c"))
        await dynamic.watches.done(parent, commit=True)
        await dynamic.watches.forget(parent)
        assert dynamic.watches._locks == {}
    assert cache.informers() == []


async def test_a_caller_queued_on_the_lock_shares_it_and_it_goes_after_both(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    first, second = ObjectRef(WIDGETS, "default", "a"), ObjectRef(WIDGETS, "default", "b")
    request = ScalarWatch("c", KINDS[0], "default", "c")
    tasks = [
        asyncio.create_task(dynamic.watches.watch(parent, request)) for parent in (first, second)
    ]
    await asyncio.sleep(0)
    lock = dynamic.watches._locks[KINDS[0]]
    assert lock.locked()
    assert lock._waiters
    await asyncio.wait_for(asyncio.gather(*tasks), 2.0)
    assert dynamic.watches._locks == {}
    assert kube.lists[KINDS[0]] == 1  # the queued caller found the informer listed
    for parent in (first, second):
        await dynamic.watches.forget(parent)


async def test_a_queued_caller_that_gives_up_leaves_no_lock(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    first, second = ObjectRef(WIDGETS, "default", "a"), ObjectRef(WIDGETS, "default", "b")
    request = ScalarWatch("c", KINDS[1], "default", "c")
    holder = asyncio.create_task(dynamic.watches.watch(first, request))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(dynamic.watches.watch(second, request))
    await asyncio.sleep(0)
    assert dynamic.watches._locks[KINDS[1]]._waiters  # queued behind the holder
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.wait_for(holder, 2.0)
    assert dynamic.watches._locks == {}
    await dynamic.watches.done(second, commit=False)
    await dynamic.watches.forget(first)
    assert dynamic.watches.parents() == frozenset()


async def test_a_kind_that_cannot_be_listed_leaves_no_lock(
    dynamic: DynamicController, clock: FakeClock
) -> None:
    parent = ObjectRef(WIDGETS, "default", "a")
    ghosts = ScalarWatch("g", GVR("nowhere.example.com", "v1", "ghosts"), "default", "g")
    task = asyncio.create_task(dynamic.watches.watch(parent, ghosts))
    await asyncio.wait_for(clock.wait_for_sleepers(1), 2.0)
    await clock.advance(30.0)
    with pytest.raises(InformerSyncTimeout):
        await asyncio.wait_for(task, 2.0)
    assert dynamic.watches._locks == {}
    await dynamic.watches.done(parent, commit=False)
