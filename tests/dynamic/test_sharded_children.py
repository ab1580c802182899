"""Sharded replicas: children in the parent's own namespace come from the sharded informer.

kro.dynamic.watches serves a request for objects in the parent's namespace from the GVR's
sharded informer (only the namespaces this replica owns), everything else from the whole kind;
the caches answer `cached_versions` only for what they hold, and a change of ranges relists.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from dynamic_fakes import CONFIGMAPS, SECRETS, WIDGETS, FakeKube, drain, obj

from kro.dynamic import (
    DynamicController,
    DynamicControllerOptions,
    LabelSelector,
    ObjectRef,
    ScalarWatch,
    SelectorWatch,
    WatchRequest,
)
from kro.runtime.cache import InformerCache
from kro.runtime.clock import FakeClock
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.runtime.sharding import Range, ShardView, fnv1a64
from kro.testing import waiting

NAMESPACES = GVR("", "v1", "namespaces")


def only(*namespaces: str) -> list[Range]:
    """Hash ranges that hold exactly these namespaces."""
    return [(fnv1a64(ns), fnv1a64(ns) + 1) for ns in namespaces]


def child(name: str, namespace: str) -> ScalarWatch:
    return ScalarWatch("cm", CONFIGMAPS, namespace, name)


@pytest.fixture
def kube() -> FakeKube:
    return FakeKube(served=(CONFIGMAPS, SECRETS, WIDGETS, NAMESPACES))


@pytest.fixture
def view() -> ShardView:
    shard = ShardView()
    shard.set_ranges(only("team-a"))
    return shard


@pytest.fixture
async def sharded(
    kube: FakeKube, clock: FakeClock, view: ShardView
) -> AsyncIterator[DynamicController]:
    """A dynamic controller of a replica that owns namespace team-a."""
    cache = InformerCache(kube, clock=clock, shard=view)  # type: ignore[arg-type]
    controller = DynamicController(cache, options=DynamicControllerOptions(), clock=clock)
    yield controller
    await controller.watches.close()
    await cache.close()


async def cycle(dynamic: DynamicController, parent: ObjectRef, *requests: WatchRequest) -> None:
    for request in requests:
        await dynamic.watches.watch(parent, request)
    await dynamic.watches.done(parent, commit=True)


async def routed(
    dynamic: DynamicController, kube: FakeKube, gvr: GVR = CONFIGMAPS
) -> set[ObjectRef]:
    await kube.settle(gvr)
    return set(drain(dynamic.queue))


def informers(dynamic: DynamicController, gvr: GVR = CONFIGMAPS) -> list[Informer]:
    return [i for i in dynamic._pool._cache.informers() if i.gvr == gvr]


def sharded_informer(dynamic: DynamicController) -> Informer:
    (informer,) = [i for i in informers(dynamic) if i.shard is not None]
    return informer


async def relisted(informer: Informer, check: Callable[[Informer], bool]) -> None:
    """Wait until the informer's relist (on its own task) makes `check` hold."""

    async def probe() -> bool:
        return check(informer)

    await waiting.eventually(probe, what="the relist", timeout_s=2.0, interval_s=0.005)


def holds(informer: Informer, namespace: str) -> bool:
    return any((o["metadata"].get("namespace") == namespace) for o in informer.store.list())


async def test_children_in_an_owned_namespace_come_from_the_sharded_informer(
    sharded: DynamicController, kube: FakeKube
) -> None:
    kube.put(CONFIGMAPS, obj("cfg", "team-a"))
    kube.put(CONFIGMAPS, obj("cfg", "team-b"))
    parent = ObjectRef(WIDGETS, "team-a", "web")
    await cycle(sharded, parent, child("cfg", "team-a"))

    (informer,) = informers(sharded)  # no whole-kind informer besides it
    assert informer.shard is not None
    assert holds(informer, "team-a")
    assert not holds(informer, "team-b")
    drain(sharded.queue)
    version = kube.put(CONFIGMAPS, obj("cfg", "team-a", spec={"v": 2}))["metadata"]
    assert await routed(sharded, kube) == {parent}
    assert sharded.watches.cached_versions(child("cfg", "team-a")) == {
        ("team-a", "cfg"): version["resourceVersion"]
    }
    # Not held here: the cache cannot tell, so it must not say "no such object".
    assert sharded.watches.cached_versions(child("cfg", "team-b")) is None


async def test_a_child_in_a_foreign_namespace_and_a_cluster_scoped_one_are_still_routed(
    sharded: DynamicController, kube: FakeKube
) -> None:
    parent = ObjectRef(WIDGETS, "team-a", "web")
    namespace = ScalarWatch("ns", NAMESPACES, "", "team-x")
    everywhere = SelectorWatch("all", CONFIGMAPS, None, LabelSelector.parse("app=web"))
    await cycle(sharded, parent, child("cfg", "team-b"), namespace, everywhere)
    assert [i.shard for i in informers(sharded)] == [None]
    assert [i.shard for i in informers(sharded, NAMESPACES)] == [None]

    kube.put(CONFIGMAPS, obj("cfg", "team-b"))
    assert await routed(sharded, kube) == {parent}
    kube.put(CONFIGMAPS, obj("other", "team-c", labels={"app": "web"}))
    assert await routed(sharded, kube) == {parent}
    created = kube.put(NAMESPACES, obj("team-x", ""))
    assert await routed(sharded, kube, NAMESPACES) == {parent}
    assert sharded.watches.cached_versions(namespace) == {
        ("", "team-x"): created["metadata"]["resourceVersion"]
    }
    assert set(sharded.watches.cached_versions(everywhere) or {}) == {("team-c", "other")}

    await sharded.watches.forget(parent)
    assert informers(sharded) == []
    assert informers(sharded, NAMESPACES) == []


async def test_a_range_change_moves_a_namespace_between_the_replicas(
    sharded: DynamicController, kube: FakeKube, view: ShardView
) -> None:
    kube.put(CONFIGMAPS, obj("cfg", "team-a"))
    kube.put(CONFIGMAPS, obj("cfg", "team-b"))
    web = ObjectRef(WIDGETS, "team-a", "web")
    api = ObjectRef(WIDGETS, "team-b", "api")
    await cycle(sharded, web, child("cfg", "team-a"))
    await cycle(sharded, api, child("cfg", "team-b"))  # in team-b, not owned yet: no events
    informer = sharded_informer(sharded)
    drain(sharded.queue)

    # Grow to team-a and team-b: until the relist, even team-a's answer would be a guess.
    view.set_ranges(only("team-a", "team-b"))
    assert sharded.watches.cached_versions(child("cfg", "team-a")) is None
    await relisted(informer, lambda i: holds(i, "team-b"))
    assert set(drain(sharded.queue)) == {api}  # team-b's children arrive as adds
    assert sharded.watches.cached_versions(child("cfg", "team-b")) is not None
    assert sharded.watches.cached_versions(child("cfg", "team-a")) is not None

    # Shrink to team-b: team-a leaves the cache without a delete, and is no longer answered.
    view.set_ranges(only("team-b"))
    await relisted(informer, lambda i: not holds(i, "team-a"))
    drain(sharded.queue)
    kube.put(CONFIGMAPS, obj("cfg", "team-a", spec={"v": 2}))
    assert await routed(sharded, kube) == set()
    assert sharded.watches.cached_versions(child("cfg", "team-a")) is None
    kube.put(CONFIGMAPS, obj("cfg", "team-b", spec={"v": 2}))
    assert await routed(sharded, kube) == {api}

    # Back to team-a: what changed meanwhile is delivered by the relist.
    view.set_ranges(only("team-a"))
    await relisted(informer, lambda i: holds(i, "team-a"))
    assert set(drain(sharded.queue)) == {web}
    assert sharded.watches.cached_versions(child("cfg", "team-a")) == {
        ("team-a", "cfg"): kube.get(CONFIGMAPS, "cfg", "team-a")["metadata"]["resourceVersion"]
    }


async def test_without_sharding_a_child_uses_the_one_whole_kind_informer(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    parent = ObjectRef(WIDGETS, "team-a", "web")
    await cycle(dynamic, parent, child("cfg", "team-a"), child("cfg", "team-b"))
    assert [i.shard for i in informers(dynamic)] == [None]
    kube.put(CONFIGMAPS, obj("cfg", "team-b"))
    assert await routed(dynamic, kube) == {parent}
    assert dynamic.watches.cached_versions(child("cfg", "team-b")) is not None
