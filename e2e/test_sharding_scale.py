"""Sharded replicas scale 3 -> 4 -> 2 while every instance is being updated, on the real control
plane (kube-apiserver with ShardedListAndWatch); then `kro explain` names the owner replica.

A fourth replica joins during one wave of updates; during the next, one replica is stopped
gracefully (SIGTERM: it gives its range up and deletes its member Lease) and another is killed
(kill -9: its range moves once its Lease has expired). Every instance must converge to the last
update, no instance may ever be reconciled by two replicas at once (the killed replica's open
reconcile ends when it was killed; the stopped one leaves none open), and once the two survivors
settle each reconciles only namespaces of its range in the final assignment, which is also the
replica `kro explain` names.

Scaled down to 24 instances in 6 namespaces, two in each range of the three-replica assignment
(so each survivor keeps namespaces of its own), so that it runs in a minute or two on two cores.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from kro_harness import KroEnv
from sharding_fixtures import (
    Key,
    apply_all,
    assert_no_overlap,
    converge,
    create_namespaces,
    delete_namespaces,
    install_sharded_rgd,
    member_lease,
    open_reconciles,
    settled,
    sharding_fixtures,
    spread_namespaces,
    update_within_ranges,
    wait_all_ready,
)

from kro.runtime import GVR
from kro.testing.kroprocess import KroProcess
from kro.testing.pytest_plugin import ClusterHandle

PER_RANGE = 2  # namespaces per range of the first (three-replica) assignment
INSTANCES = 24

spawn, kro = sharding_fixtures()


async def churn(kro: KroEnv, names: Sequence[Key], prefix: str, stop: asyncio.Event) -> str:
    """Update every instance, round after round, until `stop` is set; the last value."""
    for round_ in itertools.count():
        value = f"{prefix}{round_}"
        await apply_all(kro, names, value)
        if stop.is_set():
            return value
    raise AssertionError("unreachable")


def explain(cluster: ClusterHandle, gvr: GVR, namespace: str, name: str) -> str:
    """`kro explain RESOURCE.GROUP/NAME -n NAMESPACE` as a user runs it; its stdout. The
    group is named because earlier tests of the session leave kinds called Sharded behind."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kro.cli.main",
            "explain",
            f"{gvr.resource}.{gvr.group}/{name}",
            "-n",
            namespace,
            f"--kubeconfig={cluster.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_replicas_scale_out_and_in_while_instances_change(
    kro: KroEnv, spawn: Any, kube_namespace: str, kube_cluster: ClusterHandle
) -> None:
    client = kro.client
    replicas: dict[str, KroProcess] = {name: spawn(name) for name in ("r0", "r1", "r2")}
    leases = {name: member_lease(process) for name, process in replicas.items()}
    namespaces = spread_namespaces(kube_namespace, leases.values(), PER_RANGE)
    await create_namespaces(client, namespaces)
    updating: asyncio.Task[str] | None = None
    try:
        gvr = await install_sharded_rgd(kro)
        names = [(namespaces[i % len(namespaces)], f"i{i}") for i in range(INSTANCES)]
        await apply_all(kro, names, "a")
        await wait_all_ready(client, gvr, names, replicas)

        # 3 -> 4: a replica joins while the instances keep changing.
        stop = asyncio.Event()
        updating = asyncio.create_task(churn(kro, names, "b", stop))
        replicas["r3"] = spawn("r3")
        leases["r3"] = await asyncio.to_thread(member_lease, replicas["r3"])
        await settled(replicas.values())
        stop.set()
        joined_s = await converge(kro, names, await updating, "every ConfigMap, four replicas")
        print(f"converged {joined_s:.1f}s after the last update, four replicas")

        # 4 -> 2: one stops gracefully and one is killed while the instances keep changing.
        stop = asyncio.Event()
        updating = asyncio.create_task(churn(kro, names, "c", stop))
        await asyncio.to_thread(replicas["r0"].stop)
        await asyncio.to_thread(replicas["r1"].kill9)
        survivors = {name: replicas[name] for name in ("r2", "r3")}
        await settled(survivors.values())
        stop.set()
        left_s = await converge(kro, names, await updating, "every ConfigMap, two replicas")
        print(f"converged {left_s:.1f}s after the last update, two replicas")
        reconciles = assert_no_overlap(replicas)
        # The graceful stop handed its range over: nothing left half-done, its Lease deleted.
        assert not open_reconciles(replicas["r0"])
        assert replicas["r0"].find("shard.left")

        # Settled: each survivor reconciles only its range of the final assignment.
        marks = {name: process.offset() for name, process in survivors.items()}
        per_replica = await update_within_ranges(kro, names, "d", survivors, leases)
        print(f"{reconciles} reconciles while scaling; per survivor once settled: {per_replica}")
        assert_no_overlap(replicas)

        # `kro explain` names the replica that reconciled the instance.
        for name, process in survivors.items():
            record = process.find("shard.reconcile_start", since=marks[name])[0]
            text = await asyncio.to_thread(
                explain, kube_cluster, gvr, str(record["ns"]), str(record["obj"])
            )
            shard = next(line for line in text.splitlines() if line.startswith("Shard:"))
            print(shard)
            assert f"replica {record['replica']} " in shard, shard
            assert leases[name] in shard, shard
    finally:
        if updating is not None:
            updating.cancel()
        await kro.cleanup()
        await delete_namespaces(client, namespaces)
