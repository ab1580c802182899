"""One kro controller process on the in-process fake API server, driven by the test: its
informers and caches (kro.dynamic), its applier and its instance reconciler for the greeter
RGD. Shared by the tests of what a reconcile reads and writes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from controllers_fakes import GREETERS, GROUP, NS, RESOLVER, greeter_reconciler, greeter_rgd

from kro.applyset import Applier, ApplierOptions, tooling_for
from kro.controllers.instance import InstanceReconciler
from kro.controllers.instance.reconciler import probably_settled, should_enqueue_update
from kro.controllers.metrics import InstanceMetrics
from kro.controllers.registry import RevisionRegistry
from kro.dynamic import DynamicController, DynamicControllerOptions
from kro.graph.builder import build_graph
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.reconcile import Request, Result
from kro.testing.fakeapi import FakeApiServer

REQUEST = Request(NS, "hi")
INSTANCE_PATH = f"/apis/{GROUP}/v1alpha1/namespaces/{NS}/greeters/hi"
CHILD_PATH = f"/api/v1/namespaces/{NS}/configmaps/hi"
INFORMER_LISTS = {"/api/v1/configmaps", f"/apis/{GROUP}/v1alpha1/greeters"}
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@dataclass
class Kro:
    """One controller process: its caches, its applier (and its memory), its reconciler."""

    dynamic: DynamicController
    reconciler: InstanceReconciler

    async def converge(self) -> None:
        results = [await self.reconciler.reconcile(REQUEST) for _ in range(3)]
        assert results[-1] == Result()


@asynccontextmanager
async def running(client: Client, registry: RevisionRegistry) -> AsyncIterator[Kro]:
    """A controller process on the shared fake API server; leaving the block stops it."""
    cache = InformerCache(client)
    dynamic = DynamicController(cache, options=DynamicControllerOptions(workers=1))
    reconciler = greeter_reconciler(
        client=client,
        registry=registry,
        applier=Applier(client, ApplierOptions(tooling=tooling_for("v0.9.3"))),
        watches=dynamic.watches,
        metrics=InstanceMetrics(PrometheusProvider(process_metrics=False)),
    )
    # Registered without running workers: the test drives the reconciles itself.
    await dynamic.register(
        GREETERS,
        reconciler.reconcile,
        should_enqueue_update=should_enqueue_update,
        probably_settled=probably_settled,
    )
    try:
        yield Kro(dynamic, reconciler)
    finally:
        dynamic.shutdown()
        await dynamic._close()
        await cache.close()


def registry_of(rgd: dict[str, Any] | None = None) -> RevisionRegistry:
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", build_graph(rgd or greeter_rgd(), RESOLVER))
    return registry


def sent(api: FakeApiServer, before: int) -> list[tuple[str, str]]:
    """Requests since `before`, without watches and the informers' lists."""
    return [
        (r.method, r.path)
        for r in api.requests[before:]
        if not r.is_watch and not (r.method == "GET" and r.path in INFORMER_LISTS)
    ]


def stored(api: FakeApiServer, gvr: GVR, name: str) -> dict[str, Any]:
    obj = api.object(gvr, name, NS)
    assert obj is not None
    return obj
