"""The fourth example operator (examples/runtime/graph_operator.py) on the real control plane: kro's
graph engine and ApplySet applier embedded in a kro.runtime operator, started the way its
`main` starts it (kro.runtime.runner), installing the CRD its graph generates.

A StaticSite gets its ConfigMap, Deployment and Service, in the graph's order (the Deployment
mounts the ConfigMap whose name an expression gives it), as members of the site's ApplySet and
owned by it; the status the graph projects; a deleted child comes back; a spec edit reaches the
children; deleting the site deletes them (kube-controller-manager's garbage collector)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from runtime_e2e_support import CONFIGMAPS, eventually, example

from kro.runtime import GVR, Client, Manager, errors
from kro.runtime.runner import RunOptions, run_manager
from kro.testing.pytest_plugin import ClusterHandle

SITES = GVR("example.kro.run", "v1alpha1", "staticsites")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
SERVICES = GVR("", "v1", "services")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
PART_OF = "applyset.kubernetes.io/part-of"


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


@contextlib.asynccontextmanager
async def running_operator(client: Client, namespace: str) -> AsyncIterator[Manager]:
    """The example as `run(setup)` runs it, minus the flag parsing, on the test's client."""
    module = example("graph_operator")
    managers: list[Manager] = []

    async def setup(manager: Manager) -> None:
        managers.append(manager)
        await module.setup(manager)

    options = RunOptions(name="static-site", namespace=namespace, graceful_shutdown_timeout_s=10)
    task = asyncio.create_task(run_manager(setup, options, client=client))

    async def ready() -> bool:
        if task.done():
            task.result()
        return bool(managers) and managers[0].is_ready()

    try:
        await eventually(ready, timeout_s=60, what="the operator's caches to sync")
        yield managers[0]
    finally:
        if managers:
            managers[0].stop()
        await asyncio.wait_for(task, timeout=30)
        with contextlib.suppress(errors.NotFound):
            await client.delete(CRDS, "staticsites.example.kro.run")


async def get(client: Client, gvr: GVR, name: str, ns: str) -> dict[str, Any] | None:
    try:
        return await client.get(gvr, name, namespace=ns)
    except errors.NotFound:
        return None


async def test_a_static_site_gets_its_graph_applied_as_an_applyset(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    async with running_operator(client, ns):
        meta = {"name": "docs", "namespace": ns}
        site = {"apiVersion": "example.kro.run/v1alpha1", "kind": "StaticSite",
                "metadata": meta, "spec": {"title": "Hello"}}  # fmt: skip
        created = await eventually(
            lambda: _create(client, site), timeout_s=30, what="the StaticSite CRD to be served"
        )
        uid = created["metadata"]["uid"]

        async def children() -> list[dict[str, Any]] | None:
            found = [
                await get(client, CONFIGMAPS, "docs-page", ns),
                await get(client, DEPLOYMENTS, "docs", ns),
                await get(client, SERVICES, "docs", ns),
            ]
            return None if None in found else [c for c in found if c is not None]

        page, deployment, service = await eventually(
            children, timeout_s=60, what="the site's three children"
        )
        assert page["data"] == {"index.html": "<h1>Hello</h1>"}
        volumes = deployment["spec"]["template"]["spec"]["volumes"]
        assert volumes == [{"name": "page", "configMap": {"name": "docs-page",
                                                          "defaultMode": 420}}]  # fmt: skip
        assert deployment["spec"]["replicas"] == 1  # the schema's default
        for child in (page, deployment, service):
            meta = child["metadata"]
            assert meta["labels"][PART_OF], "a member of the site's ApplySet"
            (owner,) = meta["ownerReferences"]
            assert (owner["kind"], owner["uid"], owner["controller"]) == ("StaticSite", uid, True)

        async def status() -> dict[str, Any] | None:
            obj = await get(client, SITES, "docs", ns)
            found = (obj or {}).get("status") or {}
            return found if found.get("page") == "docs-page" else None

        projected = await eventually(status, timeout_s=30, what="the projected status")
        assert projected["replicas"] == 1

        # A deleted child is put back (owned kinds queue their owner).
        await client.delete(CONFIGMAPS, "docs-page", namespace=ns)
        await eventually(lambda: _uid_changed(client, ns, page["metadata"]["uid"]), timeout_s=30,
                         what="the deleted ConfigMap recreated")  # fmt: skip

        # A spec edit reaches the children.
        await client.patch(SITES, "docs", {"spec": {"title": "Bye", "replicas": 2}}, namespace=ns)

        async def edited() -> bool:
            cm = await get(client, CONFIGMAPS, "docs-page", ns)
            dep = await get(client, DEPLOYMENTS, "docs", ns)
            return bool(cm and dep and cm["data"]["index.html"] == "<h1>Bye</h1>"
                        and dep["spec"]["replicas"] == 2)  # fmt: skip

        await eventually(edited, timeout_s=30, what="the edit applied to the children")

        # Deleting the site deletes its children through ownerReferences.
        await client.delete(SITES, "docs", namespace=ns)

        async def gone() -> bool:
            return await children() is None and await get(client, DEPLOYMENTS, "docs", ns) is None

        await eventually(gone, timeout_s=90, what="the children garbage-collected")


async def _create(client: Client, site: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return await client.create(SITES, site)
    except (errors.NotFound, errors.NoKindMatch):
        return None


async def _uid_changed(client: Client, ns: str, old: str) -> bool:
    cm = await get(client, CONFIGMAPS, "docs-page", ns)
    return cm is not None and cm["metadata"]["uid"] != old
