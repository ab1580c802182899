"""The four example Graphs of docs/graph.md, applied as the page prints them, on the real control
plane (gate `GraphKind` on), each checked against the page's "What to expect".

The manifests are read from the page itself, so an example that stops working, or a page that
stops saying what kro does, fails here. They create fixed cluster-wide names (their Namespaces
and ClusterRoles), so each test deletes what it created, Graphs first (so kro tears down what
they applied while it still runs).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from graph_support import GRAPHS, delete_graph, graph_condition, wait_for_graph
from kro_harness import CONTROLLER_ARGS, NAMESPACES, KroEnv, kro_fixtures, meta

from kro.controllers.crd import wait_established
from kro.runtime.client import Client
from kro.runtime.discovery import RESTMapper
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVK, GVR
from kro.testing.waiting import eventually

controller, kro = kro_fixtures(
    (
        *CONTROLLER_ARGS[:-2],
        "--feature-gates=GraphKind=true",
        "--controller-namespace=kro-system",
        "--controller-service-account=kro",
        "--log-level=info",
    )
)

PAGE = Path(__file__).resolve().parents[1] / "docs" / "graph.md"
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.DOTALL | re.MULTILINE)
CONFIGMAPS = GVR("", "v1", "configmaps")
QUOTAS = GVR("", "v1", "resourcequotas")
POLICIES = GVR("networking.k8s.io", "v1", "networkpolicies")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
SERVICES = GVR("", "v1", "services")
CLAIMS = GVR("claims.example.com", "v1alpha1", "configclaims")
TIMEOUT_S = 90.0


def _example(graph_name: str) -> list[dict[str, Any]]:
    """Every document of the YAML block on the page that holds the Graph `graph_name`."""
    for block in YAML_BLOCK.findall(PAGE.read_text()):
        documents = [d for d in yaml.safe_load_all(block) if d]
        if any(d["kind"] == "Graph" and d["metadata"]["name"] == graph_name for d in documents):
            return documents
    raise AssertionError(f"docs/graph.md has no Graph {graph_name}")


_condition = graph_condition


class Page:
    """Creates manifests as `kubectl create` would, remembers them, deletes them afterwards."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.mapper = RESTMapper(client)
        self.created: list[tuple[GVR, str, str | None]] = []

    async def create(self, documents: list[dict[str, Any]]) -> None:
        for document in documents:
            info = await self.mapper.resource_for(GVK.from_object(document))
            namespace = document["metadata"].get("namespace") if info.namespaced else None
            await self.client.create(info.gvr, document, namespace=namespace)
            self.created.append((info.gvr, document["metadata"]["name"], namespace))
            if document["kind"] == "CustomResourceDefinition":
                await wait_established(self.client, document["metadata"]["name"])
                self.mapper.invalidate()

    async def graph(self, namespace: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = await self.client.get(GRAPHS, name, namespace=namespace)
        return found

    async def wait(
        self, namespace: str, name: str, kind: str, status: str, reason: str = ""
    ) -> dict[str, Any]:
        return await wait_for_graph(
            self.client, namespace, name, kind, status, reason=reason, timeout_s=TIMEOUT_S
        )

    async def delete_graph(self, namespace: str, name: str) -> None:
        await delete_graph(self.client, namespace, name, timeout_s=TIMEOUT_S)

    async def cleanup(self) -> None:
        for gvr, name, namespace in reversed(self.created):
            if gvr == GRAPHS:
                with contextlib.suppress(AssertionError):
                    await self.delete_graph(str(namespace), name)
        for gvr, name, namespace in reversed(self.created):
            if gvr != GRAPHS:
                with contextlib.suppress(NotFound):
                    await self.client.delete(gvr, name, namespace=namespace)


@pytest.fixture
async def page(kro: KroEnv) -> AsyncIterator[Page]:
    manifests = Page(kro.client)
    try:
        yield manifests
    finally:
        await manifests.cleanup()


async def _absent(client: Client, gvr: GVR, name: str, namespace: str) -> bool:
    try:
        found = await client.get(gvr, name, namespace=namespace)
    except NotFound:
        return True
    return bool(meta(found).get("deletionTimestamp"))


async def _labelled(page: Page, name: str, labels: dict[str, str | None]) -> None:
    """Create the Namespace `name` if needed, then set (or with None remove) `labels`."""
    try:
        await page.client.get(NAMESPACES, name)
    except NotFound:
        await page.create([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}])
    await page.client.patch(NAMESPACES, name, {"metadata": {"labels": labels}})


async def test_the_decorator_follows_the_label(page: Page) -> None:
    """'Label another Namespace and its quota appears; remove the label and it is deleted;
    delete the Graph and all of them go. The Namespaces themselves are only read.'"""
    client, home = page.client, "platform-quotas"
    label = "quota.example.com/size"
    await _labelled(page, "docs-quota-a", {label: "small"})
    await page.create(_example("small-quotas"))
    graph = await page.wait(home, "small-quotas", "Ready", "True")
    assert _condition(graph, "Accepted")["message"] == "compiled 2 nodes"
    quota = await client.get(QUOTAS, "small", namespace="docs-quota-a")
    assert meta(quota)["labels"]["kro.run/node-id"] == "quotas"
    assert meta(quota)["labels"]["kro.run/collection-size"] == "1"

    await _labelled(page, "docs-quota-b", {label: "small"})

    async def both() -> list[dict[str, Any]] | None:
        graph = await page.graph(home, "small-quotas")
        entries = (graph.get("status") or {}).get("managedResources") or []
        ready = _condition(graph, "Ready").get("status") == "True"
        done = ready and len(entries) == 2 and all(e.get("uid") for e in entries)
        return entries if done else None

    entries = await eventually(both, what="a quota in both Namespaces", timeout_s=TIMEOUT_S)
    assert sorted(e["namespace"] for e in entries) == ["docs-quota-a", "docs-quota-b"]
    for namespace in ("docs-quota-a", "docs-quota-b"):
        quota = await client.get(QUOTAS, "small", namespace=namespace)
        assert meta(quota)["labels"]["kro.run/collection-size"] == "2"

    await _labelled(page, "docs-quota-a", {label: None})

    async def unlabelled_pruned() -> bool:
        return await _absent(client, QUOTAS, "small", "docs-quota-a")

    await eventually(unlabelled_pruned, what="the quota of the unlabelled one", timeout_s=TIMEOUT_S)
    await page.delete_graph(home, "small-quotas")
    assert await _absent(client, QUOTAS, "small", "docs-quota-b")
    for namespace in ("docs-quota-a", "docs-quota-b"):
        assert not meta(await client.get(NAMESPACES, namespace)).get("deletionTimestamp")


async def test_the_fan_in_lists_every_labelled_namespace(page: Page) -> None:
    """'labelling a third updates it in place (same UID); removing the label from all of them
    deletes it and the Graph stays Ready with an empty managedResources'."""
    client, home, label = page.client, "metrics", "metrics.example.com/scrape"
    for name in ("docs-scrape-b", "docs-scrape-a"):
        await _labelled(page, name, {label: "yes"})
    await page.create(_example("scrape-sources"))
    await page.wait(home, "scrape-sources", "Ready", "True")

    def admitted(policy: Mapping[str, Any]) -> list[str]:
        expression = policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]
        return list(expression["matchExpressions"][0]["values"])

    policy = await client.get(POLICIES, "admit-scrapers", namespace=home)
    assert admitted(policy) == ["docs-scrape-a", "docs-scrape-b"]
    uid = meta(policy)["uid"]

    await _labelled(page, "docs-scrape-c", {label: "yes"})

    async def three() -> dict[str, Any] | None:
        found: dict[str, Any] = await client.get(POLICIES, "admit-scrapers", namespace=home)
        return found if len(admitted(found)) == 3 else None

    policy = await eventually(three, what="the third Namespace admitted", timeout_s=TIMEOUT_S)
    assert admitted(policy) == ["docs-scrape-a", "docs-scrape-b", "docs-scrape-c"]
    assert meta(policy)["uid"] == uid

    for name in ("docs-scrape-a", "docs-scrape-b", "docs-scrape-c"):
        await _labelled(page, name, {label: None})

    async def emptied() -> dict[str, Any] | None:
        if not await _absent(client, POLICIES, "admit-scrapers", home):
            return None
        graph = await page.graph(home, "scrape-sources")
        ready = _condition(graph, "Ready").get("status") == "True"
        empty = not (graph.get("status") or {}).get("managedResources")
        return graph if ready and empty else None

    await eventually(emptied, what="the policy deleted, the Graph Ready", timeout_s=TIMEOUT_S)


async def test_the_bundle_comes_up_in_order_and_goes(page: Page) -> None:
    """'four entries in status.managedResources, in apply order ... then Ready=True. Removing
    the frontDoor node deletes the Service and leaves the rest. Deleting the Graph deletes the
    four objects.'"""
    client, home = page.client, "status-page"
    documents = _example("status-page")
    await page.create(documents)
    graph = await page.wait(home, "status-page", "Ready", "True")
    entries = graph["status"]["managedResources"]
    order = [e["nodeID"] for e in entries]
    assert set(order[:2]) == {"runAs", "content"}
    assert order[2:] == ["web", "frontDoor"]
    assert all(e["uid"] for e in entries)
    service = await client.get(SERVICES, "status-page", namespace=home)
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "status-page"}

    spec = {**graph["spec"], "nodes": [n for n in graph["spec"]["nodes"] if n["id"] != "frontDoor"]}
    await client.patch(GRAPHS, "status-page", {"spec": spec}, namespace=home)

    async def service_pruned() -> bool:
        return await _absent(client, SERVICES, "status-page", home)

    await eventually(service_pruned, what="the Service pruned", timeout_s=TIMEOUT_S)
    assert not await _absent(client, DEPLOYMENTS, "status-page", home)
    await page.delete_graph(home, "status-page")
    assert await _absent(client, DEPLOYMENTS, "status-page", home)
    assert await _absent(client, CONFIGMAPS, "status-page-content", home)


async def test_claims_pick_one_winner_and_write_it_back(page: Page) -> None:
    """The claims example, in the order its 'What to expect' tells it."""
    client = page.client
    documents = _example("config-claims")
    crd = [d for d in documents if d["kind"] == "CustomResourceDefinition"]
    claims = [d for d in documents if d["kind"] == "ConfigClaim"]
    rest = [d for d in documents if d not in crd and d not in claims]

    # Created before the CRD is served: not accepted, then compiled without an edit.
    await page.create(rest)
    refused = await page.wait("claims-system", "config-claims", "Accepted", "False", "InvalidGraph")
    assert "claims.example.com/v1alpha1" in _condition(refused, "Accepted")["message"]
    await page.create(crd)
    accepted = await page.wait("claims-system", "config-claims", "Accepted", "True")
    assert _condition(accepted, "Accepted")["message"] == "compiled 4 nodes"

    await page.create(claims)

    async def settled() -> dict[str, Any] | None:
        graph = await page.graph("claims-system", "config-claims")
        if _condition(graph, "Ready").get("status") != "True":
            return None
        try:
            banner = await client.get(CONFIGMAPS, "banner", namespace="shop")
        except NotFound:
            return None
        statuses = {
            c: (await client.get(CLAIMS, c, namespace="shop")).get("status")
            for c in ("sale", "fallback")
        }
        return {"graph": graph, "banner": banner, "statuses": statuses}

    seen = await eventually(settled, what="one winner written back", timeout_s=TIMEOUT_S)
    assert seen["banner"]["data"] == {"text": "Winter sale"}
    target = "v1 ConfigMap shop/banner"
    assert seen["statuses"] == {
        "sale": {"active": True, "target": target},
        "fallback": {"active": False, "target": target},
    }
    status = seen["graph"]["status"]
    assert [(e["kind"], e["name"]) for e in status["managedResources"]] == [("ConfigMap", "banner")]
    contributions = status["contributions"]
    assert sorted(c["name"] for c in contributions) == ["fallback", "sale"]
    assert {c["subresource"] for c in contributions} == {"status"}
    (manager,) = {c["fieldManager"] for c in contributions}
    sale = await client.get(CLAIMS, "sale", namespace="shop")
    assert any(
        f["manager"] == manager and f.get("subresource") == "status"
        for f in meta(sale)["managedFields"]
    )
    uid = meta(seen["banner"])["uid"]

    await client.delete(CLAIMS, "sale", namespace="shop")

    async def failed_over() -> bool:
        banner = await client.get(CONFIGMAPS, "banner", namespace="shop")
        fallback = await client.get(CLAIMS, "fallback", namespace="shop")
        return banner["data"] == {"text": "Welcome"} and bool(
            (fallback.get("status") or {}).get("active")
        )

    await eventually(failed_over, what="fallback takes over", timeout_s=TIMEOUT_S)
    assert meta(await client.get(CONFIGMAPS, "banner", namespace="shop"))["uid"] == uid

    await page.delete_graph("claims-system", "config-claims")
    assert await _absent(client, CONFIGMAPS, "banner", "shop")
    fallback = await client.get(CLAIMS, "fallback", namespace="shop")
    assert not fallback.get("status")
