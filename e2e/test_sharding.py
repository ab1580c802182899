"""Three `kro controller --shards=auto` replicas share the instances, on the real control plane
(kube-apiserver with ShardedListAndWatch, as the local cluster starts it).

INSTANCES in NAMESPACES, so that the kill -9 handover stays quick on two cores; the issue's
scale, 300 instances in 30 namespaces, is test_sharding_300.py (no kill there: caches and
requests per replica once settled). Namespace names carry a random suffix: FNV-1a of names that
differ only in their last characters lands in one narrow band of the hash space (see
docs/sharding.md), so `ns-0`…`ns-9` would all fall to one replica.

Each replica logs `shard.reconcile_start`/`shard.reconcile_end` (KRO_SHARD_TRACE_RECONCILES=1);
the test checks that no instance is ever reconciled by two replicas at once and that, once the
view is settled, each replica reconciles only namespaces in its range; after the kill, each
survivor's caches of the instances and of their ConfigMaps hold exactly its new range.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kro_harness import KroEnv, wait_for
from sharding_fixtures import (
    CONFIGMAPS_GVR,
    REPLICAS,
    assert_no_overlap,
    cached,
    caches_only,
    children_hold,
    delete_namespaces,
    objects_in_range,
    random_namespaces,
    settled,
    sharded_rgd,
    sharding_fixtures,
    wait_all_ready,
    whole_kind_lists,
)

from kro.runtime.sharding import Range, assign, contains, fnv1a64

NAMESPACES = 6
INSTANCES = 24

spawn, kro = sharding_fixtures()


async def test_three_replicas_share_instances_and_survive_a_kill(
    kro: KroEnv, spawn: Any, kube_namespace: str
) -> None:
    client = kro.client
    namespaces = await random_namespaces(client, kube_namespace, NAMESPACES)
    replicas = {name: spawn(name) for name in REPLICAS}
    definition = sharded_rgd(kro)
    try:
        await kro.apply_rgd(definition)
        await kro.wait_rgd_active(definition["metadata"]["name"])
        gvr = await kro.gvr_of("Sharded")
        names = [(namespaces[i % NAMESPACES], f"i{i}") for i in range(INSTANCES)]
        for ns, name in names:
            await kro.apply_instance("Sharded", name, {"value": "a"}, namespace=ns)

        await wait_all_ready(client, gvr, names, replicas)
        reconciled = assert_no_overlap(replicas)
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
        marks = {n: p.offset() for n, p in replicas.items()}
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
        assert_no_overlap(replicas)

        # Each survivor's caches, instances and their ConfigMaps alike, hold its range only.
        survivors = {n: p for n, p in replicas.items() if n != victim}
        await settled(survivors.values())
        final = assign(identities[n] for n in survivors)
        for n, p in survivors.items():
            owned = final[identities[n]]

            async def instances(owned: Range = owned) -> int:
                return sum(1 for ns, _ in names if contains((owned,), fnv1a64(ns)))

            async def configmaps(owned: Range = owned) -> int:
                return await objects_in_range(client, CONFIGMAPS_GVR, owned)

            await caches_only(p, gvr, marks[n], instances)
            if cached(p, CONFIGMAPS_GVR, 0) is not None or await instances():
                # (a replica that never reconciled an instance watches no ConfigMap)
                await caches_only(p, CONFIGMAPS_GVR, marks[n], configmaps)
            assert not whole_kind_lists(p, CONFIGMAPS_GVR), n
    finally:
        await kro.cleanup()
        await delete_namespaces(client, namespaces)
