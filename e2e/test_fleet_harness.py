"""The fleet harness (kro.testing.fleet, `kube_fleet`): a hub and two member control planes,
each member registered on the hub by a labelled Secret holding an inline kubeconfig (M-02,
M-03), each a cluster of its own, and each stoppable for an outage drill."""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import pytest
import yaml

from kro.testing import fleet
from kro.testing.adminapi import AdminApi, ApiStatusError
from kro.testing.wait import wait_for

REGISTRY = "/api/v1/namespaces/kro-system/secrets"


def _configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def _reachable(admin: AdminApi) -> bool:
    try:
        return admin.get("/version") is not None
    except (OSError, ApiStatusError):
        return False


def test_the_registry_secrets_are_on_the_hub_with_the_label(
    kube_fleet: fleet.Fleet, kube_admin: AdminApi
) -> None:
    listed = kube_admin.get(f"{REGISTRY}?labelSelector=multicluster.runtime/cluster%3Dtrue")
    by_name = {item["metadata"]["name"]: item for item in listed["items"]}
    assert set(by_name) == {"member-1", "member-2"}
    for member in kube_fleet.members:
        text = base64.b64decode(by_name[member.name]["data"]["kubeconfig"]).decode()
        assert text == member.kubeconfig_text
        assert yaml.safe_load(text)["clusters"][0]["cluster"]["server"] == member.server


def test_each_member_answers_its_inline_kubeconfig_and_is_a_cluster_of_its_own(
    kube_fleet: fleet.Fleet, kube_admin: AdminApi, tmp_path: Path
) -> None:
    """What the hub will do: read a member's kubeconfig out of its Secret and use it."""
    admins = {}
    for member in kube_fleet.members:
        secret = kube_admin.get(f"{REGISTRY}/{member.name}")
        path = tmp_path / member.name
        path.write_bytes(base64.b64decode(secret["data"]["kubeconfig"]))
        admins[member.name] = AdminApi.from_kubeconfig(path)
    assert len({m.server for m in kube_fleet.members} | {kube_admin.server}) == 3
    name = f"fleet-probe-{secrets.token_hex(4)}"
    configmaps = "/api/v1/namespaces/default/configmaps"
    admins["member-1"].create(configmaps, _configmap(name))
    try:
        assert admins["member-1"].exists(f"{configmaps}/{name}")
        assert not admins["member-2"].exists(f"{configmaps}/{name}")
        assert not kube_admin.exists(f"{configmaps}/{name}")
    finally:
        admins["member-1"].delete(f"{configmaps}/{name}")


def test_a_members_apiserver_can_be_stopped_and_started_without_disturbing_the_other(
    kube_fleet: fleet.Fleet,
) -> None:
    down, up = kube_fleet.member("member-2"), kube_fleet.member("member-1")
    down_admin = down.admin()
    down.cluster.stop("kube-apiserver", kill=True)
    try:
        with pytest.raises(OSError, match="refused"):
            down_admin.request("GET", "/version")
        assert _reachable(up.admin())
    finally:
        down.cluster.start("kube-apiserver")
    wait_for(lambda: _reachable(down_admin), timeout_s=60, what="member-2's kube-apiserver back")


def test_register_in_another_namespace_and_unregister_leave_it_as_found(
    kube_fleet: fleet.Fleet, kube_admin: AdminApi
) -> None:
    namespace = f"kro-fleet-{secrets.token_hex(4)}"
    manifests = kube_fleet.register(namespace=namespace, label="example.com/member=yes")
    assert [m["metadata"]["namespace"] for m in manifests] == [namespace, namespace]
    found = kube_admin.get(
        f"/api/v1/namespaces/{namespace}/secrets?labelSelector=example.com/member%3Dyes"
    )
    assert {item["metadata"]["name"] for item in found["items"]} == {"member-1", "member-2"}
    kube_fleet.unregister(namespace)
    for member in kube_fleet.members:
        assert not kube_admin.exists(f"/api/v1/namespaces/{namespace}/secrets/{member.name}")
    namespace_left = kube_admin.get(f"/api/v1/namespaces/{namespace}")
    assert namespace_left is None or namespace_left["status"]["phase"] == "Terminating"
    assert kube_admin.exists(f"{REGISTRY}/member-1")  # the session's registry is untouched
