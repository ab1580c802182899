"""Scale out (M-23): with `--shards=auto` and `--enable-multicluster`, the member clusters are
spread over the replicas, one replica reconciles a member at a time, and a member moves to a
survivor when its replica is killed (`kill -9`), fenced as a namespace's handover is.

Two replicas, r0 and r1, on the session hub; member-1 and member-2 each hold an instance of one
RGD. Who owns a member is computed here from the replicas' member Leases and the members' hash
(`spread_hash`, kro.runtime.sharding), never taken from kro's output: each member's instance must
be reconciled by exactly that replica, the two members by different replicas (the point of
M-23), and never by two at once (the reconcile trace, `KRO_SHARD_TRACE_RECONCILES=1`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fleet_support import MEMBERS, REGISTRY, fleet_fixture, members_fixture
from kro_harness import KroEnv, process_fixtures
from sharding_fixtures import assert_no_overlap, member_lease, metric, scrape, settled

from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.runtime.sharding import TRACE_ENV, assign, contains, spread_hash
from kro.testing.kroprocess import KroProcess
from kro.testing.waiting import eventually

spawn, kro = process_fixtures(
    "--shards=auto",
    "--feature-gates=MultiCluster=true",
    f"--cluster-secrets-namespace={REGISTRY}",
    "--enable-multicluster",
    "--allow-crd-deletion",
    env={TRACE_ENV: "1"},
)
fleet = fleet_fixture()
CONFIGMAPS = GVR("", "v1", "configmaps")
TIMEOUT_S = 90.0


members = members_fixture()


def _owners(replicas: dict[str, KroProcess]) -> dict[str, str]:
    """member -> the replica whose range holds its point, per the replicas' Leases."""
    leases = {member_lease(p): name for name, p in replicas.items()}
    ranges = assign(leases)
    return {
        m: next(leases[lease] for lease, r in ranges.items() if contains([r], spread_hash(m)))
        for m in MEMBERS
    }


def _reconciled(process: KroProcess, since: int = 0) -> set[str]:
    """The member clusters whose instances `process` reconciled (its reconcile trace)."""
    return {
        str(r["cluster"])
        for r in process.find("shard.reconcile_start", since=since)
        if "cluster" in r
    }


async def test_members_are_spread_over_replicas_and_move_when_one_dies(
    kro: KroEnv, spawn: Any, members: dict[str, Client]
) -> None:
    replicas = {name: spawn(name) for name in ("r0", "r1")}
    owners = _owners(replicas)
    assert len(set(owners.values())) == 2, owners  # the members' hash splits these two
    await settled(replicas.values())
    marks = {name: process.offset() for name, process in replicas.items()}
    try:
        spec = {"color": "string"}
        child = {
            "id": "settings",
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "${schema.metadata.name}-settings"},
                "data": {"color": "${schema.spec.color}"},
            },
        }
        await kro.apply_rgd(kro.rgd("sharded-fleet", "ShardedFleet", spec, [child]))
        await kro.wait_rgd_active(kro.rgd_name("sharded-fleet"))
        gvr = await kro.gvr_of("ShardedFleet")

        async def served_everywhere() -> bool:
            clusters = ((await kro.get_rgd(kro.rgd_name("sharded-fleet"))).get("status") or {}).get(
                "clusters"
            ) or []
            return {c["name"] for c in clusters if c.get("kindReady")} >= set(MEMBERS)

        await eventually(served_everywhere, what="the kind in both members", timeout_s=TIMEOUT_S)

        async def colored(member: str, color: str) -> bool:
            try:
                cm = await members[member].get(CONFIGMAPS, "one-settings", namespace=kro.namespace)
            except NotFound:
                return False
            return (cm.get("data") or {}).get("color") == color

        for client in members.values():
            body = {
                "apiVersion": f"{gvr.group}/{gvr.version}",
                "kind": "ShardedFleet",
                "metadata": {"name": "one", "namespace": kro.namespace},
                "spec": {"color": "blue"},
            }
            await client.create(gvr, body, namespace=kro.namespace)
        for member in MEMBERS:
            await eventually(
                lambda m=member: colored(m, "blue"), what=f"{member} converged", timeout_s=TIMEOUT_S
            )
        for name, process in replicas.items():  # each member by its owner alone
            assert _reconciled(process, since=marks[name]) == {
                m for m, o in owners.items() if o == name
            }, name
            owned = metric(await asyncio.to_thread(scrape, process), "kro_shard_owned_instances")
            assert owned is not None, name
            assert owned >= 1, name  # its member's instance, counted as the replica's own

        moving = "member-1"
        dead = owners[moving]
        survivor = next(name for name in replicas if name != dead)
        mark = replicas[survivor].offset()
        replicas[dead].kill9()
        await members[moving].patch(
            gvr, "one", {"spec": {"color": "green"}}, namespace=kro.namespace
        )
        await eventually(
            lambda: colored(moving, "green"),
            what=f"{moving} served by {survivor}",
            timeout_s=TIMEOUT_S,
        )
        assert moving in _reconciled(replicas[survivor], since=mark)
        assert assert_no_overlap(replicas) > 0
        for client in members.values():
            await client.delete(gvr, "one", namespace=kro.namespace)
        for member in MEMBERS:

            async def gone(member: str = member) -> bool:
                try:
                    await members[member].get(CONFIGMAPS, "one-settings", namespace=kro.namespace)
                except NotFound:
                    return True
                return False

            await eventually(gone, what=f"the child deleted in {member}", timeout_s=TIMEOUT_S)
    finally:
        await kro.cleanup()  # the RGD goes while a replica runs: no kind left to others
