"""DynamicController registration and parent events (W-06, W-07, N-04, N-05)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from dynamic_fakes import (
    CONFIGMAPS,
    SECRETS,
    WIDGETS,
    FakeKube,
    MakeController,
    Metrics,
    Recorder,
    drain,
    obj,
    running,
)

from kro.dynamic import (
    DynamicController,
    InformerSyncTimeout,
    ObjectRef,
    ScalarWatch,
    generation_changed,
)
from kro.dynamic.controller import QUEUE_NAME
from kro.runtime.cache import InformerCache
from kro.runtime.clock import FakeClock
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result


def ref(name: str, gvr: GVR = WIDGETS, namespace: str = "default") -> ObjectRef:
    return ObjectRef(gvr, namespace, name)


async def test_first_registration_enqueues_every_cached_object(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    kube.put(WIDGETS, obj("a"))
    kube.put(WIDGETS, obj("b", "other"))
    await dynamic.register(WIDGETS, Recorder())
    assert dynamic.queue.name == QUEUE_NAME
    assert set(drain(dynamic.queue)) == {ref("a"), ref("b", namespace="other")}


async def test_add_and_delete_enqueue(dynamic: DynamicController, kube: FakeKube) -> None:
    await dynamic.register(WIDGETS, Recorder())
    kube.put(WIDGETS, obj("a"))
    await kube.settle(WIDGETS)
    assert drain(dynamic.queue) == [ref("a")]
    kube.delete(WIDGETS, "a")
    await kube.settle(WIDGETS)
    assert drain(dynamic.queue) == [ref("a")]


async def test_update_enqueues_only_on_generation_change(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    kube.put(WIDGETS, obj("a", spec={"size": 1}))
    await dynamic.register(WIDGETS, Recorder())
    drain(dynamic.queue)
    kube.put(WIDGETS, obj("a", spec={"size": 1}, labels={"x": "y"}, status={"ok": True}))
    await kube.settle(WIDGETS)
    assert drain(dynamic.queue) == []
    kube.put(WIDGETS, obj("a", spec={"size": 2}))
    await kube.settle(WIDGETS)
    assert drain(dynamic.queue) == [ref("a")]


async def test_update_predicate_is_the_callers(dynamic: DynamicController, kube: FakeKube) -> None:
    def suspension_flipped(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        def suspended(o: Mapping[str, Any]) -> bool:
            return (o["metadata"].get("labels") or {}).get("pause") == "yes"

        return generation_changed(old, new) or suspended(old) != suspended(new)

    kube.put(WIDGETS, obj("a"))
    await dynamic.register(WIDGETS, Recorder(), should_enqueue_update=suspension_flipped)
    drain(dynamic.queue)
    kube.put(WIDGETS, obj("a", labels={"pause": "yes"}))
    await kube.settle(WIDGETS)
    assert drain(dynamic.queue) == [ref("a")]
    kube.put(WIDGETS, obj("a", labels={"pause": "yes", "other": "x"}))
    await kube.settle(WIDGETS)
    assert drain(dynamic.queue) == []


async def test_reregistration_replaces_handler_and_reenqueues_all(
    dynamic: DynamicController, kube: FakeKube, cache: InformerCache
) -> None:
    kube.put(WIDGETS, obj("a"))
    kube.put(WIDGETS, obj("b"))
    first, second = Recorder(), Recorder()
    await dynamic.register(WIDGETS, first)
    drain(dynamic.queue)
    await dynamic.register(WIDGETS, second)
    assert set(drain(dynamic.queue)) == {ref("a"), ref("b")}
    assert len(cache.informers()) == 1
    assert kube.lists[WIDGETS] == 1  # no second informer, no second LIST
    async with running(dynamic):
        dynamic.enqueue(ref("a"))
        await second.wait_for_calls(1)
    assert first.calls == []


async def test_deregister_detaches_releases_and_drops_queued_items(
    dynamic: DynamicController, kube: FakeKube, cache: InformerCache
) -> None:
    kube.put(WIDGETS, obj("a"))
    widgets, secrets = Recorder(), Recorder()
    await dynamic.register(WIDGETS, widgets)
    await dynamic.register(SECRETS, secrets)
    await dynamic.deregister(WIDGETS)
    assert not dynamic.is_registered(WIDGETS)
    assert dynamic.registered() == {SECRETS}
    assert kube.watching[WIDGETS] == 0
    assert [i.gvr for i in cache.informers()] == [SECRETS]
    kube.put(WIDGETS, obj("b"))  # no longer watched: nothing arrives
    async with running(dynamic):
        dynamic.enqueue(ref("s", SECRETS))  # queued after the widget: a FIFO barrier
        await secrets.wait_for_calls(1)
    assert widgets.calls == []
    await dynamic.deregister(WIDGETS)  # idempotent


async def test_registration_fails_when_the_kind_cannot_be_listed(
    make_controller: MakeController, clock: FakeClock, cache: InformerCache
) -> None:
    dynamic = make_controller(informer_sync_timeout_s=30.0)
    missing = GVR("nowhere.example.com", "v1", "ghosts")
    task = asyncio.create_task(dynamic.register(missing, Recorder()))
    await asyncio.wait_for(clock.wait_for_sleepers(2), 2.0)  # list backoff + sync deadline
    await clock.advance(30.0)
    with pytest.raises(InformerSyncTimeout) as caught:
        await asyncio.wait_for(task, 2.0)
    assert caught.value.gvr == missing
    assert not dynamic.is_registered(missing)
    assert cache.informers() == []


async def test_registration_metrics(
    dynamic: DynamicController, kube: FakeKube, metrics: Metrics
) -> None:
    kube.put(CONFIGMAPS, obj("a"))
    await dynamic.register(CONFIGMAPS, Recorder())
    await dynamic.register(WIDGETS, Recorder())
    await dynamic.register(WIDGETS, Recorder())
    assert metrics.value("dynamic_controller_gvr_count") == 2
    assert metrics.value("dynamic_controller_handler_count_total", type="parent") == 2
    assert metrics.value("dynamic_controller_handler_attach_total", type="parent") == 2
    assert metrics.value("dynamic_controller_watch_count") == 2
    assert (
        metrics.value(
            "dynamic_controller_informer_events_total",
            gvr="/v1, Resource=configmaps",
            event_type="add",
        )
        == 1
    )
    assert (
        len(
            metrics.observed(
                "dynamic_controller_informer_sync_duration_seconds",
                gvr="example.com/v1, Resource=widgets",
            )
        )
        == 1
    )
    await dynamic.deregister(WIDGETS)
    assert metrics.value("dynamic_controller_gvr_count") == 1
    assert metrics.value("dynamic_controller_handler_detach_total", type="parent") == 1
    assert metrics.value("dynamic_controller_watch_count") == 1


async def test_run_releases_everything_on_shutdown(
    dynamic: DynamicController, kube: FakeKube, cache: InformerCache
) -> None:
    await dynamic.register(WIDGETS, Recorder())
    await dynamic.watches.watch(ref("a"), ScalarWatch("node", SECRETS, "default", "s"))
    async with running(dynamic):
        pass
    assert dynamic.registered() == frozenset()
    assert cache.informers() == []
    assert sum(kube.watching.values()) == 0


def test_request_of_a_ref_drops_the_kind() -> None:
    assert ref("a").request == Request("default", "a")
    assert str(ref("a")) == "widgets.v1.example.com:default/a"


async def test_shutdown_after_the_cache_closed(
    dynamic: DynamicController, cache: InformerCache
) -> None:
    await dynamic.register(WIDGETS, Recorder())
    await cache.close()  # the owner stopped the informers first
    async with running(dynamic):
        pass
    assert dynamic.registered() == frozenset()


async def test_cancelling_run_stops_the_handler_and_releases_everything(
    dynamic: DynamicController, cache: InformerCache
) -> None:
    started = asyncio.Event()

    async def block(request: Request) -> Result:
        started.set()
        await asyncio.Event().wait()
        return Result()

    await dynamic.register(WIDGETS, Recorder(block))
    task = asyncio.create_task(dynamic.run())
    dynamic.enqueue(ref("a"))
    await asyncio.wait_for(started.wait(), 2.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cache.informers() == []
    assert dynamic.queue.is_shutting_down
