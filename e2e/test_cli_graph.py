"""The CLI on a live `Graph` (gate `GraphKind` on), on the real control plane.

1. `kro generate rbac` for a Graph document is what its ServiceAccount needs: a Graph whose
   ServiceAccount has no permission creates nothing and says so; once the printed Role,
   RoleBinding and ClusterRole are applied, the same Graph converges to Ready without an edit.
2. `kro explain graph NAME -n NS`, run as a ServiceAccount that may only read Graphs,
   ConfigMaps and Events in the namespace (never write), reports the converged Graph with no
   problem and nothing to write, its conditions and managedResources; once the object its
   `ref` reads is deleted, the root cause names that missing object and the dependent node
   waits on it, as the controller's own `ResourcesConverged` says.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kro_harness import CONFIGMAPS, CONTROLLER_ARGS, KroEnv, kro_fixtures
from test_graph_kind import GRAPHS, SERVICE_ACCOUNTS, Graphs, _condition

from kro.cli.main import main
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig

controller, kro = kro_fixtures(
    (
        *CONTROLLER_ARGS[:-2],
        "--feature-gates=InstanceConditionEvents=true,GraphKind=true",
        "--controller-namespace=kro-system",
        "--controller-service-account=kro",
        "--log-level=info",
    )
)

RBAC = "rbac.authorization.k8s.io"
PLURALS = {
    "Role": GVR(RBAC, "v1", "roles"),
    "RoleBinding": GVR(RBAC, "v1", "rolebindings"),
    "ClusterRole": GVR(RBAC, "v1", "clusterroles"),
    "ClusterRoleBinding": GVR(RBAC, "v1", "clusterrolebindings"),
}
APPLIER = "cli-applier"
EXPLAIN_TIMEOUT_S = 120


def graph_document(namespace: str, prefix: str) -> dict[str, Any]:
    """A def, a ref to a ConfigMap the test owns, and two ConfigMaps fed from them."""
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": "shop", "namespace": namespace},
        "spec": {
            "serviceAccountName": APPLIER,
            "nodes": [
                {"id": "naming", "def": {"prefix": prefix}},
                {
                    "id": "source",
                    "ref": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": f"{prefix}-source"},
                    },
                },
                {
                    "id": "settings",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${naming.prefix}-settings"},
                        "data": {"color": "${source.data.color}"},
                    },
                },
                {
                    "id": "copy",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${naming.prefix}-copy"},
                        "data": {"from": "${settings.metadata.name}"},
                    },
                },
            ],
        },
    }


def generate_rbac(path: Path) -> tuple[int, str, str]:
    """`kro generate rbac -f PATH --mode aggregation`, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["generate", "rbac", "-f", str(path), "--mode", "aggregation"])
    return code, out.getvalue(), err.getvalue()


def explain_sync(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kro.cli.main", "explain", *args, "--kubeconfig", str(kubeconfig)],
        capture_output=True, text=True, timeout=EXPLAIN_TIMEOUT_S, check=False,
    )  # fmt: skip


async def explain(kubeconfig: Path, *args: str) -> dict[str, Any]:
    done = await asyncio.to_thread(explain_sync, kubeconfig, *args, "-o", "json")
    print(f"$ kro explain {' '.join(args)} (exit {done.returncode})\n{done.stdout}{done.stderr}")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.fixture
async def world(kro: KroEnv) -> AsyncIterator[Graphs]:
    found = Graphs(kro)
    try:
        yield found
    finally:
        await found.cleanup()


def reader_kubeconfig(cluster: ClusterHandle, admin: AdminApi, namespace: str) -> Path:
    """A ServiceAccount that may get and list Graphs, ConfigMaps and Events here, no more."""
    base = f"/apis/{RBAC}/v1/namespaces/{namespace}"
    admin.create(
        f"{base}/roles",
        {
            "apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "graph-reader"},
            "rules": [
                {"apiGroups": ["kro.run"], "resources": ["graphs"], "verbs": ["get", "list"]},
                {"apiGroups": [""], "resources": ["configmaps", "events"],
                 "verbs": ["get", "list"]},
            ],
        },
    )  # fmt: skip
    admin.create(
        f"{base}/rolebindings",
        {
            "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": "graph-reader"},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "graph-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "graph-reader",
                          "namespace": namespace}],
        },
    )  # fmt: skip
    return service_account_kubeconfig(cluster, admin, namespace, "graph-reader")


async def test_generated_rbac_lets_a_graph_converge_and_explain_reads_it(
    world: Graphs, kro: KroEnv, kube_cluster: ClusterHandle, kube_admin: AdminApi, tmp_path: Path
) -> None:
    client, namespace = world.client, world.namespace
    prefix = f"cli-{kro.suffix}"
    await client.create(
        CONFIGMAPS,
        {"metadata": {"name": f"{prefix}-source"}, "data": {"color": "blue"}},
        namespace=namespace,
    )
    await client.create(SERVICE_ACCOUNTS, {"metadata": {"name": APPLIER}}, namespace=namespace)
    document = graph_document(namespace, prefix)
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")

    # Without any permission the ServiceAccount creates nothing, and the Graph says why.
    await world.create(GRAPHS, document, namespace=namespace)
    refused = await world.wait("shop", "ResourcesConverged", "False")
    assert "forbidden" in _condition(refused, "ResourcesConverged")["message"].lower()
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, f"{prefix}-settings", namespace=namespace)

    # What `kro generate rbac` prints, applied as is, converges it without an edit.
    code, out, err = generate_rbac(path)
    assert (code, err) == (0, "")
    documents = [d for d in yaml.safe_load_all(out) if d]
    assert [d["kind"] for d in documents] == ["Role", "RoleBinding", "ClusterRole"]
    for doc in documents:
        scoped = doc["metadata"].get("namespace")
        await world.create(PLURALS[doc["kind"]], doc, namespace=scoped)
    graph = await world.wait("shop", "Ready", "True")
    assert _condition(graph, "Accepted")["message"] == "compiled 4 nodes"
    assert graph["status"]["appliedServiceAccount"] == (
        f"system:serviceaccount:{namespace}:{APPLIER}"
    )
    settings = await client.get(CONFIGMAPS, f"{prefix}-settings", namespace=namespace)
    assert settings["data"] == {"color": "blue"}

    # explain, as a reader of the namespace: nothing wrong, nothing to write.
    reader = reader_kubeconfig(kube_cluster, kube_admin, namespace)
    data = await explain(reader, "graph", "shop", "-n", namespace)
    assert data["explanation"] == "graph"
    assert data["rootCause"].startswith("no problem found: the Graph is Ready")
    states = {n["id"]: n["status"] for n in data["nodes"]}
    assert states == {"naming": "applied", "source": "ready", "settings": "applied",
                      "copy": "applied"}  # fmt: skip
    assert data["wouldWrite"] == []
    assert [(m["nodeId"], m["name"]) for m in data["managedResources"]] == [
        ("settings", f"{prefix}-settings"),
        ("copy", f"{prefix}-copy"),
    ]
    assert all(m["uid"] for m in data["managedResources"])
    conditions = {c["type"]: c["status"] for c in data["conditions"]}
    for kind in ("Accepted", "ResourcesConverged", "Ready"):
        assert conditions[kind] == "True"

    # The ref's target goes: the controller waits on it, and explain names it.
    await client.delete(CONFIGMAPS, f"{prefix}-source", namespace=namespace)
    waiting = await world.wait("shop", "ResourcesConverged", "False", "WaitingForReadiness")
    assert "not found" in _condition(waiting, "ResourcesConverged")["message"]
    data = await explain(reader, "graph", "shop", "-n", namespace)
    assert data["rootCause"].startswith('node "source"')
    assert f"ConfigMap {namespace}/{prefix}-source does not exist" in data["rootCause"]
    nodes = {n["id"]: n for n in data["nodes"]}
    assert nodes["source"]["status"] == "waiting"
    assert nodes["settings"]["status"] == "waiting"
    assert nodes["settings"]["waitingOn"] == "source"
    text = await asyncio.to_thread(explain_sync, reader, "graph", "shop", "-n", namespace)
    assert text.returncode == 0
    assert text.stdout.splitlines()[0] == f"Root cause: {data['rootCause']}"
    assert "Managed resources (status.managedResources):" in text.stdout
