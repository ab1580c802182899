"""Three `kro controller --shards=auto` replicas share the instances, on the real control plane
(kube-apiserver with ShardedListAndWatch, as the local cluster starts it).

Scaled down from the issue's 300 instances in 30 namespaces to INSTANCES in NAMESPACES so that
it runs in minutes on two cores. Namespace names carry a random suffix: FNV-1a of names that
differ only in their last characters lands in one narrow band of the hash space (see
docs/sharding.md), so `ns-0`…`ns-9` would all fall to one replica.

Each replica logs `shard.reconcile_start`/`shard.reconcile_end` (KRO_SHARD_TRACE_RECONCILES=1);
the test checks that no instance is ever reconciled by two replicas at once and that, once the
view is settled, each replica reconciles only namespaces in its range.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kro_harness import KroEnv, is_ready, wait_for

from kro.runtime import GVR, Client, errors
from kro.runtime.sharding import TRACE_ENV, assign, fnv1a64
from kro.testing.kroprocess import FAST_LEASE_ARGS, KroProcess
from kro.testing.pytest_plugin import ClusterHandle
from kro.testing.runlocal import install_crds

NAMESPACES_GVR = GVR("", "v1", "namespaces")
NAMESPACES = 6
INSTANCES = 24


@pytest.fixture
def spawn(
    kube_cluster: ClusterHandle,
    kube_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Any]:
    monkeypatch.setenv(TRACE_ENV, "1")
    started: list[KroProcess] = []

    def start(name: str) -> KroProcess:
        process = KroProcess(
            kube_cluster.kubeconfig,
            tmp_path / f"{name}.log",
            [
                *FAST_LEASE_ARGS,
                "--shards=auto",
                f"--leader-election-namespace={kube_namespace}",
                "--dynamic-controller-concurrent-reconciles=2",
            ],
        ).start()
        started.append(process)
        return process

    try:
        yield start
    finally:
        for process in started:
            process.stop()


@pytest.fixture
async def kro(kube_cluster: ClusterHandle, kube_namespace: str) -> AsyncIterator[KroEnv]:
    client = await Client.from_kubeconfig(str(kube_cluster.kubeconfig))
    await install_crds(client)
    env = KroEnv(client, kube_namespace)
    try:
        yield env
    finally:
        await client.close()


def _time(record: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(record["timestamp"]).replace("Z", "+00:00")).timestamp()


def _intervals(
    replicas: dict[str, KroProcess],
) -> dict[tuple[str, str], list[tuple[float, float, str]]]:
    """(namespace, name) -> [(start, end, replica)] from the reconcile trace."""
    out: dict[tuple[str, str], list[tuple[float, float, str]]] = defaultdict(list)
    for name, process in replicas.items():
        open_at: dict[tuple[str, str], float] = {}
        for record in process.events():
            key = (str(record.get("ns")), str(record.get("obj")))
            if record.get("event") == "shard.reconcile_start":
                open_at[key] = _time(record)
            elif record.get("event") == "shard.reconcile_end" and key in open_at:
                out[key].append((open_at.pop(key), _time(record), name))
        # Still running, or killed mid-reconcile: a killed replica's work ends with the process.
        ended = process.killed_at if process.killed_at is not None else float("inf")
        for key, began in open_at.items():
            out[key].append((began, ended, name))
    return out


def _assert_no_overlap(replicas: dict[str, KroProcess]) -> int:
    total = 0
    for key, spans in _intervals(replicas).items():
        spans.sort()
        total += len(spans)
        for (_s1, e1, r1), (s2, _e2, r2) in itertools.pairwise(spans):
            assert r1 == r2 or e1 <= s2, f"{key} reconciled by {r1} and {r2} at once"
    return total


async def children_hold(client: Client, names: Sequence[tuple[str, str]], value: str) -> bool:
    """Every instance's ConfigMap exists and carries `value`."""
    for ns, name in names:
        try:
            cm = await client.get(GVR("", "v1", "configmaps"), f"{name}-config", namespace=ns)
        except errors.NotFound:
            return False
        if (cm.get("data") or {}).get("value") != value:
            return False
    return True


async def test_three_replicas_share_instances_and_survive_a_kill(
    kro: KroEnv, spawn: Any, kube_namespace: str
) -> None:
    client = kro.client
    namespaces = [f"{kube_namespace}-{secrets.token_hex(3)}" for _ in range(NAMESPACES)]
    for ns in namespaces:
        await client.create(
            NAMESPACES_GVR, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
    replicas = {name: spawn(name) for name in ("r0", "r1", "r2")}
    definition = kro.rgd(
        "sharded",
        "Sharded",
        {"value": "string"},
        [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-config"},
                    "data": {"value": "${schema.spec.value}"},
                },
            }
        ],
    )
    try:
        await kro.apply_rgd(definition)
        await kro.wait_rgd_active(definition["metadata"]["name"])
        gvr = await kro.gvr_of("Sharded")
        names = [(namespaces[i % NAMESPACES], f"i{i}") for i in range(INSTANCES)]
        for ns, name in names:
            await kro.apply_instance("Sharded", name, {"value": "a"}, namespace=ns)

        async def all_ready() -> bool:
            for ns, name in names:
                try:
                    if not is_ready(await client.get(gvr, name, namespace=ns)):
                        return False
                except errors.NotFound:
                    return False
            return True

        await wait_for(all_ready, what="every instance ACTIVE", timeout_s=180)
        reconciled = _assert_no_overlap(replicas)
        assert reconciled >= INSTANCES

        # Settled: each replica reconciles only its range from now on.
        identities = {n: p.wait_event("shard.view_changed")["replica"] for n, p in replicas.items()}
        ranges = assign(identities.values())
        marks = {n: p.offset() for n, p in replicas.items()}
        for ns, name in names:
            await kro.apply_instance("Sharded", name, {"value": "b"}, namespace=ns)

        await wait_for(
            lambda: children_hold(client, names, "b"), what="every ConfigMap updated", timeout_s=120
        )
        per_replica: dict[str, int] = {}
        for n, p in replicas.items():
            start, end = ranges[identities[n]]
            starts = p.find("shard.reconcile_start", since=marks[n])
            per_replica[n] = len(starts)
            for record in starts:
                assert start <= fnv1a64(str(record["ns"])) < end, (n, record)
        print(f"reconciles per replica after settling: {per_replica}")

        # kill -9 one replica: its range moves within the lease duration (+ renew rounds).
        victim = "r1"
        replicas[victim].kill9()
        killed_at = asyncio.get_running_loop().time()
        for ns, name in names:
            await kro.apply_instance("Sharded", name, {"value": "c"}, namespace=ns)

        await wait_for(
            lambda: children_hold(client, names, "c"),
            what="every ConfigMap converged after the kill",
            timeout_s=120,
        )
        moved_s = asyncio.get_running_loop().time() - killed_at
        print(f"converged {moved_s:.1f}s after kill -9 of {victim}")
        _assert_no_overlap(replicas)
    finally:
        await kro.cleanup()
        for ns in namespaces:
            with contextlib.suppress(errors.NotFound):
                await client.delete(NAMESPACES_GVR, ns)
