"""Three `kro controller --shards=auto` replicas on a control plane WITHOUT ShardedListAndWatch:
the API server ignores `shardSelector` and sends every replica every instance, so each replica
filters on the client with the same FNV-1a hash (docs/sharding.md, "Fallback").

The module runs its own control plane (`kube_cluster` and `kube_namespace` below replace the
session's, whose kube-apiserver has the gate on), stopped when the module ends. The core suite
of e2e/test_sharding.py holds here too: the replicas share the instances, every instance
converges, none is reconciled by two replicas at once, once settled each replica reconciles
only its range, and kill -9 moves the killed replica's range. On top: each replica says once
in its log that it fell back and reports it on /metrics, and its instance cache holds only its
range (the informer's relist after the kill counts exactly the instances of its new range), and
so does its cache of the instances' ConfigMaps (children in the instance's namespace are
watched through the sharded informer too).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from kro_harness import KroEnv
from sharding_fixtures import (
    CONFIGMAPS_GVR,
    REPLICAS,
    Key,
    apply_all,
    assert_no_overlap,
    cached,
    caches_only,
    converge,
    create_namespaces,
    delete_namespaces,
    install_sharded_rgd,
    member_lease,
    metric,
    objects_in_range,
    scrape,
    settled,
    sharding_fixtures,
    spread_namespaces,
    update_within_ranges,
    wait_all_ready,
    whole_kind_lists,
)

from kro.runtime.sharding import Range, assign, contains, fnv1a64
from kro.testing.adminapi import AdminApi
from kro.testing.cluster import ClusterOptions
from kro.testing.pytest_plugin import ClusterHandle, create_namespace, private_cluster

GATE_OFF = (("ShardedListAndWatch", False),)
PER_RANGE = 2  # namespaces per range of the three-replica assignment
INSTANCES = 24


@pytest.fixture(scope="module")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """This module's control plane: kube-apiserver with ShardedListAndWatch off, no nodes."""
    run_dir = tmp_path_factory.mktemp("gate-off-cluster")
    options = ClusterOptions(nodes=0, feature_gates=GATE_OFF)
    with private_cluster(run_dir, options) as (cluster, state):
        yield ClusterHandle(
            kubeconfig=Path(state.kubeconfig),
            server=state.server,
            owned=True,
            run_dir=cluster.run_dir,
        )


@pytest.fixture
def kube_namespace(kube_cluster: ClusterHandle) -> Iterator[str]:
    """A settled namespace of this module's cluster for the test (the replicas' Leases)."""
    admin = AdminApi.from_kubeconfig(kube_cluster.kubeconfig)
    name = f"kro-test-{secrets.token_hex(4)}"
    create_namespace(admin, name)
    try:
        yield name
    finally:
        admin.delete(f"/api/v1/namespaces/{name}")


spawn, kro = sharding_fixtures()


def in_range(names: Sequence[Key], owned: Range) -> int:
    return sum(1 for ns, _ in names if contains((owned,), fnv1a64(ns)))


async def test_without_the_gate_replicas_filter_on_the_client(
    kro: KroEnv, spawn: Any, kube_namespace: str
) -> None:
    client = kro.client
    replicas = {name: spawn(name) for name in REPLICAS}
    leases = {name: member_lease(process) for name, process in replicas.items()}
    namespaces = spread_namespaces(kube_namespace, leases.values(), PER_RANGE)
    await create_namespaces(client, namespaces)
    try:
        gvr = await install_sharded_rgd(kro)
        names = [(namespaces[i % len(namespaces)], f"i{i}") for i in range(INSTANCES)]
        await apply_all(kro, names, "a")
        await wait_all_ready(client, gvr, names, replicas)
        assert assert_no_overlap(replicas) >= INSTANCES

        # Settled: each replica reconciles only its range, although it receives everything.
        await settled(replicas.values())
        per_replica = await update_within_ranges(kro, names, "b", replicas, leases)
        print(f"reconciles per replica after settling: {per_replica}")

        # The fallback: said once per replica, and on /metrics.
        for name, process in replicas.items():
            said = process.find("shard.fallback_client_filter")
            assert len(said) == 1, f"{name} said {len(said)} times that it filters locally"
            assert metric(scrape(process), "kro_shard_fallback_mode") == 1, name

        # kill -9: the range moves, and each survivor caches exactly its new range.
        marks = {name: process.offset() for name, process in replicas.items()}
        replicas["r1"].kill9()
        survivors = {name: replicas[name] for name in ("r0", "r2")}
        await apply_all(kro, names, "c")
        moved_s = await converge(kro, names, "c", "every ConfigMap converged after the kill")
        print(f"converged {moved_s:.1f}s after the last update and kill -9 of r1")
        assert_no_overlap(replicas)
        await settled(survivors.values())
        final = assign(leases[name] for name in survivors)
        for name, process in survivors.items():
            owned = final[leases[name]]

            async def instances(owned: Range = owned) -> int:
                return in_range(names, owned)

            async def configmaps(owned: Range = owned) -> int:
                return await objects_in_range(client, CONFIGMAPS_GVR, owned)

            await caches_only(process, gvr, marks[name], instances)
            # The children too: the ConfigMaps of the range only, and no whole-kind cache.
            if cached(process, CONFIGMAPS_GVR, 0) is not None or await instances():
                # (a replica that never reconciled an instance watches no ConfigMap)
                await caches_only(process, CONFIGMAPS_GVR, marks[name], configmaps)
            assert not whole_kind_lists(process, CONFIGMAPS_GVR), name
    finally:
        await kro.cleanup()
        await delete_namespaces(client, namespaces)
