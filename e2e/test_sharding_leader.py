"""With `kro controller --shards=auto`, RGDs, GraphRevisions and CRDs are handled by the one
leader, on the real control plane: three replicas share the instances, exactly one of them (the
holder of the leader Lease) issues GraphRevisions, applies CRDs and writes RGD status, the others
follow (they compile the leader's revisions and register the kinds, writing nothing) and still
reconcile the instances of their own namespaces; after kill -9 of the leader another replica
takes the Lease without restarting, and an RGD created after the kill gets its CRD, becomes
Active and has its instances converge, in every namespace.

Who wrote what comes from each replica's log: `rgd.revision_issued` (a GraphRevision created),
`crd.created`, `rgd.status_updated` (an RGD status write) are logged only by the leader path
(kro.controllers.leadership); a follower logs `graphrevision.active` with `follower=True`.
Reconcile traces (`shard.reconcile_start`, KRO_SHARD_TRACE_RECONCILES=1) tell who reconciled
each instance.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kro_harness import KroEnv, wait_for
from sharding_fixtures import (
    all_ready,
    create_namespaces,
    delete_namespaces,
    events_about,
    leaders,
    member_lease,
    metric,
    scrape,
    settled,
    sharding_fixtures,
    spread_namespaces,
)

from kro.runtime import GVR
from kro.runtime.sharding import assign, contains, fnv1a64
from kro.testing.kroprocess import KroProcess

spawn, kro = sharding_fixtures()

LEADER_WRITES = ("rgd.revision_issued", "crd.created", "rgd.status_updated")
"""Log events only the leader path emits, each for a write of an RGD, a GraphRevision or a CRD."""


def owner_of(namespace: str, leases: Mapping[str, str]) -> str:
    """The replica whose range (in the assignment of `leases`, replica -> member Lease)
    holds `namespace`."""
    ranges = assign(leases.values())
    return next(n for n, lease in leases.items() if contains((ranges[lease],), fnv1a64(namespace)))


def writers(
    replicas: dict[str, KroProcess], rgd: str, marks: dict[str, int]
) -> dict[str, set[str]]:
    """Leader-only write events per replica about `rgd` (since `marks`)."""
    return {
        n: {e for e in LEADER_WRITES if events_about(p, e, rgd, since=marks.get(n, 0))}
        for n, p in replicas.items()
    }


async def test_one_leader_writes_rgds_revisions_and_crds_and_fails_over(
    kro: KroEnv, spawn: Any, kube_namespace: str
) -> None:
    client = kro.client
    replicas: dict[str, KroProcess] = {name: spawn(name) for name in ("r0", "r1", "r2")}
    leases = {n: member_lease(p) for n, p in replicas.items()}
    await settled(replicas.values())
    leader = (await wait_for(_one_leader(replicas), what="one leader", timeout_s=60))[0]
    followers = [n for n in replicas if n != leader]
    namespaces = spread_namespaces(kube_namespace, leases.values(), per_range=2)
    await create_namespaces(client, namespaces)
    try:
        # -- one RGD: written by the leader only, served by all ------------------------------
        first = kro.value_rgd("led", "Led")
        first_name = str(first["metadata"]["name"])
        await kro.apply_rgd(first)
        await kro.wait_rgd_active(first_name)
        gvr = await kro.gvr_of("Led")
        names = [(ns, f"i-{i}") for i, ns in enumerate(namespaces)]
        for ns, name in names:
            await kro.apply_instance("Led", name, {"value": "a"}, namespace=ns)
        await wait_for(
            lambda: all_ready(client, gvr, names), what="every instance ACTIVE", timeout_s=180
        )
        wrote = writers(replicas, first_name, {})
        assert wrote[leader] == set(LEADER_WRITES), wrote
        assert all(wrote[n] == set() for n in followers), wrote
        for n in followers:
            compiled = events_about(replicas[n], "graphrevision.active", first_name)
            assert compiled, f"{n} did not compile the leader's revision"
            assert all(r.get("follower") is True for r in compiled), compiled
            assert events_about(replicas[n], "rgd.serving", first_name), f"{n} serves nothing"
        # Instances in the followers' namespaces were reconciled by those followers. (That
        # nobody else did is test_sharding's to check.)
        for ns, name in names:
            owner = owner_of(ns, leases)
            reconciled_by = {
                n
                for n, p in replicas.items()
                if any(r.get("ns") == ns for r in p.find("shard.reconcile_start"))
            }
            assert owner in reconciled_by, (ns, name, owner, reconciled_by)
        assert {owner_of(ns, leases) for ns in namespaces} == set(replicas)

        # Metrics: one replica leads; together they own every instance once.
        async def metrics_agree() -> bool:
            scraped = {n: scrape(p) for n, p in replicas.items()}
            owned = sum(metric(text, "kro_shard_owned_instances") or 0 for text in scraped.values())
            leading = {n for n, text in scraped.items() if metric(text, LEADER_SERIES) == 1}
            return owned == len(names) and leading == {leader}

        await wait_for(metrics_agree, what="owned instances and leader on /metrics", timeout_s=30)

        # -- kill -9 the leader: another replica takes the Lease, without a restart ------------
        marks = {n: p.offset() for n, p in replicas.items()}
        pids = {n: p.pid for n, p in replicas.items()}
        replicas[leader].kill9()
        second = kro.value_rgd("after", "After")
        second_name = str(second["metadata"]["name"])
        await kro.apply_rgd(second)
        survivors = {n: replicas[n] for n in followers}
        promoted = await wait_for(_one_leader(survivors, marks), what="a new leader", timeout_s=90)
        new_leader = promoted[0]
        assert survivors[new_leader].alive()
        assert survivors[new_leader].pid == pids[new_leader]  # the same process
        await kro.wait_rgd_active(second_name)
        wrote = writers(survivors, second_name, marks)
        assert wrote[new_leader] == set(LEADER_WRITES), wrote
        assert all(wrote[n] == set() for n in survivors if n != new_leader), wrote

        gvr_after = await kro.gvr_of("After")
        # Every namespace, the dead leader's included (other names: one ConfigMap each).
        after = [(ns, f"j-{i}") for i, ns in enumerate(namespaces)]
        for ns, name in after:
            await kro.apply_instance("After", name, {"value": "b"}, namespace=ns)
        await wait_for(
            lambda: all_ready(client, gvr_after, after),
            what="every instance of the RGD created after the kill ACTIVE",
            timeout_s=180,
        )
        # And the first RGD's instances, everywhere, still follow their spec.
        for ns, name in names:
            await kro.apply_instance("Led", name, {"value": "c"}, namespace=ns)

        async def updated() -> bool:
            for ns, name in names:
                cm = await client.get(GVR("", "v1", "configmaps"), f"{name}-config", namespace=ns)
                if (cm.get("data") or {}).get("value") != "c":
                    return False
            return True

        await wait_for(updated, what="every ConfigMap of the first RGD updated", timeout_s=120)
        # Every survivor kept reconciling instances across the change of leader.
        for n, p in survivors.items():
            assert p.find("shard.reconcile_start", since=marks[n]), f"{n} reconciled nothing"
    finally:
        await kro.cleanup()
        await delete_namespaces(client, namespaces)


LEADER_SERIES = 'leader_election_master_status{name="controller.kro.run"}'


def _one_leader(
    replicas: dict[str, KroProcess], since: dict[str, int] | None = None
) -> Callable[[], Awaitable[list[str] | None]]:
    """A probe: the list of replicas that won the Lease (since `since`), once there is one;
    more than one at once fails the test."""

    async def probe() -> list[str] | None:
        found = leaders(replicas, since)
        assert len(found) <= 1, f"two leaders: {found}"
        return found or None

    return probe
