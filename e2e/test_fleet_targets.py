"""Cluster targets on real control planes: a hub and two members (kro.testing's fleet).

* M-10: an RGD-wide literal target sends every resource to member-1; the instance stays on the
  hub, is ACTIVE with a status read from the member's object, and the object carries
  `kro.run/hub` (M-14). Deleting the instance deletes it from the member (M-16).
* M-10/M-15: a target from `schema` moves with the instance's spec: the object is created in the
  new member, then pruned from the old one.
* M-12: a target that names no registered cluster leaves the instance not Ready, naming it.
* M-11: data flows between two members: a Secret read in member-1 feeds a ConfigMap in member-2.
"""

from __future__ import annotations

from typing import Any

import pytest
from fleet_support import fleet_args, fleet_fixture
from kro_harness import KroEnv, kro_fixtures, meta

from kro.api.names import LABEL_HUB
from kro.runtime.client import Client
from kro.runtime.config import ConnectionConfig, load_default
from kro.runtime.errors import KubeError, NotFound
from kro.runtime.gvk import GVK, GVR
from kro.testing.fleet import Fleet, registry_secret
from kro.testing.waiting import eventually

ARGS = fleet_args()
controller, kro = kro_fixtures(ARGS)
CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
TIMEOUT_S = 60.0


fleet = fleet_fixture()


def _configmap(target: str | None = None) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "id": "settings",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.spec.name}", "namespace": "default"},
            "data": {"greeting": "hello from the hub"},
        },
    }
    if target is not None:
        resource["target"] = {"cluster": {"kubeconfigSecretName": target}}
    return resource


async def _member_object(fleet: Fleet, member: str, name: str) -> dict[str, Any] | None:
    async with Client.from_config(await _config(fleet, member)) as client:
        try:
            return await client.get(CONFIGMAPS, name, namespace="default")
        except NotFound:
            return None


async def _config(fleet: Fleet, member: str) -> ConnectionConfig:
    return await load_default(str(fleet.member(member).kubeconfig_path))


async def test_an_rgd_wide_target_sends_every_resource_to_the_member(
    fleet: Fleet, kro: KroEnv
) -> None:
    rgd = kro.rgd(
        "targeted",
        "Targeted",
        {"name": "string"},
        [_configmap()],
        status={"uid": "${settings.metadata.uid}"},
    )
    rgd["spec"]["target"] = {"cluster": {"kubeconfigSecretName": "member-1"}}
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("targeted"))
    name = f"cm-{kro.suffix}"
    await kro.apply_instance("Targeted", "one", {"name": name})
    gvr = await kro.gvr_of("Targeted")
    instance = await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)
    remote = await _member_object(fleet, "member-1", name)
    assert remote is not None
    assert instance["status"]["uid"] == meta(remote)["uid"]  # data flows back from the member
    assert meta(remote)["labels"][LABEL_HUB] == "local"
    assert "ownerReferences" not in meta(remote)
    assert await _member_object(fleet, "member-2", name) is None
    with pytest.raises(NotFound):
        await kro.client.get(CONFIGMAPS, name, namespace="default")
    await kro.client.delete(gvr, "one", namespace=kro.namespace)
    await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
    assert await _member_object(fleet, "member-1", name) is None


async def test_a_target_from_schema_moves_create_before_prune(fleet: Fleet, kro: KroEnv) -> None:
    rgd = kro.rgd("moving", "Moving", {"name": "string", "cluster": "string"}, [_configmap()])
    rgd["spec"]["target"] = {"cluster": {"kubeconfigSecretName": "${schema.spec.cluster}"}}
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("moving"))
    name = f"mv-{kro.suffix}"
    gvr = await kro.gvr_of("Moving")
    await kro.apply_instance("Moving", "one", {"name": name, "cluster": "member-1"})
    await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)
    assert await _member_object(fleet, "member-1", name) is not None
    await kro.apply_instance("Moving", "one", {"name": name, "cluster": "member-2"})

    async def moved() -> bool:
        there = await _member_object(fleet, "member-2", name)
        left = await _member_object(fleet, "member-1", name)
        return there is not None and left is None

    await eventually(moved, timeout_s=TIMEOUT_S, what="the ConfigMap moved to member-2")
    await kro.client.delete(gvr, "one", namespace=kro.namespace)
    await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
    assert await _member_object(fleet, "member-2", name) is None


async def test_a_computed_target_naming_no_cluster_is_reported(fleet: Fleet, kro: KroEnv) -> None:
    """M-12: a computed target is resolved per pass; one that names no registered cluster is
    the instance's error, `ClusterNotFound` naming it."""
    rgd = kro.rgd(
        "lost",
        "Lost",
        {"name": "string", "cluster": "string"},
        [_configmap("${schema.spec.cluster}")],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("lost"))
    gvr = await kro.gvr_of("Lost")
    await kro.apply_instance("Lost", "one", {"name": f"lost-{kro.suffix}", "cluster": "nowhere"})

    def reported(obj: dict[str, Any]) -> bool:
        conditions = (obj.get("status") or {}).get("conditions") or []
        return obj.get("status", {}).get("state") == "ERROR" and any(
            c.get("type") == "ResourcesReady"
            and c.get("reason") == "ClusterNotFound"
            and "cluster 'nowhere' is not registered" in str(c.get("message"))
            for c in conditions
        )

    await kro.wait_instance(gvr, "one", reported, what="ClusterNotFound", timeout_s=TIMEOUT_S)


def _widget_crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


async def test_a_literal_target_is_typed_against_the_member(fleet: Fleet, kro: KroEnv) -> None:
    """M-12: a kind served only by member-2 builds for a resource sent there, and is unknown,
    naming the cluster, for one sent to member-1."""
    group = f"{kro.suffix}.widgets.example.com"
    crds = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    widgets = GVR(group, "v1", "widgets")
    async with Client.from_config(await _config(fleet, "member-2")) as member:
        await member.create(crds, _widget_crd(group))
        try:

            async def served() -> bool:
                member.mapper.invalidate()
                try:
                    await member.mapper.resource_for(GVK(group, "v1", "Widget"))
                except KubeError:
                    return False
                return True

            await eventually(served, what="Widget served by member-2", timeout_s=TIMEOUT_S)
            widget = {
                "id": "widget",
                "target": {"cluster": {"kubeconfigSecretName": "member-2"}},
                "template": {
                    "apiVersion": f"{group}/v1",
                    "kind": "Widget",
                    "metadata": {"name": "${schema.spec.name}", "namespace": "default"},
                    "spec": {"size": "${schema.spec.size}"},
                },
            }
            spec = {"name": "string", "size": "integer"}
            await kro.apply_rgd(kro.rgd("widgets", "Widgets", spec, [widget]))
            await kro.wait_rgd_active(kro.rgd_name("widgets"))
            name = f"w-{kro.suffix}"
            gvr = await kro.gvr_of("Widgets")
            await kro.apply_instance("Widgets", "one", {"name": name, "size": 3})
            await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)
            found = await member.get(widgets, name, namespace="default")
            assert found["spec"]["size"] == 3
            wrong = {**widget, "target": {"cluster": {"kubeconfigSecretName": "member-1"}}}
            await kro.apply_rgd(kro.rgd("wrong", "Wrong", spec, [wrong]))

            async def refused() -> str | None:
                rgd = await kro.get_rgd(kro.rgd_name("wrong"))
                message = str((rgd.get("status") or {}).get("conditions"))
                return message if 'in cluster "member-1"' in message else None

            await eventually(refused, what="schema not found in member-1", timeout_s=TIMEOUT_S)
            await kro.client.delete(gvr, "one", namespace=kro.namespace)
            await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
        finally:
            await member.delete(crds, f"widgets.{group}")


async def test_an_rgd_waiting_for_its_cluster_is_built_when_it_joins(
    fleet: Fleet, kro: KroEnv
) -> None:
    """M-12: a literal target naming no registered cluster leaves the RGD Inactive, naming
    it; registering the cluster makes it Active with no edit."""
    cluster = f"late-{kro.suffix}"
    await kro.apply_rgd(kro.rgd("late", "Late", {"name": "string"}, [_configmap(cluster)]))

    async def inactive() -> str | None:
        rgd = await kro.get_rgd(kro.rgd_name("late"))
        message = str((rgd.get("status") or {}).get("conditions"))
        return message if f'"{cluster}"' in message and "Ready cluster" in message else None

    await eventually(inactive, what=f"Inactive naming {cluster}", timeout_s=TIMEOUT_S)
    secret = registry_secret(cluster, fleet.member("member-1").kubeconfig_text)
    await kro.client.create(SECRETS, secret, namespace="kro-system")
    try:
        await kro.wait_rgd_active(kro.rgd_name("late"))
    finally:
        await kro.client.delete(SECRETS, cluster, namespace="kro-system")


async def test_data_flows_from_one_member_into_another(fleet: Fleet, kro: KroEnv) -> None:
    """M-11: a Secret read in member-1 (an external reference targeted there) feeds a ConfigMap
    applied in member-2; an edit of the Secret in member-1 reaches member-2 without an edit of
    the instance, and deleting the instance leaves the Secret, which kro did not create."""
    name = f"flow-{kro.suffix}"
    creds = {
        "id": "creds",
        "target": {"cluster": {"kubeconfigSecretName": "member-1"}},
        "externalRef": {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "${schema.spec.name}", "namespace": "default"},
        },
    }
    copy = {
        "id": "copy",
        "target": {"cluster": {"kubeconfigSecretName": "member-2"}},
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.spec.name}", "namespace": "default"},
            "data": {"endpoint": "${string(creds.data.endpoint)}"},
        },
    }
    async with (
        Client.from_config(await _config(fleet, "member-1")) as one,
        Client.from_config(await _config(fleet, "member-2")) as two,
    ):
        secret = {"metadata": {"name": name}, "stringData": {"endpoint": "db-1.internal:5432"}}
        await one.create(SECRETS, secret, namespace="default")
        try:
            await kro.apply_rgd(kro.rgd("flow", "Flow", {"name": "string"}, [creds, copy]))
            await kro.wait_rgd_active(kro.rgd_name("flow"))
            gvr = await kro.gvr_of("Flow")
            await kro.apply_instance("Flow", "one", {"name": name})
            await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)

            async def copied(value: str) -> bool:
                try:
                    found = await two.get(CONFIGMAPS, name, namespace="default")
                except NotFound:
                    return False
                return (found.get("data") or {}).get("endpoint") == value

            assert await copied("db-1.internal:5432")
            assert await _member_object(fleet, "member-1", name) is None  # only in member-2
            await one.patch(
                SECRETS,
                name,
                {"stringData": {"endpoint": "db-2.internal:5432"}},
                namespace="default",
            )
            await eventually(
                lambda: copied("db-2.internal:5432"),
                what="the Secret's new value in member-2",
                timeout_s=TIMEOUT_S,
            )
            await kro.client.delete(gvr, "one", namespace=kro.namespace)
            await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
            assert not await copied("db-2.internal:5432")  # deleted from member-2
            await one.get(SECRETS, name, namespace="default")  # never kro's to delete
        finally:
            await one.delete(SECRETS, name, namespace="default")
