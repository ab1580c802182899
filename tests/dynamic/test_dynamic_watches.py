"""WatchCoordinator: cycle commit/rollback (W-08), event routing (W-09, N-34), informer sharing."""

from __future__ import annotations

import asyncio

import pytest
from dynamic_fakes import CONFIGMAPS, SECRETS, WIDGETS, FakeKube, Metrics, drain, obj

from kro.dynamic import (
    DynamicController,
    InformerSyncTimeout,
    LabelSelector,
    ObjectRef,
    ScalarWatch,
    SelectorWatch,
    WatchRequest,
)
from kro.runtime.cache import InformerCache
from kro.runtime.clock import FakeClock
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result

P1 = ObjectRef(WIDGETS, "default", "p1")
P2 = ObjectRef(WIDGETS, "default", "p2")
WEB = LabelSelector.parse("app=web")


def scalar(name: str, namespace: str = "default", node: str = "n") -> ScalarWatch:
    return ScalarWatch(node, SECRETS, namespace, name)


def selector(namespace: str | None = "default", sel: LabelSelector = WEB) -> SelectorWatch:
    return SelectorWatch("items", SECRETS, namespace, sel)


async def cycle(dynamic: DynamicController, parent: ObjectRef, *requests: WatchRequest) -> None:
    for request in requests:
        await dynamic.watches.watch(parent, request)
    await dynamic.watches.done(parent, commit=True)


async def routed(dynamic: DynamicController, kube: FakeKube, gvr: GVR = SECRETS) -> set[ObjectRef]:
    """Parents enqueued by everything written so far."""
    await kube.settle(gvr)
    return set(drain(dynamic.queue))


# -- routing ------------------------------------------------------------------------------------


async def test_scalar_watch_routes_only_its_object(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    await cycle(dynamic, P1, scalar("creds"))
    kube.put(SECRETS, obj("other"))
    assert await routed(dynamic, kube) == set()
    kube.put(SECRETS, obj("creds"))
    assert await routed(dynamic, kube) == {P1}
    kube.put(SECRETS, obj("creds", "elsewhere"))
    assert await routed(dynamic, kube) == set()


async def test_child_status_changes_are_not_generation_filtered(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    kube.put(SECRETS, obj("creds", spec={"a": 1}))
    await cycle(dynamic, P1, scalar("creds"))
    drain(dynamic.queue)
    kube.put(SECRETS, obj("creds", spec={"a": 1}, status={"ready": True}))
    assert await routed(dynamic, kube) == {P1}


async def test_child_deletion_is_routed(dynamic: DynamicController, kube: FakeKube) -> None:
    kube.put(SECRETS, obj("creds"))
    kube.put(SECRETS, obj("web", labels={"app": "web"}))
    await cycle(dynamic, P1, scalar("creds"))
    await cycle(dynamic, P2, selector())
    drain(dynamic.queue)
    kube.delete(SECRETS, "creds")
    kube.delete(SECRETS, "web")
    assert await routed(dynamic, kube) == {P1, P2}


async def test_selector_matches_new_labels(dynamic: DynamicController, kube: FakeKube) -> None:
    await cycle(dynamic, P1, selector())
    kube.put(SECRETS, obj("a", labels={"app": "db"}))
    assert await routed(dynamic, kube) == set()
    kube.put(SECRETS, obj("a", labels={"app": "web"}))  # enters the selector
    assert await routed(dynamic, kube) == {P1}


async def test_selector_matches_old_labels_so_leaving_objects_trigger(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    kube.put(SECRETS, obj("a", labels={"app": "web"}))
    await cycle(dynamic, P1, selector())
    drain(dynamic.queue)
    kube.put(SECRETS, obj("a", labels={"app": "db"}))  # leaves the selector
    assert await routed(dynamic, kube) == {P1}
    kube.put(SECRETS, obj("a", labels={"app": "cache"}))  # was never in it
    assert await routed(dynamic, kube) == set()


async def test_selector_namespace_filter(dynamic: DynamicController, kube: FakeKube) -> None:
    await cycle(dynamic, P1, selector("default"))
    kube.put(SECRETS, obj("a", "team-b", labels={"app": "web"}))
    assert await routed(dynamic, kube) == set()
    kube.put(SECRETS, obj("a", "default", labels={"app": "web"}))
    assert await routed(dynamic, kube) == {P1}


@pytest.mark.parametrize("namespace", [None, ""], ids=["none", "empty"])
async def test_selector_without_namespace_sees_every_namespace(
    dynamic: DynamicController, kube: FakeKube, namespace: str | None
) -> None:
    await cycle(dynamic, P1, selector(namespace))
    kube.put(SECRETS, obj("a", "team-b", labels={"app": "web"}))
    assert await routed(dynamic, kube) == {P1}


async def test_every_matching_parent_is_enqueued_once(
    dynamic: DynamicController, kube: FakeKube, metrics: Metrics
) -> None:
    await cycle(dynamic, P1, scalar("a"), scalar("a", node="again"), selector())
    await cycle(dynamic, P2, selector(None))
    kube.put(SECRETS, obj("a", labels={"app": "web"}))
    assert await routed(dynamic, kube) == {P1, P2}
    kube.put(SECRETS, obj("b"))
    assert await routed(dynamic, kube) == set()
    label = "/v1, Resource=secrets"
    assert metrics.value("dynamic_controller_route_total", gvr=label) == 2
    assert metrics.value("dynamic_controller_route_match_total", gvr=label) == 1


async def test_an_object_shared_by_parents_routes_to_those_still_watching_it(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    """One object read by two parents, and by one parent through two nodes: each parent is
    enqueued while at least one of its requests for it is committed, and no longer after."""
    await cycle(dynamic, P1, scalar("shared"))
    await cycle(dynamic, P2, scalar("shared"), scalar("shared", node="again"))
    kube.put(SECRETS, obj("shared"))
    assert await routed(dynamic, kube) == {P1, P2}
    await cycle(dynamic, P1, scalar("elsewhere"))  # P1 no longer reads it
    kube.put(SECRETS, obj("shared", labels={"v": "2"}))
    assert await routed(dynamic, kube) == {P2}
    await cycle(dynamic, P2, scalar("shared", node="again"))  # one of P2's two requests left
    kube.put(SECRETS, obj("shared", labels={"v": "3"}))
    assert await routed(dynamic, kube) == {P2}
    await cycle(dynamic, P2, scalar("elsewhere"))
    kube.put(SECRETS, obj("shared", labels={"v": "4"}))
    assert await routed(dynamic, kube) == set()
    await cycle(dynamic, P1, scalar("shared"))  # read again, by one parent alone
    kube.put(SECRETS, obj("shared", labels={"v": "5"}))
    assert await routed(dynamic, kube) == {P1}


async def test_watching_the_parent_kind_routes_parent_events(
    dynamic: DynamicController, kube: FakeKube, cache: InformerCache
) -> None:
    """A child of the parent's own kind: one informer, and label-only child updates route."""
    await dynamic.register(WIDGETS, _noop)
    kube.put(WIDGETS, obj("child"))
    await kube.settle(WIDGETS)
    drain(dynamic.queue)
    await cycle(dynamic, P1, ScalarWatch("c", WIDGETS, "default", "child"))
    assert len(cache.informers()) == 1
    assert kube.watching[WIDGETS] == 1
    kube.put(WIDGETS, obj("child", labels={"touched": "yes"}))  # no generation change
    assert await routed(dynamic, kube, WIDGETS) == {P1}


async def _noop(request: Request) -> Result:
    raise AssertionError("not run in this test")


# -- cycles -------------------------------------------------------------------------------------


async def test_commit_keeps_exactly_this_cycles_requests(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    await cycle(dynamic, P1, scalar("old"), scalar("kept"))
    await cycle(dynamic, P1, scalar("kept"), scalar("new"))
    assert dynamic.watches.requests(P1) == {scalar("kept"), scalar("new")}
    kube.put(SECRETS, obj("old"))
    assert await routed(dynamic, kube) == set()
    kube.put(SECRETS, obj("new"))
    assert await routed(dynamic, kube) == {P1}


async def test_rollback_keeps_the_previous_set(dynamic: DynamicController, kube: FakeKube) -> None:
    await cycle(dynamic, P1, scalar("old"))
    await dynamic.watches.watch(P1, scalar("new"))
    kube.put(SECRETS, obj("new"))  # routed while the cycle is open
    assert await routed(dynamic, kube) == {P1}
    await dynamic.watches.done(P1, commit=False)
    assert dynamic.watches.requests(P1) == {scalar("old")}
    kube.put(SECRETS, obj("new", labels={"x": "y"}))
    assert await routed(dynamic, kube) == set()
    kube.put(SECRETS, obj("old"))
    assert await routed(dynamic, kube) == {P1}


async def test_committing_an_empty_cycle_drops_everything(
    dynamic: DynamicController, cache: InformerCache
) -> None:
    await cycle(dynamic, P1, scalar("a"), selector())
    await cycle(dynamic, P1)
    assert dynamic.watches.requests(P1) == frozenset()
    assert dynamic.watches.parents() == frozenset()
    assert cache.informers() == []


async def test_forget_drops_committed_and_open_requests(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    await cycle(dynamic, P1, scalar("a"))
    await dynamic.watches.watch(P1, scalar("b"))
    await dynamic.watches.forget(P1)
    assert dynamic.watches.requests(P1) == frozenset()
    assert kube.watching[SECRETS] == 0
    await dynamic.watches.done(P1, commit=True)  # a late done is harmless
    assert dynamic.watches.parents() == frozenset()


async def test_deregistering_a_kind_forgets_its_parents(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    other = ObjectRef(CONFIGMAPS, "default", "cm")
    await dynamic.register(WIDGETS, _noop)
    await cycle(dynamic, P1, scalar("a"))
    await cycle(dynamic, other, scalar("a"))
    await dynamic.deregister(WIDGETS)
    assert dynamic.watches.parents() == {other}
    kube.put(SECRETS, obj("a"))
    assert await routed(dynamic, kube) == {other}


# -- informer references ------------------------------------------------------------------------


async def test_one_informer_per_gvr_released_with_the_last_request(
    dynamic: DynamicController, kube: FakeKube, cache: InformerCache, metrics: Metrics
) -> None:
    await cycle(dynamic, P1, scalar("a"), selector())
    await cycle(dynamic, P2, scalar("a"), ScalarWatch("cm", CONFIGMAPS, "default", "x"))
    assert dynamic.watches.watched_gvrs() == {SECRETS, CONFIGMAPS}
    assert kube.watching == {SECRETS: 1, CONFIGMAPS: 1}
    assert kube.lists[SECRETS] == 1
    assert metrics.value("dynamic_controller_watch_count") == 2
    assert (
        metrics.value(
            "dynamic_controller_watch_request_count", gvr="/v1, Resource=secrets", type="scalar"
        )
        == 2
    )
    assert (
        metrics.value(
            "dynamic_controller_watch_request_count", gvr="/v1, Resource=secrets", type="collection"
        )
        == 1
    )
    assert (
        metrics.value(
            "dynamic_controller_instance_watch_count", parent_gvr="example.com/v1, Resource=widgets"
        )
        == 2
    )

    await cycle(dynamic, P2, scalar("a"))
    assert kube.watching[CONFIGMAPS] == 0
    await cycle(dynamic, P1)
    assert kube.watching[SECRETS] == 1  # P2 still watches "a"
    await dynamic.watches.forget(P2)
    assert kube.watching[SECRETS] == 0
    assert cache.informers() == []
    assert metrics.value("dynamic_controller_watch_count") == 0
    assert (
        metrics.value(
            "dynamic_controller_instance_watch_count", parent_gvr="example.com/v1, Resource=widgets"
        )
        == 0
    )


async def test_a_failed_watch_rolls_back_cleanly(
    dynamic: DynamicController, cache: InformerCache, clock: FakeClock
) -> None:
    """A kind that cannot be listed: watch raises, rollback keeps the old set, nothing leaks."""
    await cycle(dynamic, P1, scalar("a"))
    ghosts = ScalarWatch("g", GVR("nowhere.example.com", "v1", "ghosts"), "default", "g")
    task = asyncio.create_task(dynamic.watches.watch(P1, ghosts))
    await asyncio.wait_for(clock.wait_for_sleepers(2), 2.0)
    await clock.advance(30.0)
    with pytest.raises(InformerSyncTimeout):
        await asyncio.wait_for(task, 2.0)
    await dynamic.watches.done(P1, commit=False)
    assert dynamic.watches.requests(P1) == {scalar("a")}
    assert [i.gvr for i in cache.informers()] == [SECRETS]
