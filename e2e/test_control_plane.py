"""The local control plane is real and wired: CRDs, SSA, RBAC, controllers, nodes, kubectl."""

from __future__ import annotations

import ipaddress
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kro.testing.adminapi import AdminApi, ApiStatusError
from kro.testing.processes import control_plane_processes
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig
from kro.testing.testbin import cache_root
from kro.testing.wait import wait_for


def _crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object",
                                            "properties": {"size": {"type": "integer"}}}},
                }},
            }],
        },
    }


def _established(admin: AdminApi, name: str) -> bool:
    crd = admin.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}") or {}
    # A CRD just created has `status.conditions: null` until the API server's controllers act.
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def _open_watch(admin: AdminApi, url: str) -> Any:
    """A watch response; retried while the API server answers 429 (the watch cache of a kind
    that was just established may still be initialising: "storage is (re)initializing")."""

    def attempt() -> Any:
        request = urllib.request.Request(url)
        request.add_header("Authorization", f"Bearer {admin._token}")
        try:
            return urllib.request.urlopen(request, timeout=40, context=admin._context)
        except urllib.error.HTTPError as error:
            if error.code != 429:
                raise
            error.close()
            return None

    return wait_for(attempt, timeout_s=30, interval_s=0.5, what=f"a watch on {url}")


def _watch_events(admin: AdminApi, path: str, resource_version: str, count: int) -> list[str]:
    """Read `count` events from a real watch stream."""
    url = f"{admin.server}{path}?watch=1&resourceVersion={resource_version}&timeoutSeconds=30"
    names: list[str] = []
    with _open_watch(admin, url) as stream:
        for line in stream:
            event = json.loads(line)
            names.append(f"{event['type']} {event['object']['metadata']['name']}")
            if len(names) == count:
                break
    return names


def test_crd_becomes_established_and_its_resources_are_served(
        kube_admin: AdminApi, kube_namespace: str) -> None:
    group = f"{kube_namespace}.e2e.kro.run"
    kube_admin.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _crd(group))
    wait_for(lambda: _established(kube_admin, f"widgets.{group}"), what="CRD Established")
    path = f"/apis/{group}/v1/namespaces/{kube_namespace}/widgets"
    wait_for(lambda: kube_admin.get(path), what="the CRD's resources served")
    start = kube_admin.get(path)["metadata"]["resourceVersion"]
    for index in range(3):
        kube_admin.create(path, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                 "metadata": {"name": f"w{index}"}, "spec": {"size": index}})
    listed = kube_admin.get(path)["items"]
    assert [w["spec"]["size"] for w in listed] == [0, 1, 2]
    assert _watch_events(kube_admin, path, start, 3) == ["ADDED w0", "ADDED w1", "ADDED w2"]
    kube_admin.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")


def test_server_side_apply_records_the_field_manager(
        kube_admin: AdminApi, kube_namespace: str) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "ssa"}, "data": {"k": "v"}}
    applied = kube_admin.request(
        "PATCH",
        f"/api/v1/namespaces/{kube_namespace}/configmaps/ssa?fieldManager=kro-e2e&force=true",
        config_map, content_type="application/apply-patch+yaml")
    managers = [(m["manager"], m["operation"]) for m in applied["metadata"]["managedFields"]]
    assert managers == [("kro-e2e", "Apply")]


def test_service_account_with_a_narrow_role_is_forbidden_other_verbs(
        kube_cluster: ClusterHandle, kube_admin: AdminApi, kube_namespace: str) -> None:
    ns = kube_namespace
    kube_admin.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "read-cm"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    })
    kube_admin.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "read-cm"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "narrow", "namespace": ns}],
    })
    narrow = AdminApi.from_kubeconfig(
        service_account_kubeconfig(kube_cluster, kube_admin, ns, "narrow"))
    wait_for(lambda: narrow.get(f"/api/v1/namespaces/{ns}/configmaps") is not None,
             what="the narrow SA can list configmaps")
    with pytest.raises(ApiStatusError) as denied:
        narrow.create(f"/api/v1/namespaces/{ns}/configmaps",
                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nope"}})
    assert denied.value.status == 403
    assert json.loads(denied.value.body)["reason"] == "Forbidden"


def test_a_deployment_becomes_available_on_fake_nodes(
        kube_admin: AdminApi, kube_namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{kube_namespace}/deployments"
    kube_admin.create(path, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    })
    deployment = wait_for(
        lambda: (d := kube_admin.get(f"{path}/web")) and
        (d.get("status") or {}).get("availableReplicas") == 2 and d,
        timeout_s=120, what="2 available replicas")
    assert deployment["status"]["readyReplicas"] == 2


def test_deleting_a_namespace_completes(kube_admin: AdminApi) -> None:
    kube_admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": "kro-e2e-doomed"}})
    kube_admin.create("/api/v1/namespaces/kro-e2e-doomed/configmaps",
                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    kube_admin.delete("/api/v1/namespaces/kro-e2e-doomed")
    wait_for(lambda: not kube_admin.exists("/api/v1/namespaces/kro-e2e-doomed"),
             timeout_s=120, what="the namespace to be gone")


def test_kubectl_from_the_cache_talks_to_the_cluster(kubectl: Any, kube_namespace: str) -> None:
    kubectl("-n", kube_namespace, "create", "configmap", "from-kubectl", "--from-literal=a=b")
    out = kubectl("-n", kube_namespace, "get", "configmap", "from-kubectl", "-o", "json")
    assert json.loads(out.stdout)["data"] == {"a": "b"}
    version = kubectl("version", "-o", "json")
    assert json.loads(version.stdout)["serverVersion"]["gitVersion"] == "v1.36.3"


def test_every_component_listens_on_loopback_only(kube_cluster: ClusterHandle) -> None:
    if not kube_cluster.owned:
        pytest.skip("the cluster was not started by this test run")
    assert kube_cluster.run_dir is not None
    listening = _listening_addresses(str(kube_cluster.run_dir))
    assert listening, "found no listening sockets"
    assert all(ipaddress.ip_address(addr).is_loopback for addr in listening), listening


def _listening_addresses(run_dir: str) -> set[str]:
    """Local addresses of listening TCP sockets owned by this cluster's processes."""
    inodes: set[str] = set()
    for pid, _ in control_plane_processes(cache_root(), [run_dir]):
        try:  # a process may exit meanwhile (another cluster on this machine stopping)
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    addresses: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                addresses.add(_decode_address(fields[1].split(":")[0], width))
    return addresses


def _decode_address(hex_address: str, width: int) -> str:
    raw = bytes.fromhex(hex_address)
    # /proc stores each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return str(address.ipv4_mapped)
    return "::1" if str(address) == "::1" else str(address)
