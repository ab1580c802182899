"""`kill -9` of kro in the middle of a Graph's applies, again and again (V-57, V-63, V-64).

A Graph fans 40 ConfigMaps out, applied two at a time so that kills land between an apply and
the status write; while kro is killed and restarted at random moments the Graph shrinks to 20
and grows to 30. Afterwards exactly the 30 ConfigMaps exist, each recorded in
`status.managedResources` with its UID: nothing the Graph created is orphaned, and a ConfigMap
it did not create (same namespace, same name pattern) is never deleted. Deleting the Graph then
deletes all of its objects and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.crds import install_crds
from kro.testing.kroprocess import KroProcess
from kro.testing.pytest_plugin import ClusterHandle
from kro.testing.waiting import eventually

GRAPHS = GVR("kro.run", "v1alpha1", "graphs")
CONFIGMAPS = GVR("", "v1", "configmaps")
CLUSTER_ROLES = GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = GVR("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
ARGS = (
    "--feature-gates=GraphKind=true",
    "--controller-namespace=kro-system",
    "--controller-service-account=kro",
    "--apply-concurrency=2",
    "--log-level=info",
)
KILLS = 8


def _graph(count: int) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": "storm"},
        "spec": {
            "nodes": [
                {"id": "numbers", "def": {"items": list(range(count))}},
                {
                    "id": "maps",
                    "forEach": [{"n": "${numbers.items}"}],
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": '${"storm-" + string(n)}'},
                        "data": {"n": "${string(n)}"},
                    },
                },
            ]
        },
    }


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


async def _names(client: Client, namespace: str) -> set[str]:
    items, _ = await client.list_all(CONFIGMAPS, namespace=namespace)
    return {
        str(i["metadata"]["name"])
        for i in items
        if str(i["metadata"]["name"]).startswith("storm-")
        and not i["metadata"].get("deletionTimestamp")
    }


async def test_kill_9_mid_apply_orphans_nothing_and_deletes_nothing_foreign(
    kube_cluster: ClusterHandle, kube_namespace: str, client: Client, tmp_path: Path
) -> None:
    await install_crds(client)
    role = f"{kube_namespace}-storm"
    await client.create(CLUSTER_ROLES, {"metadata": {"name": role}, "rules": [{
        "apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]})
    await client.create(CLUSTER_ROLE_BINDINGS, {
        "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": kube_namespace}],
    })
    # Not the Graph's: same namespace, a name the Graph would render were it larger.
    await client.create(
        CONFIGMAPS, {"metadata": {"name": "storm-99"}, "data": {"n": "mine"}},
        namespace=kube_namespace,
    )
    started: list[KroProcess] = []

    def start() -> KroProcess:
        process = KroProcess(kube_cluster.kubeconfig, tmp_path / f"kro-{len(started)}.log", ARGS)
        started.append(process.start())
        return process

    seed = int(os.environ.get("KRO_STORM_SEED") or random.randrange(1 << 30))
    print(f"crash storm seed {seed} (KRO_STORM_SEED={seed} replays its timings)")
    chance = random.Random(seed)
    controller = start()
    try:
        await client.create(GRAPHS, _graph(40), namespace=kube_namespace)
        for kill in range(KILLS):
            if kill == 3:
                await client.patch(GRAPHS, "storm", {"spec": _graph(20)["spec"]},
                                   namespace=kube_namespace)
            if kill == 6:
                await client.patch(GRAPHS, "storm", {"spec": _graph(30)["spec"]},
                                   namespace=kube_namespace)
            await asyncio.sleep(chance.uniform(0.3, 2.5))
            await asyncio.to_thread(controller.kill9)
            controller = start()

        async def converged() -> dict[str, Any] | None:
            graph = await client.get(GRAPHS, "storm", namespace=kube_namespace)
            ready = [c for c in (graph.get("status") or {}).get("conditions") or ()
                     if c["type"] == "Ready" and c["status"] == "True"]
            expected = {f"storm-{n}" for n in range(30)}
            names = await _names(client, kube_namespace)
            return graph if ready and names == expected | {"storm-99"} else None

        graph = await eventually(converged, what="the Graph converged on 30", timeout_s=120)
        entries = graph["status"]["managedResources"]
        assert sorted(e["name"] for e in entries) == sorted(f"storm-{n}" for n in range(30))
        assert all(e.get("uid") for e in entries)
        bystander = await client.get(CONFIGMAPS, "storm-99", namespace=kube_namespace)
        assert bystander["data"] == {"n": "mine"}

        await client.delete(GRAPHS, "storm", namespace=kube_namespace)

        async def torn_down() -> bool:
            try:
                await client.get(GRAPHS, "storm", namespace=kube_namespace)
            except NotFound:
                return await _names(client, kube_namespace) == {"storm-99"}
            return False

        await eventually(torn_down, what="the Graph and its objects gone", timeout_s=60)
    finally:
        for process in started:
            process.stop()
        with contextlib.suppress(NotFound):  # a failed run must not leave a stuck namespace
            await client.patch(GRAPHS, "storm", {"metadata": {"finalizers": None}},
                               namespace=kube_namespace)
            await client.delete(GRAPHS, "storm", namespace=kube_namespace)
        for gvr, name in ((CLUSTER_ROLE_BINDINGS, role), (CLUSTER_ROLES, role)):
            with contextlib.suppress(NotFound):
                await client.delete(gvr, name)
