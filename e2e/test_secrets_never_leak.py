"""No credential and no Secret value leaves kro through an error path, on the real control plane.

The controller runs in-process as a ServiceAccount: its kubeconfig holds a TokenRequest token
(the bearer token it sends on every request) and nothing else, and it reaches kube-apiserver
through `kro.testing.faultproxy` (TLS passes through untouched). Each test plants a Secret with a
recognisable value, read by an RGD through an `externalRef` and copied into a child, and then
provokes one kind of failure:

* not found: the instance's externalRef names a Secret that does not exist yet;
* 422: the child carrying the Secret value is invalid (a bad label), so the write is rejected;
* 403: a child kind the ServiceAccount may read but not write;
* connection reset, garbage instead of the response, and silence (timeouts), by the proxy.

Each failure must be visible where a user looks (a condition, an error count on /metrics, a log
line), and afterwards nothing the controller wrote may contain the token or the Secret value:
not its captured log lines, not an Event in the namespace (or in `default`, where Events about
cluster-scoped objects go), not the status of any object in the namespace or of the RGD and its
GraphRevisions, not /metrics.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from inprocess_controller import InProcessController
from kro_harness import (
    CONFIGMAPS,
    KroEnv,
    RenderedLines,
    condition,
    meta,
    rendered_lines,
    state,
    wait_for,
)
from nginxapp_example import install_kro_crds

from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.adminapi import AdminApi
from kro.testing.faultproxy import FaultProxy, Mode, proxied_kubeconfig
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig
from kro.testing.wait import wait_for as wait_until

SECRETS = GVR("", "v1", "secrets")
EVENTS = (GVR("", "v1", "events"), GVR("events.k8s.io", "v1", "events"))
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
ARGS = (
    "--instance-requeue-interval=1s",
    "--rgd-progress-requeue-delay=1s",
    "--dynamic-controller-concurrent-reconciles=4",
    "--allow-crd-deletion=true",
    "--feature-gates=InstanceConditionEvents=true",  # Events on instances, scanned too
    "--log-level=debug",  # every log line the controller can write is scanned
)
FAULT_DEADLINE_S = 60.0
RECOVERY_DEADLINE_S = 120.0  # informers back off up to 30 s between attempts


# -- who the controller is ---------------------------------------------------------------------


@dataclass
class Identity:
    """The controller's ServiceAccount, its RBAC, and the token it authenticates with."""

    admin: AdminApi
    namespace: str
    name: str
    groups: list[str] = field(default_factory=list)
    kubeconfig: Path | None = None
    token: str = ""

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    def rules(self) -> list[dict[str, Any]]:
        """What kro needs (the chart's static role), Secrets to read, and ServiceAccounts to
        read and delete but never write: applying one is the 403 the tests provoke."""
        everything = ["get", "list", "watch", "create", "update", "patch", "delete"]
        rules: list[dict[str, Any]] = [
            {"apiGroups": ["kro.run"], "resources": ["*"], "verbs": everything},
            {"apiGroups": ["internal.kro.run"], "resources": ["*"], "verbs": everything},
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "verbs": everything,
            },
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": everything},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": everything},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]},
            {
                "apiGroups": [""],
                "resources": ["serviceaccounts"],
                "verbs": ["get", "list", "watch", "delete"],
            },
        ]
        if self.groups:
            rules.append({"apiGroups": list(self.groups), "resources": ["*"], "verbs": everything})
        return rules

    def role(self) -> dict[str, Any]:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": self.name},
            "rules": self.rules(),
        }

    def grant_group(self, group: str) -> None:
        """Let kro serve the kinds of API group `group` (a test's generated CRDs)."""
        self.groups.append(group)
        path = f"{RBAC_API}/clusterroles/{self.name}"
        live = self.admin.get(path)
        live["rules"] = self.rules()
        self.admin.request("PUT", path, live)
        wait_until(
            lambda: self.can("list", group, "anything"),
            timeout_s=30,
            what=f"RBAC to grant {self.user} the API group {group}",
        )

    def can(self, verb: str, group: str, resource: str) -> bool:
        review = self.admin.create(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": self.user,
                    "groups": ["system:serviceaccounts", "system:authenticated"],
                    "resourceAttributes": {"verb": verb, "group": group, "resource": resource},
                },
            },
        )
        return bool(review["status"].get("allowed"))


@pytest.fixture(scope="module")
def identity(kube_cluster: ClusterHandle, kube_admin: AdminApi) -> Iterator[Identity]:
    name = f"kro-leak-{secrets.token_hex(4)}"
    who = Identity(kube_admin, name, name)
    kube_admin.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    try:
        kube_admin.create(f"{RBAC_API}/clusterroles", who.role())
        kube_admin.create(
            f"{RBAC_API}/clusterrolebindings",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": name}],
            },
        )
        who.kubeconfig = service_account_kubeconfig(kube_cluster, kube_admin, name, name)
        config = yaml.safe_load(who.kubeconfig.read_text())
        who.token = config["users"][0]["user"]["token"]
        assert len(who.token) > 100, "expected a TokenRequest JWT"
        yield who
    finally:
        kube_admin.delete(f"{RBAC_API}/clusterrolebindings/{name}")
        kube_admin.delete(f"{RBAC_API}/clusterroles/{name}")
        kube_admin.delete(f"/api/v1/namespaces/{name}")


# -- the controller, behind the proxy, with its log lines captured -----------------------------


@dataclass
class Controller:
    """`kro controller` in-process (as the ServiceAccount, through the proxy), the proxy, and
    what the controller logged."""

    process: InProcessController
    proxy: FaultProxy
    logs: RenderedLines
    identity: Identity


@pytest.fixture(scope="module")
def proxy(kube_cluster: ClusterHandle) -> Iterator[FaultProxy]:
    with FaultProxy.for_server(kube_cluster.server) as running:
        yield running


@pytest.fixture(scope="module")
def controller(
    identity: Identity,
    proxy: FaultProxy,
    kube_admin: AdminApi,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Controller]:
    assert identity.kubeconfig is not None
    kubeconfig = proxied_kubeconfig(
        identity.kubeconfig, proxy.url, tmp_path_factory.mktemp("leak") / "kubeconfig"
    )
    install_kro_crds(kube_admin)  # as `helm install` does, before the controller starts
    process = InProcessController(kubeconfig, ARGS).start()
    with rendered_lines() as logs:
        try:
            yield Controller(process, proxy, logs, identity)
        finally:
            proxy.set_mode(Mode.PASS)
            process.stop()


@pytest.fixture
async def admin_client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    """The test's own client: admin credentials, straight to the API server (no proxy)."""
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as client:
        yield client


@pytest.fixture
async def kro(
    controller: Controller, admin_client: Client, kube_namespace: str
) -> AsyncIterator[KroEnv]:
    # KroEnv only keeps the controller for its callers; this module's is `kro controller` itself.
    env = KroEnv(admin_client, kube_namespace, controller.process)  # type: ignore[arg-type]
    controller.identity.grant_group(env.group)
    try:
        yield env
    finally:
        controller.proxy.set_mode(Mode.PASS)
        await env.cleanup()


# -- the planted Secret and an RGD that reads it -----------------------------------------------


@dataclass(frozen=True)
class Planted:
    name: str
    value: str

    @property
    def needles(self) -> dict[str, str]:
        return {
            "secret value": self.value,
            "secret value, base64": base64.b64encode(self.value.encode()).decode(),
        }


def new_planted() -> Planted:
    return Planted("db-credentials", f"pl4nted-S3CRET-{secrets.token_hex(8)}")


async def plant(kro: KroEnv, planted: Planted) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": planted.name, "namespace": kro.namespace},
        "stringData": {"password": planted.value},
    }
    await kro.client.create(SECRETS, secret, namespace=kro.namespace)


def reader_rgd(
    kro: KroEnv, name: str, kind: str, *, forbidden_child: bool = False
) -> dict[str, Any]:
    """`<name>-config`, a ConfigMap holding the Secret's password, labelled from the spec (an
    invalid label makes the write a 422); optionally a ServiceAccount annotated with it (403)."""
    resources: list[dict[str, Any]] = [
        {
            "id": "creds",
            "externalRef": {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "${schema.spec.secretName}"},
            },
        },
        {
            "id": "config",
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "${schema.metadata.name}-config",
                    "labels": {"tier": "${schema.spec.tier}"},
                },
                "data": {
                    "password": "${string(creds.data.password)}",
                    "note": "${schema.spec.note}",
                },
            },
        },
    ]
    if forbidden_child:
        resources.append(
            {
                "id": "account",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {
                        "name": "${schema.metadata.name}-account",
                        "annotations": {"e2e.kro.run/password": "${string(creds.data.password)}"},
                    },
                },
            }
        )
    spec = {
        "secretName": "string",
        "tier": "string | default=backend",
        "note": "string | default=first",
    }
    return kro.rgd(name, kind, spec, resources)


async def ready_instance(kro: KroEnv, kind: str, planted: Planted) -> GVR:
    await kro.apply_instance(kind, "app", {"secretName": planted.name})
    gvr = await kro.gvr_of(kind)
    await kro.wait_instance(gvr, "app", timeout_s=RECOVERY_DEADLINE_S)
    child = await kro.get(CONFIGMAPS, "app-config")
    assert child["data"]["password"] == planted.value  # the Secret really was read and used
    return gvr


# -- looking for leaks ---------------------------------------------------------------------------


async def namespaced_resources(client: Client) -> list[GVR]:
    """Every namespaced resource that can be listed, from discovery."""
    found: list[GVR] = []
    core = await client.request("GET", "/api/v1")
    versions = [("", "v1", core)]
    for group in (await client.request("GET", "/apis"))["groups"]:
        group_version = group["preferredVersion"]["groupVersion"]
        with contextlib.suppress(NotFound):
            versions.append(
                (
                    group["name"],
                    group["preferredVersion"]["version"],
                    await client.request("GET", f"/apis/{group_version}"),
                )
            )
    for group_name, version, document in versions:
        for resource in document.get("resources") or []:
            if (
                "/" not in resource["name"]
                and resource.get("namespaced")
                and "list" in resource.get("verbs", [])
            ):
                found.append(GVR(group_name, version, resource["name"]))
    return found


async def written_by_the_controller(kro: KroEnv, controller: Controller) -> dict[str, str]:
    """Where the controller's words end up, as text: place -> content."""
    client, places = kro.client, {}
    for gvr in await namespaced_resources(client):
        with contextlib.suppress(NotFound):
            items, _ = await client.list_all(gvr, namespace=kro.namespace)
            for item in items:
                if item.get("status"):
                    where = f"status of {gvr.resource}/{meta(item).get('name')}"
                    places[where] = json.dumps(item["status"])
    for gvr in EVENTS:
        for namespace in (kro.namespace, "default"):
            items, _ = await client.list_all(gvr, namespace=namespace)
            for item in items:
                places[f"{gvr.group or 'core'} Event {namespace}/{meta(item)['name']}"] = (
                    json.dumps(item)
                )
    for rgd in (await client.list(RGDS))["items"]:
        if str(meta(rgd)["name"]).endswith(kro.suffix):
            places[f"status of RGD {meta(rgd)['name']}"] = json.dumps(rgd.get("status"))
    for revision in (await client.list(GRAPH_REVISIONS))["items"]:
        places[f"status of GraphRevision {meta(revision)['name']}"] = json.dumps(
            revision.get("status")
        )
    places["/metrics"] = controller.process.metrics().text
    for number, line in enumerate(controller.logs.lines):
        places[f"log line {number}"] = line
    return places


async def assert_nothing_leaked(kro: KroEnv, controller: Controller, planted: Planted) -> None:
    token = controller.identity.token
    needles = {
        "bearer token": token,
        "bearer token claims": token.split(".")[1],
        "bearer token signature": token.rsplit(".", 1)[1],
        **planted.needles,
    }
    places = await written_by_the_controller(kro, controller)
    assert any(p.startswith("log line") for p in places), "no controller log lines captured"
    assert any(p.startswith("status of") for p in places), "no status found to scan"

    def excerpt(text: str, at: int) -> str:
        before = text[max(0, at - 80) : at]
        for needle in needles.values():  # a failure message must not print them either
            before = before.replace(needle, "<NEEDLE>")
        return f"...{before}<HERE>..."

    hits = [
        f"{what} in {where}: {excerpt(text, at)}"
        for where, text in places.items()
        for what, needle in needles.items()
        if (at := text.find(needle)) >= 0
    ]
    assert not hits, "\n".join(hits)


# -- the tests -----------------------------------------------------------------------------------


async def test_a_missing_secret_then_a_ready_instance(kro: KroEnv, controller: Controller) -> None:
    planted = new_planted()
    rgd = reader_rgd(kro, "reader", "LeakReader")
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    await kro.apply_instance("LeakReader", "app", {"secretName": planted.name})
    gvr = await kro.gvr_of("LeakReader")
    waiting = await kro.wait_instance(
        gvr,
        "app",
        lambda o: (
            'external reference "creds": not found'
            in condition(o, "ResourcesReady").get("message", "")
        ),
        what="the instance waiting for its Secret (not found)",
    )
    assert state(waiting) == "IN_PROGRESS"
    await plant(kro, planted)
    await kro.wait_instance(gvr, "app", timeout_s=RECOVERY_DEADLINE_S)
    assert (await kro.get(CONFIGMAPS, "app-config"))["data"]["password"] == planted.value
    await assert_nothing_leaked(kro, controller, planted)


async def test_an_invalid_child_carrying_the_secret(kro: KroEnv, controller: Controller) -> None:
    planted = new_planted()
    await plant(kro, planted)
    rgd = reader_rgd(kro, "invalid", "LeakInvalid")
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    await kro.apply_instance(
        "LeakInvalid", "app", {"secretName": planted.name, "tier": "not a valid label!"}
    )
    gvr = await kro.gvr_of("LeakInvalid")
    failed = await kro.wait_instance(
        gvr,
        "app",
        lambda o: "Invalid value" in condition(o, "ResourcesReady").get("message", ""),
        what="ResourcesReady=False with the API server's 422",
    )
    message = condition(failed, "ResourcesReady")["message"]
    assert "not a valid label!" in message  # the user sees what is wrong
    with pytest.raises(NotFound):
        await kro.get(CONFIGMAPS, "app-config")
    await assert_nothing_leaked(kro, controller, planted)


async def test_a_forbidden_child_carrying_the_secret(kro: KroEnv, controller: Controller) -> None:
    planted = new_planted()
    await plant(kro, planted)
    rgd = reader_rgd(kro, "forbidden", "LeakForbidden", forbidden_child=True)
    await kro.apply_rgd(rgd)
    name = rgd["metadata"]["name"]

    async def served_but_lacking() -> dict[str, Any] | None:
        """Active (kind and controller ready), with the pre-flight naming what kro lacks."""
        live = await kro.get_rgd(name)
        lacking = condition(live, "PermissionsGranted").get("status") == "False"
        return live if state(live) == "Active" and lacking else None

    live = await wait_for(served_but_lacking, what=f"RGD {name} Active, PermissionsGranted False")
    assert "serviceaccounts: create, patch" in condition(live, "PermissionsGranted")["message"]
    await kro.apply_instance("LeakForbidden", "app", {"secretName": planted.name})
    gvr = await kro.gvr_of("LeakForbidden")
    failed = await kro.wait_instance(
        gvr,
        "app",
        lambda o: "forbidden" in condition(o, "ResourcesReady").get("message", "").lower(),
        what="ResourcesReady=False with the API server's 403",
    )
    message = condition(failed, "ResourcesReady")["message"]
    assert controller.identity.user in message  # says who was refused, not with what
    await assert_nothing_leaked(kro, controller, planted)


FAULTS = {
    Mode.RESET: ("ClientOSError", "ClientConnectorError", "ServerDisconnectedError"),
    Mode.GARBAGE: ("TLS failed", "ClientOSError", "ClientPayloadError", "ServerDisconnected"),
    Mode.STALL: ("TimeoutError",),
}


def error_requests(controller: Controller) -> float:
    """Requests that got no HTTP answer, as /metrics counts them."""
    return controller.process.metrics().total("rest_client_requests_total", code="<error>")


@pytest.mark.parametrize("mode", list(FAULTS), ids=[m.value for m in FAULTS])
async def test_a_broken_connection_to_the_api_server(
    kro: KroEnv, controller: Controller, mode: Mode
) -> None:
    planted = new_planted()
    await plant(kro, planted)
    kind = f"Leak{mode.value.capitalize()}"
    rgd = reader_rgd(kro, f"net-{mode.value}", kind)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await ready_instance(kro, kind, planted)

    proxy = controller.proxy
    faults, errors = proxy.faults(mode), error_requests(controller)
    logged = len(controller.logs.mentioning(*FAULTS[mode]))
    proxy.set_mode(mode)
    try:
        # A change the controller must act on while its connection is broken.
        await kro.apply_instance(kind, "app", {"secretName": planted.name, "note": "second"})

        observed: dict[str, float] = {}

        async def failing() -> bool:
            observed["connections broken"] = proxy.faults(mode) - faults
            observed["failed requests counted"] = error_requests(controller) - errors
            observed["failures logged"] = len(controller.logs.mentioning(*FAULTS[mode])) - logged
            return all(value > 0 for value in observed.values())

        try:
            await wait_for(
                failing,
                what=f"the controller's requests to fail through the proxy ({mode.value})",
                timeout_s=FAULT_DEADLINE_S,
                interval_s=0.5,
            )
        except AssertionError as error:
            raise AssertionError(f"{error}; observed: {observed}") from None
    finally:
        proxy.set_mode(Mode.PASS)

    recovered = await kro.wait_instance(gvr, "app", timeout_s=RECOVERY_DEADLINE_S)
    assert condition(recovered, "Ready")["status"] == "True"

    async def converged() -> bool:
        data = (await kro.get(CONFIGMAPS, "app-config")).get("data") or {}
        return data.get("note") == "second"

    await wait_for(
        converged, what="the change made during the fault", timeout_s=RECOVERY_DEADLINE_S
    )
    await assert_nothing_leaked(kro, controller, planted)
