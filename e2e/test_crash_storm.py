"""A crash storm on the real control plane: `kill -9` of kro at random moments, changes in flight.

100 instances converging; the controller is killed 10 times and restarted at once (as the
kubelet would), while 20 instances are updated and 20 deleted across the storm. Afterwards every
instance is ACTIVE with children matching its spec, the deleted ones are gone with their
children, and there are no duplicates, orphans or stuck finalizers (kro.testing.chaos).
bench/bench_chaos.py runs the same storm with 50 kills.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kro.runtime.client import Client
from kro.testing.chaos import CrashStorm
from kro.testing.kroprocess import KroProcess
from kro.testing.pytest_plugin import ClusterHandle

CONTROLLER_ARGS = ("--dynamic-controller-concurrent-reconciles=8", "--log-level=info")


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


async def test_kill_9_at_random_moments_leaves_nothing_a_restart_cannot_finish(
    kube_cluster: ClusterHandle, kube_namespace: str, client: Client, tmp_path: Path
) -> None:
    started: list[KroProcess] = []

    def start() -> KroProcess:
        log = tmp_path / f"kro-{len(started)}.log"
        process = KroProcess(kube_cluster.kubeconfig, log, CONTROLLER_ARGS).start()
        started.append(process)
        return process

    storm = CrashStorm(client, kube_namespace, f"{kube_namespace}.e2e.kro.run", start)
    try:
        result = await storm.run(instances=100, kills=10, updates=20, deletes=20)
        print(result.as_dict())
        assert result.failures() == 0, (
            result.as_dict(),
            storm.controller and storm.controller.tail(),
        )
        assert len(started) == 11
    finally:
        await storm.cleanup()  # while a controller still runs to remove the children
        for process in started:
            process.stop()
