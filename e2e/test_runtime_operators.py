"""The three example operators of examples/runtime/, each on the real control plane.

Each runs in this process for the length of a block (kro.testing.operator.run_operator: a
Manager of its own, no ports, no signal handlers, ready on entry, drained on exit), watching the
test's namespace, exactly as `run(setup)` wires it; the tests change objects through the API and
assert the state of the world, waiting with deadlines. Reconcile counts come from the manager's
own controller-runtime metrics, the way an operator's dashboard would read them.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import yaml
from runtime_e2e_support import CONFIGMAPS, EXAMPLES, eventually, example

from kro.runtime import GVR, Client, Manager, errors
from kro.testing.adminapi import AdminApi
from kro.testing.operator import run_operator
from kro.testing.pytest_plugin import ClusterHandle, create_namespace
from kro.testing.wait import wait_for

SECRETS = GVR("", "v1", "secrets")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
WEBSITES = GVR("example.kro.run", "v1alpha1", "websites")
EVENTS = GVR("", "v1", "events")


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


def terminal_errors(manager: Manager, controller: str) -> int:
    """controller_runtime_terminal_reconcile_errors_total of one controller."""
    text = manager.metrics.render().decode()
    name = "controller_runtime_terminal_reconcile_errors_total"
    pattern = rf'^{name}\{{controller="{controller}"\}} (\S+)$'
    found = re.search(pattern, text, re.M)
    return int(float(found.group(1))) if found else 0


async def events_about(
    client: Client, namespace: str, name: str, reason: str
) -> list[dict[str, Any]]:
    """The core/v1 Events about object `name` with `reason` (what `kubectl describe` lists)."""
    found = await client.list(
        EVENTS, namespace=namespace, field_selector=f"involvedObject.name={name},reason={reason}"
    )
    return list(found.get("items") or [])


async def get(client: Client, gvr: GVR, name: str, ns: str) -> dict[str, Any] | None:
    try:
        return await client.get(gvr, name, namespace=ns)
    except errors.NotFound:
        return None


# -- the ConfigMap labeller: predicates ------------------------------------------------------------

TEAM = "example.kro.run/team"


def annotated(name: str, team: str | None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if team is not None:
        meta["annotations"] = {TEAM: team}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"n": "0"}}


async def test_the_labeller_follows_annotations_and_ignores_data_edits(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    labeller = example("configmap_labeller")

    async def label(name: str, team: str | None) -> bool:
        cm = await get(client, CONFIGMAPS, name, ns)
        return cm is not None and (cm["metadata"].get("labels") or {}).get(TEAM) == team

    async with run_operator(labeller.setup, client=client, namespace=ns) as op:
        await op.wait_for_reconciles(1, controller="configmap-labeller")  # kube-root-ca.crt
        await client.create(CONFIGMAPS, annotated("a", "payments"), namespace=ns)
        await eventually(lambda: label("a", "payments"), timeout_s=30, what="a's team label")
        # create + the label write's own update (labels changed): 3 with kube-root-ca.crt
        await op.wait_for(lambda: op.reconciles("configmap-labeller") == 3, what="three reconciles")
        for i in range(5):  # data edits: filtered out before the queue
            await client.patch(CONFIGMAPS, "a", {"data": {"n": str(i + 1)}}, namespace=ns)
        # A later event in the same watch: once it is reconciled, the edits above were seen.
        await client.create(CONFIGMAPS, annotated("b", "search"), namespace=ns)
        await eventually(lambda: label("b", "search"), timeout_s=30, what="b's team label")
        await op.wait_for(
            lambda: op.reconciles("configmap-labeller") == 5, what="b's two reconciles"
        )
        await asyncio.sleep(0.5)
        assert op.reconciles("configmap-labeller") == 5, "data edits must not reconcile"

        await client.patch(
            CONFIGMAPS, "a", {"metadata": {"annotations": {TEAM: "risk"}}}, namespace=ns
        )
        await eventually(lambda: label("a", "risk"), timeout_s=30, what="the label to follow")
        await client.patch(CONFIGMAPS, "a", {"metadata": {"labels": {TEAM: None}}}, namespace=ns)
        await eventually(lambda: label("a", "risk"), timeout_s=30, what="a removed label back")
        await client.patch(
            CONFIGMAPS, "a", {"metadata": {"annotations": {TEAM: None}}}, namespace=ns
        )
        await eventually(lambda: label("a", None), timeout_s=30, what="the label to go")

        skipped = annotated("c", "payments", **{"example.kro.run/skip": "true"})
        await client.create(CONFIGMAPS, skipped, namespace=ns)
        await client.create(CONFIGMAPS, annotated("d", "ops"), namespace=ns)
        await eventually(lambda: label("d", "ops"), timeout_s=30, what="d's label (after c)")
        assert await label("c", None), "a ConfigMap labelled example.kro.run/skip is left alone"
        assert op.reconciles("configmap-labeller", "error") == 0
        assert op.manager.reader.api_reads == 0, "every read came from the cache"


# -- the Secret replicator: finalizer, watches with a map function ---------------------------------

TARGETS = "example.kro.run/replicate-to"
FINALIZER = "example.kro.run/replicas"


@pytest.fixture
def target_namespaces(kube_admin: AdminApi) -> Iterator[list[str]]:
    names = [f"kro-test-target-{secrets.token_hex(3)}" for _ in range(2)]
    try:
        for name in names:
            create_namespace(kube_admin, name)
        yield names
    finally:
        for name in names:
            kube_admin.delete(f"/api/v1/namespaces/{name}")


async def test_the_replicator_keeps_copies_and_cleans_up_through_its_finalizer(
    client: Client, kube_namespace: str, target_namespaces: list[str]
) -> None:
    ns, (t1, t2) = kube_namespace, target_namespaces
    replicator = example("secret_replicator")
    source = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "annotations": {TARGETS: f"{t1}, {t2}"}},
        "stringData": {"password": "hunter2"},
    }

    async def copy_in(target: str, not_uid: str = "") -> dict[str, Any] | None:
        found = await get(client, SECRETS, "creds", target)
        if found is None or found["metadata"]["uid"] == not_uid:
            return None
        return found if found.get("data") == {"password": "aHVudGVyMg=="} else None

    async with run_operator(replicator.setup, client=client, namespace=ns) as op:
        await client.create(SECRETS, source, namespace=ns)
        first = await eventually(lambda: copy_in(t1), timeout_s=30, what="the copy in t1")
        await eventually(lambda: copy_in(t2), timeout_s=30, what="the copy in t2")
        held = await client.get(SECRETS, "creds", namespace=ns)
        assert FINALIZER in held["metadata"]["finalizers"]
        assert first["metadata"]["labels"] == {"example.kro.run/replica-of": f"{ns}.creds"}

        await client.patch(SECRETS, "creds", {"data": {"password": "eA=="}}, namespace=t1)
        await eventually(lambda: copy_in(t1), timeout_s=30, what="an edited copy restored")

        uid = (await client.get(SECRETS, "creds", namespace=t2))["metadata"]["uid"]
        await client.delete(SECRETS, "creds", namespace=t2)
        await eventually(lambda: copy_in(t2, not_uid=uid), timeout_s=30, what="a copy recreated")

        patch = {"metadata": {"annotations": {TARGETS: t1}}}
        await client.patch(SECRETS, "creds", patch, namespace=ns)

        async def gone(target: str) -> bool:
            return await get(client, SECRETS, "creds", target) is None

        await eventually(lambda: gone(t2), timeout_s=30, what="the copy no longer wanted to go")
        assert await copy_in(t1) is not None

        await client.delete(SECRETS, "creds", namespace=ns)
        await eventually(lambda: gone(t1), timeout_s=30, what="copies deleted with the source")
        await eventually(lambda: gone(ns), timeout_s=30, what="the source released")
        assert op.reconciles("secret-replicator", "error") == 0
        # Sources and copies (through the label-filtered watch) were all read from the cache.
        assert op.manager.reader.api_reads == 0


# -- the Website operator: typed CRD, owned Deployment, conditions ---------------------------------


@pytest.fixture(scope="module")
def website_crd(kube_admin: AdminApi) -> None:
    manifest = yaml.safe_load((EXAMPLES / "website-crd.yaml").read_text())
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    kube_admin.ensure(path, manifest)

    def established() -> bool:
        crd = kube_admin.get(f"{path}/websites.example.kro.run")
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for(established, timeout_s=60, interval_s=0.2, what="the Website CRD Established")


def website(name: str, image: str = "nginx:1.27", replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "example.kro.run/v1alpha1",
        "kind": "Website",
        "metadata": {"name": name},
        "spec": {"image": image, "replicas": replicas},
    }


@pytest.mark.usefixtures("website_crd")
async def test_the_website_operator_owns_its_deployment_and_reports_conditions(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    operator_module = example("website_operator")

    async def available(name: str) -> dict[str, Any] | None:
        site = await client.get(WEBSITES, name, namespace=ns)
        status = site.get("status") or {}
        for condition in status.get("conditions") or []:
            if (
                condition["type"] == "Available"
                and condition["status"] == "True"
                and condition.get("observedGeneration") == site["metadata"]["generation"]
            ):
                return site
        return None

    async with run_operator(operator_module.setup, client=client, namespace=ns) as op:
        created = await client.create(WEBSITES, website("shop"), namespace=ns)
        deployment = await eventually(
            lambda: client.get(DEPLOYMENTS, "shop", namespace=ns), timeout_s=30, what="deployment"
        )
        (ref,) = deployment["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"], ref["controller"]) == (
            "Website",
            created["metadata"]["uid"],
            True,
        )
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
        site = await eventually(lambda: available("shop"), timeout_s=120, what="Available=True")
        assert site["status"]["readyReplicas"] == 1
        # ... and told `kubectl describe website shop` through the controller's recorder
        told = await op.wait_for(
            lambda: events_about(client, ns, "shop", "MinimumReplicasAvailable"),
            what="the Normal Event of Available=True",
        )
        assert (told[0]["type"], told[0]["source"]) == ("Normal", {"component": "website"})
        assert told[0]["involvedObject"]["uid"] == created["metadata"]["uid"]

        # A reconcile that changes nothing writes nothing: the Website keeps its version and
        # its condition keeps its transition time.
        before = op.reconciles("website")
        touch = {"metadata": {"annotations": {"example.kro.run/touched": "yes"}}}
        await client.patch(DEPLOYMENTS, "shop", touch, namespace=ns)
        await op.wait_for_reconciles(before + 1, controller="website")  # the Deployment's change
        again = await client.get(WEBSITES, "shop", namespace=ns)
        assert again["metadata"]["resourceVersion"] == site["metadata"]["resourceVersion"]

        # Delete the Deployment: the owner is reconciled and puts it back.
        await client.delete(DEPLOYMENTS, "shop", namespace=ns)

        async def recreated() -> dict[str, Any] | None:
            found = await get(client, DEPLOYMENTS, "shop", ns)
            uid = deployment["metadata"]["uid"]
            return found if found is not None and found["metadata"]["uid"] != uid else None

        await eventually(recreated, timeout_s=30, what="the Deployment recreated")
        await eventually(lambda: available("shop"), timeout_s=120, what="Available again")

        # A spec edit (a new generation) reaches the Deployment.
        await client.patch(WEBSITES, "shop", {"spec": {"image": "nginx:1.28"}}, namespace=ns)

        async def new_image() -> bool:
            found = await get(client, DEPLOYMENTS, "shop", ns)
            containers = (found or {}).get("spec", {}).get("template", {}).get("spec", {})
            return bool((containers.get("containers") or [{}])[0].get("image") == "nginx:1.28")

        await eventually(new_image, timeout_s=30, what="the new image")

        # The CRD allows 50 replicas; the operator's pydantic model does not: a terminal error,
        # no Deployment, no retries.
        await client.create(WEBSITES, website("huge", replicas=50), namespace=ns)
        await op.wait_for(
            lambda: terminal_errors(op.manager, "website") >= 1,
            what="a terminal error for the invalid Website",
        )
        assert await get(client, DEPLOYMENTS, "huge", ns) is None
        (warning,) = await op.wait_for(
            lambda: events_about(client, ns, "huge", "ReconcileFailed"),
            what="the Warning Event of the failed reconcile",
        )
        assert warning["type"] == "Warning"
        assert warning["message"].startswith("InvalidObject: ")
        assert warning["message"].endswith("(not retried until the object changes)")
        assert op.manager.reader.api_reads == 0
