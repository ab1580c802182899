"""One replica of a leader-elected operator, for e2e/test_runtime_leader.py; kro.runtime only.

    python e2e/runtime_leader_proc.py KUBECONFIG NAMESPACE LEASE IDENTITY

Every replica watches the ConfigMaps of NAMESPACE (warm cache, leader or not); only the holder
of Lease LEASE reconciles them, by stamping the annotation `e2e.kro.run/<IDENTITY>: "true"`.
The test reads the annotations: a second identity on any ConfigMap would mean two leaders.
Short timings (lease 4 s, renew deadline 3 s, retry 1 s) keep a failover within seconds.
Prints `synced` once its cache is in, so the test knows the replica is up.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from kro.runtime import (
    GVR,
    Client,
    ClientOptions,
    Controller,
    Informer,
    LeaderElectionConfig,
    Manager,
    ManagerOptions,
    Request,
    Result,
    WorkQueue,
    configure_logging,
)

CONFIGMAPS = GVR("", "v1", "configmaps")


class Enqueue:
    def __init__(self, queue: WorkQueue[Request]) -> None:
        self.queue = queue

    def on_add(self, obj: dict[str, Any]) -> None:
        self.queue.add(Request(obj["metadata"]["namespace"], obj["metadata"]["name"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.on_add(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        pass


class Stamp:
    def __init__(self, client: Client, informer: Informer, identity: str) -> None:
        self.client, self.informer, self.identity = client, informer, identity

    async def reconcile(self, request: Request) -> Result:
        cached = self.informer.store.get_by(request.namespace, request.name)
        key = f"e2e.kro.run/{self.identity}"
        if cached is None or (cached["metadata"].get("annotations") or {}).get(key) == "true":
            return Result()
        patch = {"metadata": {"annotations": {key: "true"}}}
        await self.client.patch(CONFIGMAPS, request.name, patch, namespace=request.namespace)
        return Result()


class ReportSynced:
    """A runnable that prints `synced` once the informer's first LIST is in."""

    def __init__(self, informer: Informer) -> None:
        self.informer = informer

    async def run(self) -> None:
        await self.informer.wait_for_sync()
        print("synced", flush=True)
        await asyncio.Event().wait()  # a runnable lives as long as the manager


async def main(kubeconfig: str, namespace: str, lease: str, identity: str) -> None:
    configure_logging("console", "info")
    async with await Client.from_kubeconfig(kubeconfig, options=ClientOptions(qps=0)) as client:
        informer = Informer(client, CONFIGMAPS, namespace=namespace)
        queue: WorkQueue[Request] = WorkQueue("stamp")
        informer.add_handler(Enqueue(queue))
        election = LeaderElectionConfig(
            lease_name=lease,
            lease_namespace=namespace,
            identity=identity,
            lease_duration_s=4.0,
            renew_deadline_s=3.0,
            retry_period_s=1.0,
        )
        options = ManagerOptions(
            health_probe_bind_address="0",
            metrics_bind_address="0",
            leader_election=election,
            graceful_shutdown_timeout_s=5.0,
        )
        manager = Manager(options, client=client)
        manager.add_informer(informer)
        manager.add_runnable(ReportSynced(informer))
        manager.add_controller(Controller("stamp", Stamp(client, informer, identity), queue))
        await manager.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
