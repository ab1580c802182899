"""The controller's live schema resolver: cached per group version, concurrent lookups merged,
missing group versions never cached (a CRD may appear any moment), and the schema_resolver_*
metrics (reference §1.R rows 58-64) that show it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from controllers_fakes import sample

from kro.controllers.metrics import SchemaResolverMetrics
from kro.controllers.schemas import LiveSchemaResolver
from kro.graph.resolver import GVK, OfflineSchemaResolver, SchemaNotFoundError
from kro.runtime.errors import NotFound
from kro.runtime.prometheus import PrometheusProvider

CONFIGMAP = GVK("", "v1", "ConfigMap")
WIDGET = GVK("example.com", "v1", "Widget")

OPENAPI = {
    "components": {
        "schemas": {
            "io.k8s.api.core.v1.ConfigMap": {
                "type": "object",
                "properties": {"data": {"type": "object"}},
                "x-kubernetes-group-version-kind": [
                    {"group": "", "version": "v1", "kind": "ConfigMap"}
                ],
            }
        }
    }
}
DISCOVERY = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True}],
}


class DiscoveryClient:
    """Serves /openapi/v3/api/v1 and /api/v1; everything else is NotFound. Slow on purpose,
    so concurrent lookups overlap."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = asyncio.Event()

    async def request(self, method: str, path: str, **_: Any) -> Any:
        self.calls.append(path)
        await self.release.wait()
        if path == "/openapi/v3/api/v1":
            return OPENAPI
        if path == "/api/v1":
            return DISCOVERY
        raise NotFound(status=404, reason="NotFound", message=path)


@pytest.fixture
def discovery() -> DiscoveryClient:
    return DiscoveryClient()


def _resolver(discovery: DiscoveryClient, provider: PrometheusProvider) -> LiveSchemaResolver:
    return LiveSchemaResolver(
        discovery,  # type: ignore[arg-type]
        metrics=SchemaResolverMetrics(provider),
    )


async def test_concurrent_lookups_share_one_call_and_are_cached(
    discovery: DiscoveryClient, provider: PrometheusProvider
) -> None:
    resolver = _resolver(discovery, provider)
    lookups = [asyncio.create_task(resolver.prefetch([CONFIGMAP])) for _ in range(3)]
    for _ in range(5):  # let every lookup reach the in-flight call (no time passes)
        await asyncio.sleep(0)
    assert discovery.calls == ["/openapi/v3/api/v1"]
    discovery.release.set()
    await asyncio.gather(*lookups)
    await resolver.prefetch([CONFIGMAP])

    assert resolver.resolve(CONFIGMAP).resource == "configmaps"
    assert discovery.calls == ["/openapi/v3/api/v1", "/api/v1"]
    assert sample(provider, "schema_resolver_cache_misses_total") == 1
    assert sample(provider, "schema_resolver_singleflight_deduplicated_total") == 2
    assert sample(provider, "schema_resolver_cache_hits_total") == 1
    assert sample(provider, "schema_resolver_cache_size") == 1
    assert sample(provider, "schema_resolver_api_call_duration_seconds_count") == 1


async def test_a_missing_group_version_is_asked_again(
    discovery: DiscoveryClient, provider: PrometheusProvider
) -> None:
    discovery.release.set()
    resolver = _resolver(discovery, provider)
    for _ in range(2):
        await resolver.prefetch([WIDGET])
        with pytest.raises(SchemaNotFoundError):
            resolver.resolve(WIDGET)
    assert discovery.calls.count("/openapi/v3/apis/example.com/v1") == 2
    assert sample(provider, "schema_resolver_cache_misses_total") == 2
    assert sample(provider, "schema_resolver_cache_size") == 0


async def test_invalidate_evicts_everything(
    discovery: DiscoveryClient, provider: PrometheusProvider
) -> None:
    discovery.release.set()
    resolver = _resolver(discovery, provider)
    await resolver.prefetch([CONFIGMAP])
    resolver.invalidate()
    assert sample(provider, "schema_resolver_cache_evictions_total") == 1
    assert sample(provider, "schema_resolver_cache_size") == 0
    await resolver.prefetch([CONFIGMAP])
    assert sample(provider, "schema_resolver_cache_misses_total") == 2


async def test_an_invalidation_during_a_prefetch_keeps_what_it_fetched(
    provider: PrometheusProvider,
) -> None:
    """A build prefetches group versions concurrently; a CRD event between one fetch and the
    build's resolves must not make a kind it just fetched "not found"."""
    invalidated = asyncio.Event()

    class Racing(DiscoveryClient):
        async def request(self, method: str, path: str, **_: Any) -> Any:
            if path.startswith(("/openapi/v3/apis/example.com", "/apis/example.com")):
                await invalidated.wait()  # the other group version is still being fetched
            return await super().request(method, path)

    racing = Racing()
    racing.release.set()
    resolver = _resolver(racing, provider)
    build = asyncio.create_task(resolver.prefetch([CONFIGMAP, WIDGET]))
    while "/api/v1" not in racing.calls:  # core/v1 fetched and stored  # noqa: ASYNC110
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    resolver.invalidate()  # a CRD appeared meanwhile
    invalidated.set()
    await build
    assert resolver.resolve(CONFIGMAP).gvk == CONFIGMAP
    # ...but the next prefetch asks the API server again.
    await resolver.prefetch([CONFIGMAP])
    assert racing.calls.count("/openapi/v3/api/v1") == 2


async def test_a_fetch_overtaken_by_an_invalidation_is_fetched_again(
    provider: PrometheusProvider,
) -> None:
    slow = DiscoveryClient()
    resolver = _resolver(slow, provider)
    build = asyncio.create_task(resolver.prefetch([CONFIGMAP]))
    while not slow.calls:  # noqa: ASYNC110
        await asyncio.sleep(0)
    resolver.invalidate()  # the answer in flight may predate the change
    slow.release.set()
    await build
    assert resolver.resolve(CONFIGMAP).gvk == CONFIGMAP  # usable by the build that asked
    await resolver.prefetch([CONFIGMAP])
    assert slow.calls.count("/openapi/v3/api/v1") == 2  # but not trusted as fresh


async def test_failed_lookups_are_counted(provider: PrometheusProvider) -> None:
    class Broken:
        async def request(self, method: str, path: str, **_: Any) -> Any:
            raise ConnectionResetError("reset")

    resolver = LiveSchemaResolver(Broken(), metrics=SchemaResolverMetrics(provider))  # type: ignore[arg-type]
    with pytest.raises(ConnectionResetError):
        await resolver.prefetch([CONFIGMAP])
    assert sample(provider, "schema_resolver_errors_total") == 1


class KroRunClient:
    """An API server that serves kro.run/v1alpha1 (with ResourceGraphDefinition only) and no
    ec2.services.k8s.aws group."""

    async def request(self, method: str, path: str, **_: Any) -> Any:
        if path == "/openapi/v3/apis/kro.run/v1alpha1":
            gvk = {"group": "kro.run", "version": "v1alpha1", "kind": "ResourceGraphDefinition"}
            component = {"type": "object", "x-kubernetes-group-version-kind": [gvk]}
            return {"components": {"schemas": {"run.kro.v1alpha1.RGD": component}}}
        if path == "/apis/kro.run/v1alpha1":
            return {
                "kind": "APIResourceList",
                "groupVersion": "kro.run/v1alpha1",
                "resources": [
                    {
                        "name": "resourcegraphdefinitions",
                        "kind": "ResourceGraphDefinition",
                        "namespaced": False,
                    }
                ],
            }
        raise NotFound(status=404, reason="NotFound", message=path)


@pytest.mark.parametrize(
    ("gvk", "message"),
    [
        (GVK("ec2.services.k8s.aws", "v1alpha1", "VPC"),
         'cannot resolve group version "ec2.services.k8s.aws/v1alpha1": schema not found'),
        (GVK("kro.run", "v1alpha1", "Vpc"),
         'cannot resolve group version kind "kro.run/v1alpha1, Kind=Vpc": schema not found'),
        (GVK("kro.run", "v1beta1", "ResourceGraphDefinition"),
         'cannot resolve group version "kro.run/v1beta1": schema not found'),
    ],
    ids=["unknown-group-version", "unknown-kind", "unknown-version"],
)  # fmt: skip
async def test_an_unresolvable_kind_is_named_as_upstream_names_it(
    gvk: GVK, message: str, provider: PrometheusProvider
) -> None:  # G-07, issue 26 B2
    resolver = LiveSchemaResolver(KroRunClient(), metrics=SchemaResolverMetrics(provider))  # type: ignore[arg-type]
    await resolver.prefetch([gvk])
    with pytest.raises(SchemaNotFoundError) as info:
        resolver.resolve(gvk)
    assert str(info.value) == message
    assert info.value.gvk == gvk


async def test_a_core_kind_that_does_not_exist_is_named_with_go_s_gvk_string(
    discovery: DiscoveryClient, provider: PrometheusProvider
) -> None:
    discovery.release.set()
    resolver = _resolver(discovery, provider)
    nope = GVK("", "v1", "Nope")
    await resolver.prefetch([nope])
    with pytest.raises(SchemaNotFoundError) as info:
        resolver.resolve(nope)
    assert str(info.value) == 'cannot resolve group version kind "/v1, Kind=Nope": schema not found'


async def test_a_served_group_version_without_kinds_names_the_kind(
    provider: PrometheusProvider,
) -> None:
    class EmptyGroup:
        async def request(self, method: str, path: str, **_: Any) -> Any:
            if path == "/openapi/v3/apis/example.com/v1":
                return {"components": {"schemas": {}}}
            return {"kind": "APIResourceList", "groupVersion": "example.com/v1", "resources": []}

    resolver = LiveSchemaResolver(EmptyGroup(), metrics=SchemaResolverMetrics(provider))  # type: ignore[arg-type]
    await resolver.prefetch([WIDGET])
    with pytest.raises(SchemaNotFoundError, match=r'"example.com/v1, Kind=Widget"'):
        resolver.resolve(WIDGET)
    assert sample(provider, "schema_resolver_cache_size") == 0


def test_the_offline_resolver_keeps_its_short_message() -> None:
    """`kro validate` names the kind and how to supply it itself (kro.cli.messages)."""
    with pytest.raises(SchemaNotFoundError) as info:
        OfflineSchemaResolver().resolve(WIDGET)
    assert str(info.value) == "schema not found"
