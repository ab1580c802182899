"""The cache-backed reader: cached kinds are read without a request (stale by at most the watch
lag), anything not cached (or not synced) is read from the API server; typed reads validate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kro.runtime import errors
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.gvk import GVK, GVR
from kro.runtime.reader import CachedReader
from kro.runtime.typed import InvalidObject, KubeModel, WireModel
from kro.testing.fakeapi import FakeApiServer

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")


def configmap(name: str, ns: str = "ns", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "data": {"replicas": "2"},
    }


class Data(WireModel):
    replicas: int


class TypedConfigMap(KubeModel):
    gvk = GVK("", "v1", "ConfigMap")
    gvr = CM
    data: Data


class OnUpdate:
    """An informer handler that signals the first update it sees."""

    def __init__(self, event: asyncio.Event) -> None:
        self.event = event

    def on_add(self, obj: dict[str, Any]) -> None:
        pass

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.event.set()

    def on_delete(self, obj: dict[str, Any]) -> None:
        pass


@pytest.fixture
async def cache(client: Client) -> AsyncIterator[InformerCache]:
    cache = InformerCache(client)
    task = asyncio.create_task(cache.run())
    try:
        yield cache
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def synced(cache: InformerCache, gvr: GVR, namespace: str | None = None) -> None:
    informer = cache.informer(gvr, namespace=namespace)
    assert await informer.wait_for_sync(timeout_s=5)


def gets(api: FakeApiServer, resource: str) -> int:
    return sum(
        1 for r in api.requests if r.method == "GET" and resource in r.path and not r.is_watch
    )


async def test_cached_kinds_are_read_without_a_request(
    fake_api: FakeApiServer, client: Client, cache: InformerCache
) -> None:
    fake_api.seed(CM, configmap("a", team="x"))
    fake_api.seed(CM, configmap("b", team="y"))
    fake_api.seed(CM, configmap("c", ns="other", team="x"))
    await synced(cache, CM)
    reader = CachedReader(cache, client)
    before = gets(fake_api, "configmaps")
    assert (await reader.get(CM, "a", namespace="ns"))["metadata"]["name"] == "a"
    assert [o["metadata"]["name"] for o in await reader.list(CM, namespace="ns")] == ["a", "b"]
    selected = await reader.list(CM, label_selector="team=x")
    assert sorted(o["metadata"]["name"] for o in selected) == ["a", "c"]
    with pytest.raises(errors.NotFound, match='configmaps "missing" not found'):
        await reader.get(CM, "missing", namespace="ns")
    assert gets(fake_api, "configmaps") == before
    assert reader.cache_reads == 4
    assert reader.api_reads == 0


async def test_kinds_not_cached_are_read_from_the_api(
    fake_api: FakeApiServer, client: Client, cache: InformerCache
) -> None:
    fake_api.seed(SECRETS, {"metadata": {"name": "s", "namespace": "ns"}, "data": {}})
    reader = CachedReader(cache, client)
    assert not reader.is_cached(SECRETS, "ns")
    assert (await reader.get(SECRETS, "s", namespace="ns"))["metadata"]["name"] == "s"
    assert [o["metadata"]["name"] for o in await reader.list(SECRETS, namespace="ns")] == ["s"]
    with pytest.raises(errors.NotFound):
        await reader.get(SECRETS, "missing", namespace="ns")
    assert reader.api_reads == 3
    assert gets(fake_api, "secrets") == 3


async def test_an_unsynced_or_filtered_informer_does_not_answer(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("a"))
    cache = InformerCache(client)  # never run: its informers never sync
    cache.informer(CM, namespace="ns")
    reader = CachedReader(cache, client)
    assert (await reader.get(CM, "a", namespace="ns"))["metadata"]["name"] == "a"
    assert reader.api_reads == 1
    filtered = InformerCache(client)
    filtered.informer(CM, label_selector="team=x")  # lacks objects it does not select
    assert filtered.covering(CM, "ns") is None


async def test_a_namespaced_informer_covers_only_its_namespace(
    fake_api: FakeApiServer, client: Client, cache: InformerCache
) -> None:
    fake_api.seed(CM, configmap("a"))
    await synced(cache, CM, namespace="ns")
    reader = CachedReader(cache, client)
    assert reader.is_cached(CM, "ns")
    assert not reader.is_cached(CM, "other")
    assert not reader.is_cached(CM)


async def test_a_stale_cache_shows_the_old_object_until_the_watch_catches_up(
    fake_api: FakeApiServer, client: Client, cache: InformerCache
) -> None:
    created = fake_api.seed(CM, configmap("a"))
    await synced(cache, CM)
    updated = asyncio.Event()
    cache.informer(CM).add_handler(OnUpdate(updated))
    reader = CachedReader(cache, client)
    changed = fake_api.modify(CM, {**configmap("a"), "data": {"replicas": "3"}})
    # Nothing has yielded to the informer since the write: the cache is one event behind.
    stale = await reader.get(CM, "a", namespace="ns")
    assert stale["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    await asyncio.wait_for(updated.wait(), timeout=5)
    fresh = await reader.get(CM, "a", namespace="ns")
    assert fresh["metadata"]["resourceVersion"] == changed["metadata"]["resourceVersion"]
    assert fresh["data"] == {"replicas": "3"}


async def test_copies_are_safe_to_change(
    fake_api: FakeApiServer, client: Client, cache: InformerCache
) -> None:
    fake_api.seed(CM, configmap("a"))
    await synced(cache, CM)
    reader = CachedReader(cache, client)
    mine = await reader.get(CM, "a", namespace="ns", copy=True)
    mine["data"]["replicas"] = "99"
    assert (await reader.get(CM, "a", namespace="ns"))["data"]["replicas"] == "2"


async def test_typed_reads_validate(
    fake_api: FakeApiServer, client: Client, cache: InformerCache
) -> None:
    fake_api.seed(CM, configmap("good"))
    fake_api.seed(CM, {**configmap("bad"), "data": {"replicas": "many"}})
    await synced(cache, CM)
    reader = CachedReader(cache, client)
    good = await reader.get(TypedConfigMap, "good", namespace="ns")
    assert good.data.replicas == 2
    assert good.name == "good"
    assert good.namespace == "ns"
    with pytest.raises(InvalidObject, match=r"TypedConfigMap ns/bad is invalid: data\.replicas"):
        await reader.get(TypedConfigMap, "bad", namespace="ns")
    with pytest.raises(InvalidObject):
        await reader.list(TypedConfigMap, namespace="ns")


async def test_a_label_filtered_informer_answers_the_lists_its_selector_covers(
    fake_api: FakeApiServer, client: Client, cache: InformerCache
) -> None:
    fake_api.seed(CM, configmap("a", copy_of="x"))
    fake_api.seed(CM, configmap("b", copy_of="y"))
    fake_api.seed(CM, configmap("c"))
    assert await cache.informer(CM, label_selector="copy_of").wait_for_sync(timeout_s=5)
    reader = CachedReader(cache, client)
    assert [o["metadata"]["name"] for o in await reader.list(CM, label_selector="copy_of=x")] == [
        "a"
    ]
    assert reader.cache_reads == 1
    assert [o["metadata"]["name"] for o in await reader.list(CM)] == ["a", "b", "c"]
    assert reader.api_reads == 1  # everything: more than the filtered informer holds
    # A get is never answered by a filtered informer: "c" exists although it is not cached.
    assert (await reader.get(CM, "c", namespace="ns"))["metadata"]["name"] == "c"
    assert reader.api_reads == 2
