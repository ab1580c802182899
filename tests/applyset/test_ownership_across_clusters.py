"""An RGD instance's ApplySet across member clusters (M-15, M-16): children applied with their
cluster's client and the member clusters recorded on the parent ahead of them; a member pruned
against its own members (and forgotten once empty); teardown in reverse apply order across
clusters; an unreachable member holding deletion until `kro.run/abandon-cluster` gives it up."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from applyset_fakes import CONFIGMAPS, NS, WEBAPPS, configmap, live, seed_parent, writes

from kro.api.names import (
    ANNOTATION_ABANDON_CLUSTER,
    ANNOTATION_APPLYSET_CLUSTERS,
    ANNOTATION_DELETION_POLICY,
    DELETION_POLICY_ORPHANED,
    LABEL_APPLYSET_PART_OF,
)
from kro.applyset import Applier, Desired
from kro.engine.applyset_ownership import ApplySetOwnership
from kro.engine.ownership import PruneScope
from kro.engine.places import ClusterUnavailable, WithMembers
from kro.engine.watches import NoWatches
from kro.runtime.client import Client
from kro.testing.fakeapi import DEFAULT_RESOURCES, FakeApiServer, unthrottled_client

POSITIONS = {"a": 0, "b": 1}


class _OneMember:
    """The registry's side (`MemberClusters`) with one member, `m1`, which can be made
    unreachable; the pass reaches it through the real `WithMembers`."""

    hub = "local"

    def __init__(self, member: Client) -> None:
        self.member, self.reachable = member, True

    def client(self, cluster: str) -> Client:
        if cluster != "m1" or not self.reachable:
            raise ClusterUnavailable(cluster, "ClusterNotFound", f"cluster {cluster!r} is gone")
        return self.member


@pytest.fixture
async def member_api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(DEFAULT_RESOURCES) as server:
        yield server


@pytest.fixture
async def one_member(member_api: FakeApiServer) -> AsyncIterator[_OneMember]:
    async with unthrottled_client(member_api) as member:
        yield _OneMember(member)


@pytest.fixture
def places(client: Client, one_member: _OneMember) -> WithMembers:
    return WithMembers(client, NoWatches(), one_member)


def _ownership(applier: Applier, client: Client, places: WithMembers) -> ApplySetOwnership:
    return ApplySetOwnership(applier=applier, client=client, gvr=WEBAPPS, places=places)


def _batch(*names: str) -> list[Desired]:
    clusters = {"a": "", "b": "m1"}
    return [
        Desired(n, configmap(n, order=POSITIONS[n] + 1), CONFIGMAPS, True, cluster=clusters[n])
        for n in names
    ]


def _annotations(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


async def _pass(
    ownership: ApplySetOwnership, parent: dict[str, Any], *names: str
) -> dict[str, Any]:
    parent, resources = await ownership.apply(parent, _batch(*names))
    assert all(r.error is None for r in resources)
    parent, _ = await ownership.prune(
        parent, PruneScope(failed=False, pending=frozenset(), positions=POSITIONS)
    )
    return parent


async def test_children_land_in_their_cluster_recorded_ahead(
    api: FakeApiServer,
    member_api: FakeApiServer,
    applier: Applier,
    client: Client,
    places: WithMembers,
) -> None:
    parent = seed_parent(api)
    await _pass(_ownership(applier, client, places), parent, "a", "b")
    assert writes(api)[0].endswith(f"/namespaces/{NS}/webapps/app")  # the record comes first
    assert _annotations(live(api, WEBAPPS, "app", NS))[ANNOTATION_APPLYSET_CLUSTERS] == "m1"
    assert live(api, CONFIGMAPS, "a", NS) is not None
    assert live(api, CONFIGMAPS, "b", NS) is None
    remote = live(member_api, CONFIGMAPS, "b", NS)
    assert remote is not None
    assert LABEL_APPLYSET_PART_OF in remote["metadata"]["labels"]


async def test_a_member_is_pruned_and_then_forgotten(
    api: FakeApiServer,
    member_api: FakeApiServer,
    applier: Applier,
    client: Client,
    places: WithMembers,
) -> None:
    parent = await _pass(_ownership(applier, client, places), seed_parent(api), "a", "b")
    await _pass(_ownership(applier, client, places), parent, "a")
    assert live(member_api, CONFIGMAPS, "b", NS) is None
    assert ANNOTATION_APPLYSET_CLUSTERS not in _annotations(live(api, WEBAPPS, "app", NS))
    assert live(api, CONFIGMAPS, "a", NS) is not None


async def test_teardown_deletes_the_highest_wave_of_any_cluster_first(
    api: FakeApiServer,
    member_api: FakeApiServer,
    applier: Applier,
    client: Client,
    places: WithMembers,
) -> None:
    parent = await _pass(_ownership(applier, client, places), seed_parent(api), "a", "b")
    first = await _ownership(applier, client, places).teardown(parent)
    assert not first.done
    assert live(member_api, CONFIGMAPS, "b", NS) is None  # wave 2, in the member
    assert live(api, CONFIGMAPS, "a", NS) is not None  # wave 1 waits
    second = await _ownership(applier, client, places).teardown(parent)
    assert not second.done
    assert live(api, CONFIGMAPS, "a", NS) is None
    assert (await _ownership(applier, client, places).teardown(parent)).done


async def test_an_unreachable_member_holds_deletion_until_abandoned(
    api: FakeApiServer,
    member_api: FakeApiServer,
    applier: Applier,
    client: Client,
    one_member: _OneMember,
) -> None:
    places = WithMembers(client, NoWatches(), one_member)
    parent = await _pass(_ownership(applier, client, places), seed_parent(api), "a", "b")
    one_member.reachable = False
    blocked = await _ownership(applier, client, places).teardown(parent)
    assert not blocked.done
    assert blocked.transient
    assert '"m1"' in blocked.blocked
    assert ANNOTATION_ABANDON_CLUSTER in blocked.blocked
    assert live(api, CONFIGMAPS, "a", NS) is not None  # nothing deleted meanwhile
    parent["metadata"].setdefault("annotations", {})[ANNOTATION_ABANDON_CLUSTER] = "m1"
    step = await _ownership(applier, client, places).teardown(parent)
    assert "abandon cluster m1" in step.plan
    assert step.abandoned == (f'cluster "m1": objects of ConfigMap in {NS}',)  # reported
    assert live(api, CONFIGMAPS, "a", NS) is None
    assert (await _ownership(applier, client, places).teardown(parent)).done
    assert live(member_api, CONFIGMAPS, "b", NS) is not None  # left in place, as asked


def test_a_parent_in_a_member_has_an_applyset_of_its_own() -> None:
    """M-21: two members' same-named instances sending objects to one cluster must not claim
    each other's: the member is part of the ID; the hub's parents keep kubectl's."""
    from kro.applyset import Parent
    from kro.applyset.inventory import applyset_id

    obj = {"apiVersion": "example.kro.run/v1alpha1", "kind": "WebApp",
           "metadata": {"name": "app", "namespace": NS}}  # fmt: skip
    hub = Parent.from_object(obj, WEBAPPS)
    assert hub.id == applyset_id(name="app", namespace=NS, kind="WebApp", group="example.kro.run")
    ids = {
        hub.id,
        Parent.from_object(obj, WEBAPPS, "m1").id,
        Parent.from_object(obj, WEBAPPS, "m2").id,
    }
    assert len(ids) == 3


async def test_the_planned_step_across_clusters_names_each_member_and_sends_nothing(
    api: FakeApiServer,
    member_api: FakeApiServer,
    applier: Applier,
    client: Client,
    places: WithMembers,
) -> None:
    """`kro explain` of a deleting instance: the dry-run plan is the teardown's own step, in
    the member as on the hub (wave 2 in m1 first), and what is held says where it lives."""
    parent = await _pass(_ownership(applier, client, places), seed_parent(api), "a", "b")
    planned = await _ownership(applier, client, places).plan_teardown(parent)
    assert not planned.done
    assert planned.wave == 2
    assert planned.plan == (f"delete m1: configmaps.v1:{NS}/b",)
    assert [(h.cluster, h.obj.name, h.wave) for h in planned.held] == [("m1", "b", 2), ("", "a", 1)]
    assert live(member_api, CONFIGMAPS, "b", NS) is not None  # nothing was deleted
    taken = await _ownership(applier, client, places).teardown(parent)
    assert taken.plan == planned.plan  # the step planned is the step taken


async def test_a_release_in_a_lower_wave_cluster_deletes_nothing_there_yet(
    api: FakeApiServer,
    member_api: FakeApiServer,
    applier: Applier,
    client: Client,
    places: WithMembers,
) -> None:
    """M-16 with `deletionPolicy: Orphaned`: the hub's wave 1 waits for m1's wave 2 even when
    the hub has an object to release in this step."""
    batch = [*_batch("a", "b"), Desired("k", configmap("k", order=1), CONFIGMAPS, True)]
    ownership = _ownership(applier, client, places)
    parent, resources = await ownership.apply(seed_parent(api), batch)
    assert all(r.error is None for r in resources)
    kept = live(api, CONFIGMAPS, "k", NS)
    assert kept is not None
    await client.patch(
        CONFIGMAPS,
        "k",
        {"metadata": {"annotations": {ANNOTATION_DELETION_POLICY: DELETION_POLICY_ORPHANED}}},
        namespace=NS,
    )
    step = await _ownership(applier, client, places).teardown(parent)
    assert live(member_api, CONFIGMAPS, "b", NS) is None  # wave 2, in the member
    assert live(api, CONFIGMAPS, "a", NS) is not None  # wave 1 waits, though k is released
    assert set(step.plan) == {f"release configmaps.v1:{NS}/k", f"delete m1: configmaps.v1:{NS}/b"}
