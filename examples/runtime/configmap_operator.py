"""A complete operator on kro.runtime alone: a summary ConfigMap for each labelled ConfigMap.

For every ConfigMap labelled `example.kro.run/summarize=true` it keeps `<name>-summary` beside
it, holding the source's key names and their count, owned by the source. Edit or delete the
summary and it comes back; drop the label and the summary goes. docs/runtime.md walks through it.

    KUBECONFIG=~/.kube/config python examples/runtime/configmap_operator.py [NAMESPACE]
"""

import asyncio
import contextlib
import os
import sys
from typing import Any

from kro.runtime import (
    GVR,
    Client,
    Controller,
    Informer,
    Manager,
    ManagerOptions,
    Request,
    Result,
    WorkQueue,
    configure_logging,
    errors,
)

CONFIGMAPS = GVR("", "v1", "configmaps")
SOURCE, SUMMARY_OF = "example.kro.run/summarize", "example.kro.run/summary-of"
Obj = dict[str, Any]  # Kubernetes objects are plain dicts


class Enqueue:
    """Informer handler: a change to a source, or to its summary, queues the source's name."""

    def __init__(self, queue: WorkQueue[Request]) -> None:
        self.queue = queue

    def on_add(self, obj: Obj) -> None:
        meta, labels = obj["metadata"], obj["metadata"].get("labels") or {}
        name = labels.get(SUMMARY_OF) or (meta["name"] if SOURCE in labels else None)
        if name:
            self.queue.add(Request(meta["namespace"], name))

    def on_update(self, old: Obj, new: Obj) -> None:
        self.on_add(old)  # old too: a source that lost its label must lose its summary
        self.on_add(new)

    on_delete = on_add


def summary_of(source: Obj) -> Obj:
    """The desired summary: only the fields this operator owns (server-side apply)."""
    meta = source["metadata"]
    keys = sorted(source.get("data") or {})
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"]}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{meta['name']}-summary",
            "namespace": meta["namespace"],
            "labels": {SUMMARY_OF: meta["name"]},
            "ownerReferences": [{**owner, "controller": True}],
        },
        "data": {"keys": ",".join(keys), "count": str(len(keys))},
    }


class Summarize:
    """The reconciler: read the source from the cache; apply its summary, or delete it."""

    def __init__(self, client: Client, informer: Informer) -> None:
        self.client, self.informer = client, informer

    async def reconcile(self, req: Request) -> Result:
        source = self.informer.store.get_by(req.namespace, req.name)
        if source is None or (source["metadata"].get("labels") or {}).get(SOURCE) != "true":
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(CONFIGMAPS, f"{req.name}-summary", namespace=req.namespace)
            return Result()
        summary = summary_of(source)
        await self.client.apply(CONFIGMAPS, summary, field_manager="summarize", force=True)
        return Result()


async def main(namespace: str | None) -> None:
    configure_logging("console", "info")
    address = os.environ.get("PROBE_ADDRESS", "127.0.0.1:8081")  # /healthz /readyz /metrics
    manager = Manager(ManagerOptions(health_probe_bind_address=address, metrics_bind_address="0"))
    async with await Client.from_kubeconfig() as client:
        informer = Informer(client, CONFIGMAPS, namespace=namespace)
        queue: WorkQueue[Request] = WorkQueue("summarize", metrics=manager.metrics)
        informer.add_handler(Enqueue(queue))
        reconciler = Summarize(client, informer)
        manager.add_informer(informer)
        manager.add_controller(
            Controller("summarize", reconciler, queue, workers=2, metrics=manager.metrics)
        )
        await manager.run()  # until SIGTERM or Ctrl-C; then drains the queue and stops


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None))
