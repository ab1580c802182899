"""`kro explain` names the sharded replica that owns an instance (kro.cli.explain_cluster).

The member Leases here are written by real `ShardMembership`s (kro.runtime.sharding) over an
in-memory Lease API, so the owner explain names is checked against what the replicas' own views
say they own, not against a second copy of the assignment.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kro.cli.explain_cluster import read_shard_owners, shard_owners
from kro.cli.explain_format import SecretMask, render
from kro.cli.explain_report import InstanceReport
from kro.runtime.clock import FakeClock
from kro.runtime.errors import Forbidden
from kro.runtime.sharding import ShardingConfig, ShardMembership, ShardView
from kro.testing.leases import FakeLeases

EPOCH = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
NAMESPACES = [f"team-{i:x}{i * 7919:x}" for i in range(60)]


Leases = FakeLeases


class Replicas:
    """Sharded replicas of one group, on one fake clock that also drives their wall clock."""

    def __init__(self, api: Leases, names: tuple[str, ...]) -> None:
        self.api, self.clock = api, FakeClock()
        self.members = [self.member(name) for name in names]

    def now(self) -> datetime:
        return EPOCH + timedelta(seconds=self.clock.now())

    def member(self, name: str) -> ShardMembership:
        config = ShardingConfig(identity=name, namespace="kro-system")
        view = ShardView(identity=config.identity)
        return ShardMembership(self.api, config, view, clock=self.clock, wall=self.now)

    async def rounds(self, n: int, members: list[ShardMembership] | None = None) -> None:
        for _ in range(n):
            for member in self.members if members is None else members:
                await member.step()
            self.clock.jump(2.0)

    def owner(self, namespace: str) -> ShardMembership:
        (owner,) = [m for m in self.members if m.view.owns(namespace)]
        return owner


async def test_the_owner_is_the_replica_whose_view_owns_the_namespace() -> None:
    api = Leases()
    # Identities sort otherwise than their Lease names: the assignment sorts the Lease names.
    replicas = Replicas(api, ("Zeta", "alpha", "Mid_1"))
    await replicas.rounds(6)
    for namespace in NAMESPACES:
        (report,) = shard_owners(namespace, api.leases(), replicas.now())
        owner = replicas.owner(namespace)
        assert (report.owner, report.owner_lease) == (owner.config.identity, owner.name)
        assert report.members == ("kro-shard-alpha", "kro-shard-mid-1", "kro-shard-zeta")
        assert not report.handover
        assert (report.group, report.lease_namespace) == ("kro", "kro-system")
    owners = {shard_owners(ns, api.leases(), replicas.now())[0].owner for ns in NAMESPACES}
    assert owners == {"Zeta", "alpha", "Mid_1"}


async def test_a_joining_replica_is_named_and_the_handover_said() -> None:
    api = Leases()
    replicas = Replicas(api, ("a", "b"))
    await replicas.rounds(6)
    joining = replicas.member("c")
    await joining.step()  # its Lease exists and acknowledges the new view; a and b have not
    reports = [shard_owners(ns, api.leases(), replicas.now())[0] for ns in NAMESPACES]
    assert all(r.handover and len(r.members) == 3 for r in reports)
    assert "c" in {r.owner for r in reports}
    replicas.members.append(joining)
    await replicas.rounds(3)
    for namespace in NAMESPACES:
        (report,) = shard_owners(namespace, api.leases(), replicas.now())
        assert not report.handover
        assert report.owner == replicas.owner(namespace).config.identity


async def test_a_killed_replica_stops_counting_after_its_lease_duration() -> None:
    api = Leases()
    replicas = Replicas(api, ("a", "b", "c"))
    await replicas.rounds(6)
    survivors = [m for m in replicas.members if m.config.identity != "b"]
    await replicas.rounds(12, survivors)  # b is gone: 24 s without a renewal (duration 15 s)
    replicas.members = survivors
    for namespace in NAMESPACES:
        (report,) = shard_owners(namespace, api.leases(), replicas.now())
        assert report.expired == ("kro-shard-b",)
        assert report.owner == replicas.owner(namespace).config.identity


async def test_no_live_member_is_said_and_printed() -> None:
    api = Leases()
    replicas = Replicas(api, ("a", "b"))
    await replicas.rounds(2)
    later = replicas.now() + timedelta(minutes=5)
    (report,) = shard_owners("team", api.leases(), later)
    assert (report.owner, report.owner_lease, report.members) == ("", "", ())
    assert report.expired == ("kro-shard-a", "kro-shard-b")
    text = render(instance(report), "text", SecretMask())
    assert (
        'Shard:     no live replica owns namespace "team": every member Lease of shard group '
        '"kro" in namespace kro-system has expired (kro-shard-a, kro-shard-b)'
    ) in text


def lease(name: str, namespace: str, group: str | None, holder: str = "x") -> dict[str, Any]:
    labels = {"kro.run/shard-group": group} if group else {}
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "renewTime": EPOCH.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }


def test_groups_are_reported_apart_and_other_leases_ignored() -> None:
    leases = [
        lease("controller.kro.run", "kro-system", None),  # the leader Lease: no group label
        lease("kro-shard-a", "kro-system", "kro", holder="a"),
        lease("kro-shard-b", "kro-system", "kro", holder="b"),
        lease("kro-shard-z", "other", "kro", holder="z"),
    ]
    reports = shard_owners("team", leases, EPOCH + timedelta(seconds=1))
    assert [(r.lease_namespace, r.members) for r in reports] == [
        ("kro-system", ("kro-shard-a", "kro-shard-b")),
        ("other", ("kro-shard-z",)),
    ]
    assert reports[1].owner == "z"
    assert all(r.handover for r in reports)  # nobody wrote a view id: never settled


def test_a_lease_without_holder_or_renewal_is_not_live() -> None:
    released = lease("kro-shard-a", "kro-system", "kro", holder="")
    unrenewed = lease("kro-shard-b", "kro-system", "kro")
    del unrenewed["spec"]["renewTime"]
    (report,) = shard_owners("team", [released, unrenewed], EPOCH)
    assert report.members == ()
    assert report.expired == ("kro-shard-a", "kro-shard-b")


async def test_leases_are_listed_by_the_group_label_and_forbidden_means_silence() -> None:
    api = Leases()
    replicas = Replicas(api, ("a",))
    await replicas.rounds(2)
    (report,) = await read_shard_owners(api, "team", now=replicas.now())
    assert report.owner == "a"
    assert api.selectors == ["kro.run/shard-group"]

    class Viewer:
        async def list_all(
            self, gvr: Any, *, label_selector: str | None = None
        ) -> tuple[list[dict[str, Any]], str]:
            raise Forbidden(status=403, reason="Forbidden", message="leases is forbidden")

    assert await read_shard_owners(Viewer(), "team") == ()


def instance(*shards: Any, namespace: str = "team") -> InstanceReport:
    return InstanceReport(
        root_cause="no problem found",
        api_version="kro.run/v1alpha1",
        kind="Demo",
        namespace=namespace,
        name="d",
        state="ACTIVE",
        generation=1,
        source=None,
        shards=shards,
    )


async def test_text_and_json_name_the_owner() -> None:
    api = Leases()
    replicas = Replicas(api, ("a", "b"))
    await replicas.rounds(6)
    (report,) = shard_owners("", api.leases(), replicas.now())  # a cluster-scoped instance
    owner = replicas.owner("")
    text = render(instance(report, namespace=""), "text", SecretMask())
    line = next(line for line in text.splitlines() if line.startswith("Shard:"))
    assert line.startswith(
        f"Shard:     replica {owner.config.identity} owns cluster-scoped instances "
        "(the empty namespace) (hash 0xcbf29ce484222325 in "
    )
    assert f"member Lease {owner.name}, one of 2 live in shard group" in line
    data = json.loads(render(instance(report), "json", SecretMask()))
    (shard,) = data["shards"]
    assert shard["owner"] == owner.config.identity
    assert shard["ownerLease"] == owner.name
    assert shard["namespaceHash"] == "0xcbf29ce484222325"
    assert shard["handover"] is False


def test_an_unsharded_cluster_prints_no_shard_line() -> None:
    text = render(instance(), "text", SecretMask())
    assert "Shard:" not in text
    assert json.loads(render(instance(), "json", SecretMask()))["shards"] == []
