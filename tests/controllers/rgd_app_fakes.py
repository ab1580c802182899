"""The whole kro controller (KroApp: RGD, GraphRevision and dynamic controllers on a Manager
and its informer cache) running on the in-process fake API server, for tests that follow an RGD
through its life: the fake serves RGDs, GraphRevisions (listable by `spec.snapshot.name`, as the
real server's selectable field) and CRDs, and garbage collection is done by hand
(`collect_garbage`), as the fake has no kube-controller-manager."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from controllers_fakes import GROUP, RESOLVER, greeter_rgd

from kro.controllers.app import AppOptions, KroApp
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.instance import InstanceOptions
from kro.controllers.rgd import RGDS, RGDOptions
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.metrics import MetricsProvider
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.sharding import ShardView
from kro.testing import waiting
from kro.testing.fakeapi import (
    DEFAULT_RESOURCES,
    FakeApiServer,
    FakeResource,
    parse_selector,
    selector_matches,
)

T = TypeVar("T")

SNAPSHOT_FIELD = "spec.snapshot.name"
KRO_RESOURCES = (
    *DEFAULT_RESOURCES,
    FakeResource(RGDS.group, RGDS.version, RGDS.resource, "ResourceGraphDefinition", False),
    FakeResource(
        GRAPH_REVISIONS.group,
        GRAPH_REVISIONS.version,
        GRAPH_REVISIONS.resource,
        "GraphRevision",
        False,
    ),
)
DEADLINE_S = 15.0


class KroFakeApi(FakeApiServer):
    """The fake API server plus the GraphRevision field selector kro lists revisions by."""

    def __init__(self) -> None:
        super().__init__(KRO_RESOURCES)

    def _select(self, target: Any, query: Mapping[str, str]) -> list[dict[str, Any]]:
        terms = parse_selector(query.get("fieldSelector", ""))
        wanted = [t for t in terms if t[0] == SNAPSHOT_FIELD]
        if not wanted:
            return super()._select(target, query)
        rest = ",".join(f"{k}{op}{v}" for k, op, v in terms if k != SNAPSHOT_FIELD)
        items = super()._select(target, {**query, "fieldSelector": rest})
        return [
            item
            for item in items
            if selector_matches(wanted, {SNAPSHOT_FIELD: item["spec"]["snapshot"]["name"]})
        ]


def app_options(**gates: bool) -> AppOptions:
    """Fast requeues; everything else as `kro controller` defaults."""
    return AppOptions(
        rgd=RGDOptions(
            progress_requeue_delay_s=0.05, instance=InstanceOptions(requeue_interval_s=0.1)
        ),
        feature_gates=gates,
    )


def make_app(
    client: Client,
    provider: MetricsProvider | None = None,
    options: AppOptions | None = None,
    *,
    shard: ShardView | None = None,
    manager: Manager | None = None,
) -> KroApp:
    """A KroApp with the offline schema resolver on a Manager of its own (or `manager`), not
    started; `shard` makes it a sharded replica."""
    if manager is None:
        manager = Manager(
            ManagerOptions(handle_signals=False, shard=shard),
            client=client,
            metrics=provider if isinstance(provider, PrometheusProvider) else None,
        )
    return KroApp(manager, options or app_options(), metrics=provider, resolver=RESOLVER)


@contextlib.asynccontextmanager
async def started(app: KroApp) -> AsyncIterator[KroApp]:
    """Run `app`'s manager until its caches have synced; on exit stop everything at once, as
    kill -9 would (nothing is drained or handed over)."""
    task = asyncio.create_task(app.manager.run(), name="test:manager")

    async def ready() -> bool:
        if task.done():
            task.result()  # the manager failed: say why
        return app.manager.is_ready()

    try:
        await eventually(ready, what="the manager's caches synced")
        yield app
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for queue in (app.rgd_queue, app.gr_queue, app.dynamic.queue):
            queue.shutdown()  # cancels the queue's timer task
        await asyncio.sleep(0)


@contextlib.asynccontextmanager
async def running_app(
    client: Client, provider: MetricsProvider, options: AppOptions | None = None
) -> AsyncIterator[KroApp]:
    """A KroApp with the offline schema resolver, started; every task stopped on exit."""
    async with started(make_app(client, provider, options)) as app:
        yield app


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, what: str, timeout_s: float = DEADLINE_S
) -> T:
    """Await `probe` until it returns something truthy (NotFound: not yet)."""
    return await waiting.eventually(probe, what=what, timeout_s=timeout_s, interval_s=0.02)


def kind_rgd(name: str, kind: str) -> dict[str, Any]:
    """An RGD named `name` generating `kind` in the test group; one ConfigMap per instance,
    named `<instance>-<name>`. No uid/generation: the server sets them."""
    rgd = greeter_rgd(name)
    rgd["metadata"] = {"name": name}
    rgd["spec"]["schema"]["kind"] = kind
    rgd["spec"]["resources"][0]["template"]["metadata"]["name"] = (
        f"${{schema.metadata.name}}-{name}"
    )
    return rgd


def instance(kind: str, name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"name": name},
    }


async def collect_garbage(client: Client, rgd_uid: str) -> None:
    """What kube-controller-manager's garbage collector does for a deleted RGD: delete the
    GraphRevisions it controlled (the GraphRevision controller then evicts them)."""
    items, _ = await client.list_all(GRAPH_REVISIONS)
    for item in items:
        owners = item["metadata"].get("ownerReferences") or []
        if any(o.get("uid") == rgd_uid for o in owners):
            with contextlib.suppress(NotFound):
                await client.delete(GRAPH_REVISIONS, item["metadata"]["name"])
