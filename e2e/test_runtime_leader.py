"""Leader election across processes on the real API server (kro.runtime.Manager + LeaderElector).

Two replicas of e2e/runtime_leader_proc.py share one Lease. While both run, exactly one
reconciles: every ConfigMap carries the annotation of one identity only, the Lease holder's.
After `kill -9` of the leader (no release, the Lease just stops being renewed) the other
replica takes over once the lease duration has passed on its own clock, and reconciles.
"""

from __future__ import annotations

import os
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from runtime_e2e_support import CONFIGMAPS, configmap, eventually

from kro.runtime import GVR, Client, errors
from kro.runtime.leaderelection import JITTER_FACTOR
from kro.testing.pytest_plugin import ClusterHandle

LEASES = GVR("coordination.k8s.io", "v1", "leases")
LEASE_DURATION_S, RETRY_PERIOD_S = 4.0, 1.0  # as in runtime_leader_proc.py
SCRIPT = Path(__file__).with_name("runtime_leader_proc.py")
ROOT = SCRIPT.parent.parent


@dataclass(frozen=True)
class Replica:
    identity: str
    process: subprocess.Popen[str]
    log: Path

    def annotation(self) -> str:
        return f"e2e.kro.run/{self.identity}"

    def wait_for_line(self, expected: str, timeout_s: float) -> None:
        """Read stdout until `expected`, failing with the replica's log after `timeout_s`."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.process.stdout], [], [], remaining)
            line = self.process.stdout.readline() if ready else ""
            if line.strip() == expected:
                return
            if ready and not line:  # EOF: the replica exited
                break
        raise AssertionError(f"{self.identity} never said {expected!r}:\n{self.log.read_text()}")


@dataclass(frozen=True)
class Replicas:
    lease: str
    members: list[Replica]


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


@pytest.fixture
def replicas(
    kube_cluster: ClusterHandle, kube_namespace: str, tmp_path: Path
) -> Iterator[Replicas]:
    lease = f"leader-{secrets.token_hex(3)}"
    started: list[Replica] = []
    logs: list[IO[str]] = []
    try:
        for name in ("replica-a", "replica-b"):
            identity = f"{name}-{secrets.token_hex(3)}"
            log = tmp_path / f"{name}.log"
            out = log.open("w")
            logs.append(out)
            argv = [str(SCRIPT), str(kube_cluster.kubeconfig), kube_namespace, lease, identity]
            process = subprocess.Popen(
                [sys.executable, *argv],
                stdout=subprocess.PIPE,
                stderr=out,
                text=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            started.append(Replica(identity, process, log))
        for replica in started:  # both caches are in before the test starts counting
            replica.wait_for_line("synced", timeout_s=60)
        yield Replicas(lease, started)
    finally:
        for replica in started:
            if replica.process.poll() is None:
                replica.process.send_signal(signal.SIGTERM)
        for replica in started:
            try:
                replica.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait()
        for opened in logs:
            opened.close()


async def holder(client: Client, namespace: str, lease: str) -> str:
    try:
        obj = await client.get(LEASES, lease, namespace=namespace)
    except errors.NotFound:
        return ""
    return str((obj.get("spec") or {}).get("holderIdentity") or "")


def stamps(objs: list[dict[str, Any]], replicas: list[Replica]) -> dict[str, set[str]]:
    """Per ConfigMap name, which replicas stamped it."""
    out: dict[str, set[str]] = {}
    for obj in objs:
        annotations = obj["metadata"].get("annotations") or {}
        out[obj["metadata"]["name"]] = {
            r.identity for r in replicas if annotations.get(r.annotation()) == "true"
        }
    return out


async def test_one_replica_reconciles_and_the_other_takes_over_after_kill_9(
    client: Client, kube_namespace: str, replicas: Replicas
) -> None:
    ns, lease, members = kube_namespace, replicas.lease, replicas.members
    by_identity = {r.identity: r for r in members}
    names = [f"work-{i}" for i in range(10)]
    for name in names[:5]:
        await client.create(CONFIGMAPS, configmap(name, {"k": "v"}), namespace=ns)

    leader_id = await eventually(lambda: holder(client, ns, lease), timeout_s=30, what="a leader")
    leader = by_identity[leader_id]
    follower = next(r for r in members if r is not leader)
    for name in names[5:]:  # created while both run: only the leader may act on them
        await client.create(CONFIGMAPS, configmap(name, {"k": "v"}), namespace=ns)

    async def all_stamped() -> dict[str, set[str]]:
        items, _ = await client.list_all(CONFIGMAPS, namespace=ns)
        seen = stamps([o for o in items if o["metadata"]["name"] in names], members)
        return seen if len(seen) == len(names) and all(seen.values()) else {}

    seen = await eventually(all_stamped, timeout_s=30, what="every ConfigMap to be reconciled")
    assert all(ids == {leader.identity} for ids in seen.values()), seen
    assert await holder(client, ns, lease) == leader.identity
    assert follower.process.poll() is None, "the follower must be alive and waiting"

    leader.process.send_signal(signal.SIGKILL)  # no graceful release: the Lease must expire
    leader.process.wait(timeout=10)
    killed_at = time.monotonic()
    await client.create(CONFIGMAPS, configmap("after-failover", {"k": "v"}), namespace=ns)

    async def taken_over() -> bool:
        return await holder(client, ns, lease) == follower.identity

    await eventually(
        taken_over, timeout_s=30, what="the follower to take the Lease", interval_s=0.1
    )
    takeover_s = time.monotonic() - killed_at

    async def failover_reconciled() -> bool:
        obj = await client.get(CONFIGMAPS, "after-failover", namespace=ns)
        return follower.identity in stamps([obj], members)["after-failover"]

    await eventually(failover_reconciled, timeout_s=30, what="the new leader to reconcile")
    reconciled_s = time.monotonic() - killed_at
    print(f"takeover {takeover_s:.1f}s after kill -9; reconciled {reconciled_s:.1f}s after")
    # The follower waits one lease duration from the last renewal it saw (at most one retry
    # period, jittered, before the kill) and then tries every retry period (jittered).
    worst_s = LEASE_DURATION_S + 2 * RETRY_PERIOD_S * (1 + JITTER_FACTOR) + 1.0
    assert takeover_s <= worst_s
    # ... and never sooner than the lease allows: the last renewal was at most one retry
    # period before the kill.
    assert takeover_s >= LEASE_DURATION_S - RETRY_PERIOD_S - 0.5
