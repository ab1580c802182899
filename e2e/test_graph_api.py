"""The Graph API on the real control plane: the CRD's admission rules, and the GraphKind gate.

* The shipped `graphs.kro.run` CRD installs, and the real API server enforces what upstream's
  does: one node kind per node (its CEL message), the id pattern, unique ids, the
  serviceAccountName pattern, at least one node; `kubectl get graphs` shows READY and AGE.
* `kro controller` with GraphKind on exits at once, with a clear message, when the CRD is not
  served, and with a usage error naming `--controller-namespace` when that flag is missing.
* With the gate off and the CRD installed, RGDs reconcile as ever and nothing lists or watches
  Graphs: kro runs as a ServiceAccount that may not touch Graphs and is never refused anything.

The CRD-absent test deletes `graphs.kro.run` from the shared control plane and installs it
again before it returns (deleting the CRD deletes every Graph, so it runs alone in this file).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from inprocess_controller import InProcessController
from nginxapp_example import CHART_CRDS, CRDS_API, NginxApp, apply, established, install_kro_crds

from kro.api.graph import GRAPH_CRD_NAME
from kro.testing.adminapi import AdminApi, ApiStatusError
from kro.testing.pytest_plugin import (
    ClusterHandle,
    create_namespace,
    service_account_kubeconfig,
)
from kro.testing.wait import wait_for

CEL_MESSAGE = "exactly one of template, ref, def, graph, patch must be set"
ON = "--feature-gates=GraphKind=true"
IDENTITY = ("--controller-namespace=kro-system", "--controller-service-account=kro")
PROMPTLY_S = 30.0
"""Upstream exits only after about two minutes; kro must say so at start-up (an interpreter
start and one discovery read, even on a loaded machine)."""


@pytest.fixture(scope="module")
def crds_installed(kube_admin: AdminApi) -> None:
    install_kro_crds(kube_admin)  # the chart's crds/, as `helm install` puts them in
    assert established(kube_admin, GRAPH_CRD_NAME)


@pytest.fixture
def namespace(kube_admin: AdminApi, crds_installed: None) -> Iterator[str]:
    name = f"kro-graph-api-{secrets.token_hex(4)}"
    create_namespace(kube_admin, name)
    try:
        yield name
    finally:
        kube_admin.delete(f"/api/v1/namespaces/{name}")


def _graph(name: str, nodes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kro.run/v1alpha1", "kind": "Graph", "metadata": {"name": name},
            "spec": {"nodes": nodes, **spec}}


CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
              "data": {"mode": "on"}}
REF = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}


def _create(admin: AdminApi, namespace: str, graph: dict[str, Any]) -> Any:
    return admin.create(f"/apis/kro.run/v1alpha1/namespaces/{namespace}/graphs", graph)


def _refused(admin: AdminApi, namespace: str, graph: dict[str, Any]) -> str:
    """The API server's 422 body for `graph`; fails if it is accepted."""
    with pytest.raises(ApiStatusError) as refused:
        _create(admin, namespace, graph)
    assert refused.value.status == 422, refused.value.body
    return refused.value.body


def test_a_valid_graph_is_accepted_and_listed_with_ready_and_age(
        kube_admin: AdminApi, kubectl: Any, namespace: str) -> None:
    created = _create(kube_admin, namespace, _graph("bundle", [
        {"id": "settings", "template": CONFIG_MAP},
        {"id": "home", "ref": REF, "readyWhen": ["${home.status.phase == 'Active'}"]},
        {"id": "names", "def": {"prefix": "team"}, "forEach": [{"n": "${[1, 2]}"}]},
        {"id": "child", "graph": {"nodes": [{"id": "inner", "def": {"a": 1}}]}},
        {"id": "label", "patch": {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": "default", "labels": {"x": "y"}}}},
    ], serviceAccountName="deployer.team-a"))
    assert [n["id"] for n in created["spec"]["nodes"]] == [
        "settings", "home", "names", "child", "label"]
    listed = kubectl("get", "graphs", "-n", namespace).stdout.splitlines()
    assert listed[0].split() == ["NAME", "READY", "AGE"]
    assert listed[1].split()[0] == "bundle"


def test_a_node_with_two_kinds_is_refused_with_the_cel_message(
        kube_admin: AdminApi, namespace: str) -> None:
    body = _refused(kube_admin, namespace, _graph("two-kinds", [
        {"id": "both", "template": CONFIG_MAP, "ref": REF}]))
    assert CEL_MESSAGE in body


def test_a_node_with_no_kind_is_refused_so_an_old_watch_node_is_too(
        kube_admin: AdminApi, namespace: str) -> None:
    """Early Graph CRDs had a `watch` node kind; v0.10 has none (the field is not in the
    schema), so such a node sets none of the five and the rule refuses it."""
    body = _refused(kube_admin, namespace, _graph("old-watch", [
        {"id": "watched", "watch": REF}]))
    assert CEL_MESSAGE in body


@pytest.mark.parametrize("node_id", ["my-node", "2nd", "my_node"], ids=str)
def test_a_bad_id_is_refused(kube_admin: AdminApi, namespace: str, node_id: str) -> None:
    body = _refused(kube_admin, namespace, _graph("bad-id", [
        {"id": node_id, "template": CONFIG_MAP}]))
    assert "spec.nodes[0].id" in body
    assert "^[A-Za-z][A-Za-z0-9]*$" in body


def test_two_nodes_with_one_id_are_refused(kube_admin: AdminApi, namespace: str) -> None:
    body = _refused(kube_admin, namespace, _graph("twice", [
        {"id": "settings", "template": CONFIG_MAP},
        {"id": "settings", "def": {"a": 1}}]))
    assert "Duplicate value" in body
    assert "spec.nodes[1]" in body


@pytest.mark.parametrize("name", ["Deployer", "team_a", "-x", "a..b", "x" * 254], ids=str)
def test_a_bad_service_account_name_is_refused(
        kube_admin: AdminApi, namespace: str, name: str) -> None:
    body = _refused(kube_admin, namespace, _graph("bad-sa", [
        {"id": "settings", "template": CONFIG_MAP}], serviceAccountName=name))
    assert "spec.serviceAccountName" in body


def test_a_graph_needs_at_least_one_node(kube_admin: AdminApi, namespace: str) -> None:
    body = _refused(kube_admin, namespace, _graph("empty", []))
    assert "spec.nodes" in body
    assert "at least 1 items" in body or "should have at least 1" in body
    no_spec = {"apiVersion": "kro.run/v1alpha1", "kind": "Graph", "metadata": {"name": "bare"}}
    assert "spec" in _refused(kube_admin, namespace, no_spec)


def test_status_conditions_are_a_map_keyed_on_type(
        kube_admin: AdminApi, namespace: str) -> None:
    """V-05: a status write with two conditions of one type is refused."""
    _create(kube_admin, namespace, _graph("doubled", [{"id": "settings", "template": CONFIG_MAP}]))
    condition = {"type": "Ready", "status": "True", "reason": "Ready",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
    path = f"/apis/kro.run/v1alpha1/namespaces/{namespace}/graphs/doubled/status"
    with pytest.raises(ApiStatusError) as refused:
        kube_admin.request("PATCH", path, {"status": {"conditions": [condition, condition]}},
                           content_type="application/merge-patch+json")
    assert refused.value.status == 422
    assert "Duplicate value" in refused.value.body


def _kro(kube_cluster: ClusterHandle, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`kro controller` as a process (probes and metrics off), with how long it ran."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "kro", "controller", f"--kubeconfig={kube_cluster.kubeconfig}",
         "--metrics-bind-address=0", "--health-probe-bind-address=0", *args],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return done, time.monotonic() - began


@pytest.fixture
def graph_crd_absent(kube_admin: AdminApi, crds_installed: None) -> Iterator[None]:
    """`graphs.kro.run` deleted (and gone from discovery); installed again afterwards."""
    kube_admin.delete(f"{CRDS_API}/{GRAPH_CRD_NAME}")
    wait_for(lambda: not kube_admin.exists(f"{CRDS_API}/{GRAPH_CRD_NAME}"), timeout_s=60,
             what="the Graph CRD deleted")
    wait_for(lambda: not _served(kube_admin), timeout_s=30, what="graphs gone from discovery")
    try:
        yield
    finally:
        crd = yaml.safe_load((CHART_CRDS / "kro.run_graphs.yaml").read_text())
        apply(kube_admin, f"{CRDS_API}/{GRAPH_CRD_NAME}", crd)
        wait_for(lambda: established(kube_admin, GRAPH_CRD_NAME), timeout_s=30,
                 what="the Graph CRD installed again")


def _served(admin: AdminApi) -> bool:
    resources = (admin.get("/apis/kro.run/v1alpha1") or {}).get("resources") or []
    return any(r.get("name") == "graphs" for r in resources)


def test_gate_on_and_crd_missing_exits_at_once_saying_so(
        kube_cluster: ClusterHandle, graph_crd_absent: None) -> None:
    done, elapsed = _kro(kube_cluster, ON, *IDENTITY)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert elapsed < PROMPTLY_S, f"took {elapsed:.1f}s"
    assert "controller.graph_crd_missing" in output
    assert GRAPH_CRD_NAME in output
    assert "kubectl apply --server-side -f kro.run_graphs.yaml" in output
    assert output.count("controller.graph_crd_missing") == 1  # one clear error, no retries
    assert "Traceback" not in output


def test_gate_on_without_controller_namespace_exits_naming_it(
        kube_cluster: ClusterHandle) -> None:
    done, _ = _kro(kube_cluster, ON, "--controller-service-account=kro")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "--controller-namespace is required" in done.stderr
    assert "GraphKind" in done.stderr


RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
EVERYTHING_BUT_GRAPHS = [
    # Every group kro and the nginxapp example touch, in full...
    {"apiGroups": ["", "apps", "networking.k8s.io", "apiextensions.k8s.io",
                   "coordination.k8s.io", "events.k8s.io", "authorization.k8s.io",
                   "internal.kro.run", "platform.example.com"],
     "resources": ["*"], "verbs": ["*"]},
    # ...and of kro.run only the RGDs: any request kro made for Graphs would be refused.
    {"apiGroups": ["kro.run"],
     "resources": ["resourcegraphdefinitions", "resourcegraphdefinitions/status",
                   "resourcegraphdefinitions/finalizers"],
     "verbs": ["*"]},
]


@pytest.fixture
def no_graphs_kubeconfig(
        kube_cluster: ClusterHandle, kube_admin: AdminApi, namespace: str) -> Iterator[Path]:
    """A ServiceAccount that may do everything kro needs for RGDs and nothing with Graphs."""
    name = f"{namespace}-no-graphs"
    kube_admin.create(f"{RBAC_API}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name}, "rules": EVERYTHING_BUT_GRAPHS})
    kube_admin.create(f"{RBAC_API}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "kro", "namespace": namespace}]})
    try:
        yield service_account_kubeconfig(kube_cluster, kube_admin, namespace, "kro")
    finally:
        kube_admin.delete(f"{RBAC_API}/clusterrolebindings/{name}")
        kube_admin.delete(f"{RBAC_API}/clusterroles/{name}")


def test_gate_off_with_the_crd_installed_rgds_run_and_graphs_are_never_read(
        kube_admin: AdminApi, namespace: str, no_graphs_kubeconfig: Path) -> None:
    """kro runs as an identity that may not read Graphs. It is never refused anything (its
    client counts every answer by status code), so it never asked for a Graph."""
    # The identity really may not: a request for Graphs is refused.
    with pytest.raises(ApiStatusError) as refused:
        AdminApi.from_kubeconfig(no_graphs_kubeconfig).request(
            "GET", f"/apis/kro.run/v1alpha1/namespaces/{namespace}/graphs")
    assert refused.value.status == 403
    app = NginxApp(kube_admin, namespace)
    controller = InProcessController(no_graphs_kubeconfig).start()
    try:
        app.apply_rgd()
        app.apply_instance()  # RGDs run as ever: the instance goes ACTIVE
        app.delete()
        scrape = controller.metrics()
    finally:
        try:
            app.delete()
        finally:
            controller.stop()
            app.delete_generated_crd()
    assert scrape.total("rest_client_requests_total") > 0
    assert scrape.total("rest_client_requests_total", code="403") == 0
    assert not [s for s in scrape.samples if s.name.startswith("graphengine_")]


def test_gate_on_with_the_crd_installed_starts(
        kube_cluster: ClusterHandle, crds_installed: None) -> None:
    with InProcessController(kube_cluster.kubeconfig, [ON, *IDENTITY]) as controller:
        assert controller.healthz() == 200
        scrape = controller.metrics()
        assert scrape.types.get("graphengine_watch_owner_count") == "gauge"
        assert scrape.types.get("graphengine_watch_request_count") == "gauge"
        assert scrape.types.get("graphengine_route_total") == "counter"
        assert scrape.types.get("graphengine_route_match_total") == "counter"

