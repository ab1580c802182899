"""RESTMapper: aggregated and legacy discovery, refresh on miss (rate-limited, single-flight),
invalidation when CRDs change."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from fakeapi_options import FAST

from kro.runtime.client import Client
from kro.runtime.clock import FakeClock
from kro.runtime.config import ConnectionConfig
from kro.runtime.discovery import AGGREGATED_ACCEPT, RESTMapper
from kro.runtime.errors import InternalError, NoKindMatch
from kro.runtime.gvk import GVK, GVR
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

DEPLOYMENT = GVK("apps", "v1", "Deployment")
WIDGET = GVK("example.com", "v1", "Widget")
CRD = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")


def widget_crd() -> dict[str, Any]:
    return {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}
            ],
        },
    }


def discovery_requests(api: FakeApiServer) -> list[str]:
    return [r.path for r in api.requests if r.path.startswith(("/api", "/apis"))]


async def test_aggregated_discovery_takes_two_requests(
    client: Client, fake_api: FakeApiServer
) -> None:
    info = await client.mapper.resource_for(DEPLOYMENT)
    assert info.gvr == GVR("apps", "v1", "deployments")
    assert info.namespaced
    assert info.subresources == {"status", "scale"}
    assert info.has_verbs("list", "watch")
    assert sorted(discovery_requests(fake_api)) == ["/api", "/apis"]
    assert all(r.headers["accept"] == AGGREGATED_ACCEPT for r in fake_api.requests)


async def test_kind_for_a_resource_and_cluster_scope(client: Client) -> None:
    info = await client.mapper.kind_for(GVR("", "v1", "namespaces"))
    assert info.gvk == GVK("", "v1", "Namespace")
    assert not info.namespaced


async def test_legacy_discovery_is_the_fallback() -> None:
    async with FakeApiServer(aggregated_discovery=False) as api:
        async with Client.from_config(ConnectionConfig(server=api.url), FAST) as client:
            info = await client.mapper.resource_for(DEPLOYMENT)
            assert info.subresources == {"status", "scale"}
            pods = await client.mapper.kind_for(GVR("", "v1", "pods"))
            assert pods.subresources == {"status"}
            assert await client.mapper.preferred_version("apps") == "v1"
        assert "/apis/apps/v1" in discovery_requests(api)
        assert "/api/v1" in discovery_requests(api)


async def test_legacy_discovery_skips_a_failing_group_version() -> None:
    async with FakeApiServer(aggregated_discovery=False) as api:
        api.inject(Fault("status", path="/apis/coordination.k8s.io/v1", status=503, times=99))
        options = dataclasses.replace(FAST, max_retries=0)
        async with Client.from_config(ConnectionConfig(server=api.url), options) as client:
            assert (await client.mapper.resource_for(DEPLOYMENT)).gvr.resource == "deployments"
            with pytest.raises(NoKindMatch):
                await client.mapper.resource_for(GVK("coordination.k8s.io", "v1", "Lease"))


async def test_unknown_kind_raises_no_kind_match(client: Client) -> None:
    with pytest.raises(NoKindMatch, match="Widget"):
        await client.mapper.resource_for(WIDGET)


async def test_a_miss_refreshes_and_finds_a_new_crd(
    client: Client, fake_api: FakeApiServer
) -> None:
    mapper = RESTMapper(client, clock=FakeClock(), min_refresh_interval_s=0)
    await mapper.resource_for(DEPLOYMENT)
    fake_api.seed(CRD, widget_crd())
    info = await mapper.resource_for(WIDGET)
    assert info.gvr == GVR("example.com", "v1", "widgets")
    assert info.subresources == {"status"}


async def test_misses_refresh_at_most_once_per_interval(
    client: Client, fake_api: FakeApiServer
) -> None:
    clock = FakeClock()
    mapper = RESTMapper(client, clock=clock, min_refresh_interval_s=5.0)
    with pytest.raises(NoKindMatch):
        await mapper.resource_for(WIDGET)
    before = len(fake_api.requests)
    fake_api.seed(CRD, widget_crd())
    with pytest.raises(NoKindMatch):
        await mapper.resource_for(WIDGET)  # within the interval: no new requests
    assert len(fake_api.requests) == before
    await clock.advance(5.0)
    assert (await mapper.resource_for(WIDGET)).gvk == WIDGET


async def test_invalidate_refreshes_on_next_lookup_even_for_known_kinds(
    client: Client, fake_api: FakeApiServer
) -> None:
    mapper = RESTMapper(client, clock=FakeClock(), min_refresh_interval_s=3600)
    await mapper.resource_for(DEPLOYMENT)
    fake_api.remove_resource(GVR("apps", "v1", "deployments"))
    mapper.invalidate()
    with pytest.raises(NoKindMatch):
        await mapper.resource_for(DEPLOYMENT)
    assert len(discovery_requests(fake_api)) == 4


async def test_concurrent_lookups_share_one_refresh(
    client: Client, fake_api: FakeApiServer
) -> None:
    mapper = RESTMapper(client)
    results = await asyncio.gather(*(mapper.resource_for(DEPLOYMENT) for _ in range(10)))
    assert len({r.gvr for r in results}) == 1
    assert len(discovery_requests(fake_api)) == 2


async def test_a_failed_refresh_raises_and_the_next_lookup_retries(
    fake_api: FakeApiServer,
) -> None:
    options = dataclasses.replace(FAST, max_retries=0)
    async with Client.from_config(ConnectionConfig(server=fake_api.url), options) as client:
        fake_api.inject(Fault("status", path="/apis", status=500, body="down"))
        with pytest.raises(InternalError, match="down"):
            await client.mapper.resource_for(DEPLOYMENT)
        assert (await client.mapper.resource_for(DEPLOYMENT)).gvk == DEPLOYMENT


async def test_resources_lists_everything_served(client: Client) -> None:
    names = {r.gvr.resource for r in await client.mapper.resources()}
    assert {"configmaps", "deployments", "customresourcedefinitions"} <= names
