"""kro.dynamic on the real control plane: ConfigMaps as parents, Secrets as their watched children.

The handler stands in for kro's instance reconciler: each reconcile of ConfigMap `parent`
declares a scalar watch on Secret `parent` and a selector watch on Secrets labelled
`app=parent`, then commits. Changes to those Secrets must bring the parent back.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from kro.dynamic import (
    DynamicController,
    LabelSelector,
    ObjectRef,
    ScalarWatch,
    SelectorWatch,
)
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result
from kro.testing.pytest_plugin import ClusterHandle

CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
NAMESPACES = GVR("", "v1", "namespaces")
DEADLINE_S = 30.0


class Parents:
    """Reconciles ConfigMaps of one namespace, declaring the Secret watches described above.

    everywhere: the selector watch spans all namespaces (how kro watches forEach items, N-34).
    """

    def __init__(
        self, dynamic: DynamicController, namespace: str, *, everywhere: bool = False
    ) -> None:
        self.dynamic = dynamic
        self.namespace = namespace
        self.selector_namespace = None if everywhere else namespace
        self.calls: Counter[str] = Counter()
        self._changed = asyncio.Condition()

    async def __call__(self, request: Request) -> Result:
        if request.namespace != self.namespace:
            return Result()  # the rest of the cluster's ConfigMaps
        parent = ObjectRef(CONFIGMAPS, request.namespace, request.name)
        watches = self.dynamic.watches
        await watches.watch(parent, ScalarWatch("secret", SECRETS, self.namespace, request.name))
        selector = LabelSelector.from_labels({"app": request.name})
        request_ns = self.selector_namespace
        await watches.watch(parent, SelectorWatch("selected", SECRETS, request_ns, selector))
        await watches.done(parent, commit=True)
        async with self._changed:
            self.calls[request.name] += 1
            self._changed.notify_all()
        return Result()

    async def wait_for_more(self, name: str, than: int) -> int:
        """Wait until `name` was reconciled more than `than` times; returns the new count."""

        async def wait() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self.calls[name] > than)

        await asyncio.wait_for(wait(), DEADLINE_S)
        return self.calls[name]


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    client = await Client.from_kubeconfig(str(kube_cluster.kubeconfig))
    async with client:
        yield client


@asynccontextmanager
async def running(client: Client) -> AsyncIterator[tuple[DynamicController, InformerCache]]:
    cache = InformerCache(client)
    dynamic = DynamicController(cache)
    informers = asyncio.create_task(cache.run(), name="e2e.informers")
    workers = asyncio.create_task(dynamic.run(), name="e2e.dynamic")
    try:
        yield dynamic, cache
    finally:
        dynamic.shutdown()
        await asyncio.wait_for(workers, DEADLINE_S)
        informers.cancel()
        await asyncio.gather(informers, return_exceptions=True)


def secret(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": labels or {}},
        "stringData": {"key": "one"},
    }


async def test_watched_children_enqueue_their_parent(client: Client, kube_namespace: str) -> None:
    ns = kube_namespace
    async with running(client) as (dynamic, cache):
        handler = Parents(dynamic, ns)
        await dynamic.register(CONFIGMAPS, handler)
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "parent"}}
        await client.create(CONFIGMAPS, cm, namespace=ns)
        seen = await handler.wait_for_more("parent", 0)
        assert dynamic.watches.watched_gvrs() == {SECRETS}

        # The scalar child appears, then changes: each time the parent is reconciled.
        await client.create(SECRETS, secret("parent"), namespace=ns)
        seen = await handler.wait_for_more("parent", seen)
        await client.patch(SECRETS, "parent", {"stringData": {"key": "two"}}, namespace=ns)
        seen = await handler.wait_for_more("parent", seen)

        # An unrelated Secret enters the selector, then leaves it: both wake the parent.
        await client.create(SECRETS, secret("member", {"app": "parent"}), namespace=ns)
        seen = await handler.wait_for_more("parent", seen)
        leave = {"metadata": {"labels": {"app": "someone-else"}}}
        await client.patch(SECRETS, "member", leave, namespace=ns)
        seen = await handler.wait_for_more("parent", seen)

        # The scalar child is deleted: the parent hears of that too.
        await client.delete(SECRETS, "parent", namespace=ns)
        await handler.wait_for_more("parent", seen)

        # Deregistering drops the watches and releases both informers.
        await dynamic.deregister(CONFIGMAPS)

        async def released() -> None:
            while cache.informers():  # noqa: ASYNC110 - a late reconcile may still finish
                await asyncio.sleep(0.05)

        await asyncio.wait_for(released(), DEADLINE_S)
        assert dynamic.watches.parents() == frozenset()


async def test_selector_watch_across_namespaces(client: Client, kube_namespace: str) -> None:
    ns, elsewhere = kube_namespace, f"{kube_namespace}-b"
    await client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": elsewhere}}
    )
    try:
        async with running(client) as (dynamic, _):
            handler = Parents(dynamic, ns, everywhere=True)
            await dynamic.register(CONFIGMAPS, handler)
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "parent"}}
            await client.create(CONFIGMAPS, cm, namespace=ns)
            seen = await handler.wait_for_more("parent", 0)
            drifted = secret("item", {"app": "parent"})
            await client.create(SECRETS, drifted, namespace=elsewhere)
            await handler.wait_for_more("parent", seen)
    finally:
        await client.delete(NAMESPACES, elsewhere)
