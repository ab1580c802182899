"""The issue's scale: three `kro controller --shards=auto` replicas, 300 instances in 30
namespaces, on the real control plane (kube-apiserver with ShardedListAndWatch).

Once the replicas have settled on one view and serve the kind, the instances are created (16 at
a time) and must all become ACTIVE with no instance ever reconciled by two replicas at once.
Then, for each replica:

* its caches hold exactly its range: `kro_shard_owned_instances` equals the instances the API
  server holds in the replica's range of the assignment, and `kro_informer_cached_objects`
  of its sharded informers equals the objects in that range of every kind they cache (the
  instances and their ConfigMaps); no ConfigMap informer lists every namespace;
* its API requests are roughly its share of the work. "Roughly" is defined by the assignment:
  FNV-1a ranges of random namespace names do not hold equal numbers of instances, so a
  replica's share of the requests all three sent (rest_client_requests_total on its /metrics,
  from when they had settled to when every instance was ACTIVE) must be within 0.12 of its
  share of the instances, counted from the namespaces' hashes. Each replica also renews its
  Leases and watches the RGDs meanwhile, which pulls the shares towards a third.

Namespace names carry a random suffix; names that differ only in their last characters would
fall to one replica (see test_sharding.py, which adds a kill -9 at a smaller scale).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from kro_harness import KroEnv, wait_for
from sharding_fixtures import (
    CONFIGMAPS_GVR,
    KIND,
    REPLICAS,
    Key,
    assert_no_overlap,
    delete_namespaces,
    install_sharded_rgd,
    member_lease,
    metric,
    metric_sum,
    random_namespaces,
    scrape,
    settled,
    sharding_fixtures,
    wait_all_ready,
    whole_kind_lists,
)

from kro.runtime import GVR, Client
from kro.runtime.sharding import Range, assign, contains, fnv1a64, namespace_of
from kro.testing.kroprocess import KroProcess

NAMESPACES = 30
INSTANCES = 300
CONCURRENT_CREATES = 16
SHARE_TOLERANCE = 0.12
"""How far a replica's share of the requests may be from its share of the instances."""

spawn, kro = sharding_fixtures()


async def create_instances(kro: KroEnv, names: Sequence[Key]) -> None:
    limit = asyncio.Semaphore(CONCURRENT_CREATES)

    async def one(ns: str, name: str) -> None:
        async with limit:
            await kro.apply_instance(KIND, name, {"value": "a"}, namespace=ns)

    await asyncio.gather(*(one(ns, name) for ns, name in names))


async def requests_sent(replicas: Mapping[str, KroProcess]) -> dict[str, float]:
    """rest_client_requests_total of each replica, all codes, methods and hosts."""
    return {
        name: metric_sum(await asyncio.to_thread(scrape, process), "rest_client_requests_total")
        for name, process in replicas.items()
    }


def sharded_gvrs(process: KroProcess) -> set[str]:
    """The GVRs the replica's sharded informers listed (per their `informer.listed` records)."""
    return {str(r["gvr"]) for r in process.find("informer.listed") if r.get("sharded") is True}


def in_range(items: Sequence[dict[str, Any]], owned: Range) -> int:
    return sum(1 for item in items if contains((owned,), fnv1a64(namespace_of(item))))


def serves(process: KroProcess, gvr: GVR) -> bool:
    return any(r.get("gvr") == str(gvr) for r in process.find("rgd.serving"))


async def caches_hold_their_ranges(
    client: Client,
    replicas: Mapping[str, KroProcess],
    ranges: Mapping[str, Range],
    instances: GVR,
    kinds: Sequence[GVR],
) -> dict[str, tuple[float | None, int, float | None, int]]:
    """Wait until each replica's sharded caches hold exactly the objects the API server has in
    its range: of the instances (`kro_shard_owned_instances`) and, in all, of every kind of
    `kinds` its sharded informers listed (`kro_informer_cached_objects{sharded="true"}`).
    Returns (cached, in range) per replica, the instances and every kind in all."""
    seen: dict[str, tuple[float | None, int, float | None, int]] = {}

    async def probe() -> bool:
        objects = {str(gvr): (await client.list_all(gvr))[0] for gvr in kinds}
        for name, process in replicas.items():
            text = await asyncio.to_thread(scrape, process)
            owned = ranges[name]
            listed = sharded_gvrs(process) & objects.keys()
            seen[name] = (
                metric(text, "kro_shard_owned_instances"),
                in_range(objects[str(instances)], owned),
                metric(text, 'kro_informer_cached_objects{sharded="true"}'),
                sum(in_range(objects[gvr], owned) for gvr in listed),
            )
        return all(a == b and c == d for a, b, c, d in seen.values())

    try:
        await wait_for(probe, what="each replica's caches holding exactly its range")
    except AssertionError as error:
        raise AssertionError(
            f"{error}; (instances cached, in range, all cached, in range) per replica: {seen}"
        ) from None
    return seen


async def test_three_replicas_share_300_instances_in_30_namespaces(
    kro: KroEnv, spawn: Any, kube_namespace: str
) -> None:
    client = kro.client
    namespaces = await random_namespaces(client, kube_namespace, NAMESPACES)
    replicas = {name: spawn(name) for name in REPLICAS}
    try:
        leases = {name: member_lease(process) for name, process in replicas.items()}
        assignment = assign(leases.values())
        ranges = {name: assignment[lease] for name, lease in leases.items()}
        gvr = await install_sharded_rgd(kro)
        for process in replicas.values():
            await asyncio.to_thread(
                process.wait, functools.partial(serves, process, gvr), 120, f"serving {gvr}"
            )
        await settled(replicas.values())
        before = await requests_sent(replicas)

        names = [(namespaces[i % NAMESPACES], f"i{i}") for i in range(INSTANCES)]
        began = asyncio.get_running_loop().time()
        await create_instances(kro, names)
        await wait_all_ready(client, gvr, names, replicas, timeout_s=240)
        active_s = asyncio.get_running_loop().time() - began
        after = await requests_sent(replicas)
        reconciles = assert_no_overlap(replicas)
        assert reconciles >= INSTANCES

        caches = await caches_hold_their_ranges(
            client, replicas, ranges, gvr, [gvr, CONFIGMAPS_GVR]
        )
        mine = {
            name: sum(1 for ns, _ in names if contains((owned,), fnv1a64(ns)))
            for name, owned in ranges.items()
        }
        for name, process in replicas.items():
            # Every sharded cache was counted above; the ConfigMaps' lists only their range.
            # (A replica that never reconciled an instance watches no ConfigMap.)
            kinds = {str(gvr), str(CONFIGMAPS_GVR)} if mine[name] else {str(gvr)}
            assert sharded_gvrs(process) == kinds, name
            assert not whole_kind_lists(process, CONFIGMAPS_GVR), name

        sent = {name: after[name] - before[name] for name in replicas}
        print(f"\nall ACTIVE {active_s:.1f}s after the first create; {reconciles} reconciles")
        print("replica  instances  share  requests  share  (instances cached, in range, all...)")
        for name in replicas:
            print(
                f"{name:7}  {mine[name]:9}  {mine[name] / INSTANCES:5.2f}  {sent[name]:8.0f}"
                f"  {sent[name] / sum(sent.values()):5.2f}  {caches[name]}"
            )
        for name in replicas:
            share_requests = sent[name] / sum(sent.values())
            share_instances = mine[name] / INSTANCES
            assert abs(share_requests - share_instances) <= SHARE_TOLERANCE, (
                f"{name}: {share_requests:.2f} of the requests, {share_instances:.2f} of the "
                "instances"
            )
    finally:
        await kro.cleanup()
        await delete_namespaces(client, namespaces)
