"""Nothing kept per RGD or per generated kind outlives them: after many RGDs come and go (their
instances deleted before or after the RGD), the controller's registrations, locks, watches,
informers, Event recorders, revision registry and metric series (kro.dynamic's included) are
back to what they were before."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from controllers_fakes import NS, greeter
from rgd_app_fakes import (
    app_options,
    collect_garbage,
    eventually,
    instance,
    kind_rgd,
    running_app,
)

from kro.controllers.app import KroApp
from kro.controllers.events import RecorderPool
from kro.controllers.rgd import RGD_RECORDER, RGDS
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.events import CORE_EVENTS
from kro.runtime.gvk import GVR
from kro.runtime.prometheus import PrometheusProvider

CYCLES = 6
KEPT = ("rgd_deletions", "rgd_deletion_duration_seconds")
"""The record of each deletion stays (kro.controllers.metrics explains why). Counter families
are named without `_total` by prometheus_client's collect()."""
OWNER_LABELS = {"name", "gvr", "parent_gvr", "rgd"}
"""Labels whose values name an RGD or a kind."""


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


def _event_senders() -> int:
    return sum(1 for task in asyncio.all_tasks() if task.get_name().startswith("events:"))


def _state(app: KroApp) -> dict[str, int]:
    assert app.recorders is not None
    return {
        "served": len(app.rgd_reconciler.kinds.served()),
        "draining": len(app.rgd_reconciler.kinds.draining()),
        "registered": len(app.dynamic.registered()),
        "locks": len(app.dynamic._locks),
        "watched parents": len(app.dynamic.watches.parents()),
        "watched kinds": len(app.dynamic.watches.watched_gvrs()),
        "watch locks": len(app.dynamic.watches._locks),
        "informers": len(app.cache.informers()),
        "revisions": sum(app.registry.counts().values()),
        "recorders": len(app.recorders.names()),
        "event senders": _event_senders(),
    }


@contextlib.asynccontextmanager
async def _sending(recorders: RecorderPool) -> AsyncIterator[None]:
    """Run the pool's senders, as the manager does, for the duration of the block."""
    task = asyncio.create_task(recorders.run(), name="test:recorders")
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_churning_rgds_leaves_nothing_behind(
    kro_client: Client, provider: PrometheusProvider
) -> None:
    options = app_options(InstanceConditionMetrics=True, InstanceConditionEvents=True)
    async with running_app(kro_client, provider, options) as app:
        # The manager runs the recorders' senders (KroApp adds them as a runnable).
        # One full cycle first: process-wide series (per queue, per reason) exist from
        # then on.
        await _cycle(kro_client, app, "warmup", "Warmup", rgd_first=True)
        await eventually(_quiet(app), what="warmup's recorder released")
        state, series = _state(app), _series(provider)
        for i in range(CYCLES):
            await _cycle(kro_client, app, f"churn{i}", f"Churn{i}", rgd_first=i % 2 == 0)
        await eventually(_quiet(app), what="every recorder released")
        assert _state(app) == state
        after = _series(provider)

    leftovers = {
        family: [labels for labels in found if any("churn" in v.lower() for _, v in labels)]
        for family, found in after.items()
        if not family.startswith(KEPT)
    }
    assert {f: labels for f, labels in leftovers.items() if labels} == {}
    for family, found in after.items():
        owned = {k for labels in found for k, _ in labels} & OWNER_LABELS
        if owned and not family.startswith(KEPT):
            assert len(found) == len(series.get(family, ())), family
    deletions = {dict(labels)["name"] for labels in after["rgd_deletions"]}
    assert deletions == {"warmup", *(f"churn{i}" for i in range(CYCLES))}


def _quiet(app: KroApp) -> Callable[[], Awaitable[bool]]:
    """A probe: no RGD is left, so no kind's recorder and no sender of one should be either
    (the RGD controller's own recorder lives as long as the controller)."""

    async def probe() -> bool:
        assert app.recorders is not None
        return app.recorders.names() == {RGD_RECORDER} and _event_senders() == 1

    return probe


# -- the Event recorder pool ---------------------------------------------------------------------


async def test_a_released_recorder_sends_what_it_holds_then_stops(client: Client) -> None:
    pool = RecorderPool(client, reporting_instance="test-0")
    async with _sending(pool):
        recorder = pool.recorder("kro/a.example.com-controller")
        await eventually(_senders(1), what="the sender started")
        recorder.record(greeter(), "Normal", "Ready", "none -> True: Ready")
        pool.release("kro/a.example.com-controller")
        assert pool.names() == frozenset()
        await eventually(_senders(0), what="the sender stopped")
        items, _ = await client.list_all(CORE_EVENTS, namespace=NS)
        assert [e["reason"] for e in items] == ["Ready"]

        again = pool.recorder("kro/a.example.com-controller")  # the kind is back
        assert again is not recorder
        await eventually(_senders(1), what="a new sender started")
        pool.release("kro/never-created-controller")
        assert pool.names() == {"kro/a.example.com-controller"}


async def test_a_released_recorder_that_cannot_send_gives_up() -> None:
    pool = RecorderPool(_Hanging(), reporting_instance="test-0", flush_timeout_s=0.05)
    async with _sending(pool):
        recorder = pool.recorder("kro/a.example.com-controller")
        recorder.record(greeter(), "Normal", "Ready", "none -> True: Ready")
        pool.release("kro/a.example.com-controller")
        await eventually(_senders(0), what="the sender gave up")


async def test_a_recorder_released_before_the_pool_runs_still_sends_then_stops(
    client: Client,
) -> None:
    pool = RecorderPool(client, reporting_instance="test-0")
    pool.recorder("kro/a.example.com-controller").record(
        greeter(), "Warning", "Ready", "none -> False: NotReady"
    )
    pool.release("kro/a.example.com-controller")
    async with _sending(pool):

        async def sent() -> bool:
            items, _ = await client.list_all(CORE_EVENTS, namespace=NS)
            return [e["reason"] for e in items] == ["Ready"]

        await eventually(sent, what="the Event sent")
        await eventually(_senders(0), what="the sender stopped")
        assert pool.names() == frozenset()


def _senders(count: int) -> Callable[[], Awaitable[bool]]:
    """A probe: exactly `count` Event senders run."""

    async def probe() -> bool:
        return _event_senders() == count

    return probe


class _Hanging:
    """An EventClient whose API server never answers."""

    async def create(
        self, gvr: GVR, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def patch(
        self, gvr: GVR, name: str, patch: Any, *, namespace: str | None = None
    ) -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")
