"""Hub and spokes on real control planes: RGDs on the hub, instances in the members (M-20..M-22).

* M-20: an RGD's CRD is installed in every member; `kro.run/distribute: "false"` keeps one on the
  hub; the RGD's `status.clusters[]` says per member whether its kind is served; deleting the
  RGD (under `--allow-crd-deletion`, as this suite runs) removes the member CRDs too.
* M-21: the same instance name in two members is two instances, each reconciled in its member:
  children there, status written there, finalizer there; the hub holds none of it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fleet_support import MEMBERS, fleet_args, fleet_fixture, members_fixture
from kro_harness import KroEnv, kro_fixtures

from kro.api.names import LABEL_DISTRIBUTE
from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.errors import KubeError, NotFound
from kro.runtime.gvk import GVR
from kro.testing.fleet import Fleet
from kro.testing.waiting import eventually

ARGS = fleet_args(extra=("--enable-multicluster",))
controller, kro = kro_fixtures(ARGS)
CONFIGMAPS = GVR("", "v1", "configmaps")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
RGDS = GVR("kro.run", "v1alpha1", "resourcegraphdefinitions")
TIMEOUT_S = 60.0


fleet = fleet_fixture()


members = members_fixture()


def _settings() -> dict[str, Any]:
    return {
        "id": "settings",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.metadata.name}-settings"},
            "data": {"color": "${schema.spec.color}"},
        },
    }


async def _crd_in(client: Client, name: str) -> bool:
    try:
        await client.get(CRDS, name)
    except NotFound:
        return False
    return True


async def test_instances_live_and_are_reconciled_in_their_member(
    fleet: Fleet, kro: KroEnv, members: dict[str, Client]
) -> None:
    rgd = kro.rgd(
        "spoked",
        "Spoked",
        {"color": "string"},
        [_settings()],
        status={"color": "${settings.data.color}"},
    )
    await kro.apply_rgd(rgd)
    active = await kro.wait_rgd_active(kro.rgd_name("spoked"))
    gvr = await kro.gvr_of("Spoked")
    crd = f"{gvr.resource}.{gvr.group}"

    async def served_everywhere() -> list[Any] | None:
        live = await kro.get_rgd(kro.rgd_name("spoked"))
        clusters = (live.get("status") or {}).get("clusters") or []
        ready = {c["name"] for c in clusters if c.get("kindReady")}
        return clusters if ready >= set(MEMBERS) else None

    await eventually(served_everywhere, what="the kind served in both members", timeout_s=TIMEOUT_S)
    assert active
    for name, client in members.items():
        assert await _crd_in(client, crd), name
        body = {
            "apiVersion": f"{gvr.group}/{gvr.version}",
            "kind": "Spoked",
            "metadata": {"name": "same", "namespace": kro.namespace},
            "spec": {"color": name},
        }
        await client.create(gvr, body, namespace=kro.namespace)
    for name, client in members.items():

        async def active_here(client: Client = client, name: str = name) -> bool:
            obj = await client.get(gvr, "same", namespace=kro.namespace)
            status = obj.get("status") or {}
            return status.get("state") == "ACTIVE" and status.get("color") == name

        await eventually(active_here, what=f"the instance ACTIVE in {name}", timeout_s=TIMEOUT_S)
        child = await client.get(CONFIGMAPS, "same-settings", namespace=kro.namespace)
        assert child["data"]["color"] == name  # each member's own instance, its own child
        obj = await client.get(gvr, "same", namespace=kro.namespace)
        assert obj["metadata"].get("finalizers")
    with pytest.raises(NotFound):  # the hub holds no instance of it
        await kro.client.get(gvr, "same", namespace=kro.namespace)
    for client in members.values():
        await client.delete(gvr, "same", namespace=kro.namespace)
    for name, client in members.items():

        async def gone(client: Client = client) -> bool:
            try:
                await client.get(CONFIGMAPS, "same-settings", namespace=kro.namespace)
            except NotFound:
                return True
            return False

        await eventually(gone, what=f"the child deleted in {name}", timeout_s=TIMEOUT_S)
    await kro.client.delete(RGDS, kro.rgd_name("spoked"))

    async def crds_removed() -> bool:
        return not any([await _crd_in(c, crd) for c in members.values()])

    await eventually(crds_removed, what="the member CRDs removed", timeout_s=TIMEOUT_S)


async def test_a_hub_only_rgd_is_not_distributed(
    fleet: Fleet, kro: KroEnv, members: dict[str, Client]
) -> None:
    rgd = kro.rgd("hubonly", "HubOnly", {"color": "string"}, [_settings()])
    rgd["metadata"]["labels"] = {LABEL_DISTRIBUTE: "false"}
    await kro.apply_rgd(rgd)
    live = await kro.wait_rgd_active(kro.rgd_name("hubonly"))
    gvr = await kro.gvr_of("HubOnly")
    crd = f"{gvr.resource}.{gvr.group}"
    assert (live.get("status") or {}).get("clusters") in (None, [])
    for client in members.values():
        assert not await _crd_in(client, crd)


async def test_a_member_outage_holds_up_only_that_member(
    fleet: Fleet, kro: KroEnv, members: dict[str, Client]
) -> None:
    """M-22: member-2's API server stopped: an instance created in member-1 goes ACTIVE as
    fast as ever; member-2 back: its instance is reconciled again with no edit (a child
    deleted there meanwhile is re-created)."""
    rgd = kro.rgd("sturdy", "Sturdy", {"color": "string"}, [_settings()])
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("sturdy"))
    gvr = await kro.gvr_of("Sturdy")

    def body(name: str, color: str) -> dict[str, Any]:
        return {
            "apiVersion": f"{gvr.group}/{gvr.version}",
            "kind": "Sturdy",
            "metadata": {"name": name, "namespace": kro.namespace},
            "spec": {"color": color},
        }

    async def active(client: Client, name: str) -> bool:
        try:
            obj = await client.get(gvr, name, namespace=kro.namespace)
        except NotFound:
            return False
        return (obj.get("status") or {}).get("state") == "ACTIVE"

    async def served_in(name: str) -> bool:
        try:
            await members[name].get(CRDS, f"{gvr.resource}.{gvr.group}")
        except NotFound:
            return False
        return True

    for name in MEMBERS:
        await eventually(lambda n=name: served_in(n), what=f"CRD in {name}", timeout_s=TIMEOUT_S)
    await members["member-2"].create(gvr, body("steady", "blue"), namespace=kro.namespace)
    await eventually(
        lambda: active(members["member-2"], "steady"),
        what="ACTIVE in member-2",
        timeout_s=TIMEOUT_S,
    )
    outage = fleet.member("member-2").cluster
    outage.stop("kube-apiserver")
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await members["member-1"].create(gvr, body("during", "green"), namespace=kro.namespace)
        await eventually(
            lambda: active(members["member-1"], "during"), what="ACTIVE in member-1", timeout_s=20.0
        )
        assert loop.time() - started < 20.0
    finally:
        outage.start("kube-apiserver")
    config = await load_default(str(fleet.member("member-2").kubeconfig_path))
    async with Client.from_config(config) as member:  # a fresh connection to the restarted one

        async def reachable() -> bool:
            try:
                await member.get(gvr, "steady", namespace=kro.namespace)
            except KubeError:  # refused while it starts
                return False
            return True

        await eventually(reachable, what="member-2 back", timeout_s=TIMEOUT_S)
        await member.delete(CONFIGMAPS, "steady-settings", namespace=kro.namespace)

        async def recreated() -> bool:
            try:
                await member.get(CONFIGMAPS, "steady-settings", namespace=kro.namespace)
            except NotFound:
                return False
            return True

        await eventually(recreated, what="the child back in member-2", timeout_s=90.0)
        await member.delete(gvr, "steady", namespace=kro.namespace)
    await members["member-1"].delete(gvr, "during", namespace=kro.namespace)


async def test_same_named_instances_keep_their_own_objects_in_a_shared_cluster(
    fleet: Fleet, kro: KroEnv, members: dict[str, Client]
) -> None:
    """M-21: two members' instances of one name each send an object to the hub; each keeps
    its own (they are two ApplySets), and deleting one leaves the other's in place."""
    audit = {
        "id": "audit",
        "target": {"cluster": {"kubeconfigSecretName": "local"}},
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "audit-${schema.spec.color}", "namespace": kro.namespace},
            "data": {"from": "${schema.spec.color}"},
        },
    }
    await kro.apply_rgd(kro.rgd("audited", "Audited", {"color": "string"}, [audit]))
    await kro.wait_rgd_active(kro.rgd_name("audited"))
    gvr = await kro.gvr_of("Audited")

    async def served_in(client: Client) -> bool:
        try:
            await client.get(CRDS, f"{gvr.resource}.{gvr.group}")
        except NotFound:
            return False
        return True

    for name, client in members.items():
        await eventually(lambda c=client: served_in(c), what=f"CRD in {name}", timeout_s=TIMEOUT_S)
        body = {
            "apiVersion": f"{gvr.group}/{gvr.version}",
            "kind": "Audited",
            "metadata": {"name": "same", "namespace": kro.namespace},
            "spec": {"color": name},
        }
        await client.create(gvr, body, namespace=kro.namespace)

    async def both_on_the_hub() -> bool:
        for name in MEMBERS:
            try:
                await kro.client.get(CONFIGMAPS, f"audit-{name}", namespace=kro.namespace)
            except NotFound:
                return False
        return True

    await eventually(both_on_the_hub, what="both audits on the hub", timeout_s=TIMEOUT_S)
    for name, client in members.items():

        async def active(client: Client = client) -> bool:
            obj = await client.get(gvr, "same", namespace=kro.namespace)
            return (obj.get("status") or {}).get("state") == "ACTIVE"

        await eventually(active, what=f"ACTIVE in {name}", timeout_s=TIMEOUT_S)
    assert await both_on_the_hub()  # neither pass pruned the other's
    await members["member-1"].delete(gvr, "same", namespace=kro.namespace)

    async def first_gone() -> bool:
        try:
            await kro.client.get(CONFIGMAPS, "audit-member-1", namespace=kro.namespace)
        except NotFound:
            return True
        return False

    await eventually(first_gone, what="member-1's audit deleted", timeout_s=TIMEOUT_S)
    await kro.client.get(CONFIGMAPS, "audit-member-2", namespace=kro.namespace)  # still there
    await members["member-2"].delete(gvr, "same", namespace=kro.namespace)
