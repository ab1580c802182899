"""Following a Graph and the objects it makes through watches, and the Namespaces a Graph
scenario decorates: creating them, waiting until kube-controller-manager has furnished them,
labelling them."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR

from .harness import NAMESPACES, create_namespace

GRAPHS = GVR("kro.run", "v1alpha1", "graphs")
SERVICE_ACCOUNTS = GVR("", "v1", "serviceaccounts")
CONFIGMAPS = GVR("", "v1", "configmaps")


@dataclass
class Decorated:
    """What the bench has seen of a decorator's work through two watches: when an object of it
    first appeared in each namespace, the `kro.run/collection-size` each carries now, how many
    times one changed, and the Graph as last seen. `changed` wakes whoever waits for a figure."""

    policies: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, str] = field(default_factory=dict)
    modified: int = 0
    """MODIFIED events of the decorator's objects: each is a write that changed one."""
    graph: dict[str, Any] = field(default_factory=dict)
    graph_gone: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def see_policy(self, kind: str, obj: dict[str, Any], now: float) -> None:
        namespace = obj["metadata"]["namespace"]
        if kind == "DELETED":
            self.policies.pop(namespace, None)
            self.sizes.pop(namespace, None)
        else:
            if kind == "MODIFIED":
                self.modified += 1
            self.policies.setdefault(namespace, now)
            labels = obj["metadata"].get("labels") or {}
            self.sizes[namespace] = str(labels.get("kro.run/collection-size", ""))
        self.changed.set()

    def list_policies(self, items: list[dict[str, Any]], now: float) -> None:
        """A (re)list: what is not in it is gone, even if its DELETED event was missed."""
        present = {i["metadata"]["namespace"] for i in items}
        for namespace in set(self.policies) - present:
            self.see_policy("DELETED", {"metadata": {"namespace": namespace}}, now)
        for item in items:
            self.see_policy("ADDED", item, now)

    def see_graph(self, kind: str, obj: dict[str, Any], now: float) -> None:
        self.graph, self.graph_gone = (obj, kind == "DELETED")
        self.changed.set()

    def list_graphs(self, items: list[dict[str, Any]], now: float) -> None:
        if items:
            self.see_graph("ADDED", items[0], now)
        elif self.graph:
            self.see_graph("DELETED", self.graph, now)

    def graph_converged(self, count: int) -> bool:
        """Ready, with `count` entries in managedResources, each with the UID of its object."""
        status = self.graph.get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        entries = status.get("managedResources") or []
        return ready and len(entries) == count and all(e.get("uid") for e in entries)

    async def until(self, done: Any, timeout_s: float) -> float | None:
        """The monotonic time `done()` was first seen true, or None after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not done():
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)
        return time.monotonic()


async def follow(
    client: Client,
    gvr: GVR,
    listed: Any,
    see: Any,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
) -> None:
    """List `gvr` (to `listed(items, when)`), then watch it from that version (each event to
    `see(type, object, when)`), relisting whenever the watch ends. One watch each, rather than
    polling lists, so following the run adds next to nothing to the API server it measures."""
    while True:
        items, version = await client.list_all(
            gvr, namespace=namespace, label_selector=label_selector
        )
        listed(items, time.monotonic())
        stream = client.watch(
            gvr,
            namespace=namespace,
            resource_version=version,
            label_selector=label_selector,
            drop_managed_fields=True,
            timeout_s=60,
        )
        with contextlib.suppress(KubeError):
            async with contextlib.aclosing(stream) as events:
                async for event in events:
                    if event.type in ("ADDED", "MODIFIED", "DELETED"):
                        see(event.type, event.object, time.monotonic())


async def create_namespaces(client: Client, names: Sequence[str], labels: dict[str, str]) -> None:
    limit = asyncio.Semaphore(32)

    async def one(name: str) -> None:
        async with limit:
            await create_namespace(client, name, labels)

    await asyncio.gather(*(one(n) for n in names))


async def namespaces_furnished(client: Client, names: Sequence[str], timeout_s: float) -> None:
    """Wait until kube-controller-manager has given every new namespace its `default`
    ServiceAccount and `kube-root-ca.crt` ConfigMap: those creates would otherwise land in the
    measured window and be counted as the decorator's requests."""
    wanted = set(names)
    deadline = time.monotonic() + timeout_s
    for gvr, name in ((SERVICE_ACCOUNTS, "default"), (CONFIGMAPS, "kube-root-ca.crt")):
        while True:
            items, _ = await client.list_all(gvr, field_selector=f"metadata.name={name}")
            if wanted <= {i["metadata"]["namespace"] for i in items}:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"namespaces still without {gvr.resource} {name}")
            await asyncio.sleep(0.5)


async def label_namespaces(client: Client, names: Sequence[str], label: str) -> None:
    limit = asyncio.Semaphore(32)

    async def one(name: str) -> None:
        async with limit:
            await client.patch(NAMESPACES, name, {"metadata": {"labels": {label: "on"}}})

    await asyncio.gather(*(one(n) for n in names))
