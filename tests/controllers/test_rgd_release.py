"""Nothing kept per RGD or per generated kind outlives them: after many RGDs come and go (their
instances deleted before or after the RGD), the controller's registrations, locks, watches,
informers, revision registry and metric series are back to what they were before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from controllers_fakes import NS
from rgd_app_fakes import (
    KroFakeApi,
    app_options,
    collect_garbage,
    eventually,
    instance,
    kind_rgd,
    running_app,
)

from kro.controllers.app import KroApp
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import NotFound
from kro.runtime.prometheus import PrometheusProvider

CYCLES = 6
KEPT = ("rgd_deletions", "rgd_deletion_duration_seconds")
"""The record of each deletion stays (kro.controllers.metrics explains why). Counter families
are named without `_total` by prometheus_client's collect()."""
DYNAMIC = "dynamic_controller_"
"""kro.dynamic's own per-GVR families are released by kro.dynamic, not checked here."""


@pytest.fixture
async def kro_client() -> AsyncIterator[Client]:
    async with KroFakeApi() as server:
        options = ClientOptions(qps=10_000.0, burst=10_000, max_retries=0)
        async with Client.from_config(ConnectionConfig(server=server.url), options) as c:
            yield c


async def _absent(client: Client, gvr: Any, name: str, namespace: str | None = None) -> bool:
    try:
        await client.get(gvr, name, namespace=namespace)
    except NotFound:
        return True
    return False


async def _cycle(client: Client, app: KroApp, name: str, kind: str, *, rgd_first: bool) -> None:
    """An RGD with two ready instances, then all of it deleted, revisions collected."""
    await client.apply(RGDS, kind_rgd(name, kind), field_manager="test", force=True)

    async def served() -> Any:
        live = await client.get(RGDS, name)
        return app.rgd_reconciler.kinds.served().get(live["metadata"]["uid"])

    gvr = await eventually(served, what=f"{name} served")
    uid = (await client.get(RGDS, name))["metadata"]["uid"]
    for item in ("a", "b"):
        await client.create(gvr, instance(kind, item, NS), namespace=NS)

    async def ready() -> bool:
        items, _ = await client.list_all(gvr, namespace=NS)
        return len(items) == 2 and all(i.get("status", {}).get("state") == "ACTIVE" for i in items)

    await eventually(ready, what=f"{name} instances ready")
    if rgd_first:
        await client.delete(RGDS, name)
        await eventually(lambda: _absent(client, RGDS, name), what=f"{name} gone")
    for item in ("a", "b"):
        await client.delete(gvr, item, namespace=NS)
    for item in ("a", "b"):
        await eventually(lambda i=item: _absent(client, gvr, i, NS), what=f"{item} gone")
    if not rgd_first:
        await client.delete(RGDS, name)
        await eventually(lambda: _absent(client, RGDS, name), what=f"{name} gone")
    await collect_garbage(client, uid)

    async def released() -> bool:
        return (
            not app.dynamic.is_registered(gvr)
            and app.registry.latest(name) is None
            and not app.rgd_reconciler.kinds.draining()
        )

    await eventually(released, what=f"{name} released")


def _series(provider: PrometheusProvider) -> dict[str, set[tuple[tuple[str, str], ...]]]:
    """Family -> the label sets of its series (histogram buckets folded)."""
    out: dict[str, set[tuple[tuple[str, str], ...]]] = {}
    for family in provider.registry.collect():
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
            out.setdefault(family.name, set()).add(labels)
    return out


def _state(app: KroApp) -> dict[str, int]:
    return {
        "served": len(app.rgd_reconciler.kinds.served()),
        "draining": len(app.rgd_reconciler.kinds.draining()),
        "registered": len(app.dynamic.registered()),
        "locks": len(app.dynamic._locks),
        "watched parents": len(app.dynamic.watches.parents()),
        "watched kinds": len(app.dynamic.watches.watched_gvrs()),
        "informers": len(app.factory.informers()),
        "revisions": sum(app.registry.counts().values()),
    }


async def test_churning_rgds_leaves_nothing_behind(
    kro_client: Client, provider: PrometheusProvider
) -> None:
    options = app_options(InstanceConditionMetrics=True)
    async with running_app(kro_client, provider, options) as app:
        # One full cycle first: process-wide series (per queue, per reason) exist from then on.
        await _cycle(kro_client, app, "warmup", "Warmup", rgd_first=True)
        state, series = _state(app), _series(provider)
        for i in range(CYCLES):
            await _cycle(kro_client, app, f"churn{i}", f"Churn{i}", rgd_first=i % 2 == 0)
        assert _state(app) == state
        after = _series(provider)

    leftovers = {
        family: [labels for labels in found if any("churn" in v.lower() for _, v in labels)]
        for family, found in after.items()
        if not family.startswith((DYNAMIC, *KEPT))
    }
    assert {f: labels for f, labels in leftovers.items() if labels} == {}
    for family, found in after.items():
        owned = {k for labels in found for k, _ in labels} & {"name", "gvr"}
        if owned and not family.startswith((DYNAMIC, *KEPT)):
            assert len(found) == len(series.get(family, ())), family
    deletions = {dict(labels)["name"] for labels in after["rgd_deletions"]}
    assert deletions == {"warmup", *(f"churn{i}" for i in range(CYCLES))}
