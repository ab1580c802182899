"""Self-bootstrapping graphs on the real control plane (gate `DeferredSchemaResolution` on).

* A claims controller as a `Graph` (the singleton pattern): one node installs the `Claim` CRD,
  a `ref` reads every Claim once the CRD is Established, a `def` flattens them, a `template`
  with a computed kind applies the winner's target, a `patch` writes `status.active` back to
  every claimant. Before this gate the Graph was refused (`schema not found`) and nothing was
  applied; now it is Accepted, creates its CRD and converges through it: the highest priority
  wins, and when the winner goes the next claimant takes over with the target's UID unchanged.
* A node whose kind has no CRD yet waits (`SchemaPending`, one `WaitingForCRD` Event) and is
  applied as soon as the CRD is created, without an edit and without a poll interval.
* An RGD whose first resource installs a CRD and whose second, gated by `includeWhen` on the
  first's readiness, uses it: Active, its instance converges, and its GraphRevision is compiled
  again, typed, once the kind is served.
* What does not change: the same RGD with the gate off is refused as before; a typo'd kind
  without an includeWhen still fails at build time with the gate on; a discovery outage (an
  aggregated API whose server is down) is an error, never a deferral.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from graph_support import GRAPHS, delete_graph, graph_condition, wait_for_graph
from kro_harness import CONTROLLER_ARGS, KroEnv, condition, kro_env_with, kro_fixtures, meta

from kro.controllers.crd import CRDS
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.waiting import eventually

GATES = "InstanceConditionEvents=true,GraphKind=true,DeferredSchemaResolution=true"
ARGS = (
    *CONTROLLER_ARGS[:-2],
    f"--feature-gates={GATES}",
    "--controller-namespace=kro-system",
    "--controller-service-account=kro",
    "--log-level=info",
)
controller, kro = kro_fixtures(ARGS)

SERVICE_ACCOUNTS = GVR("", "v1", "serviceaccounts")
CLUSTER_ROLES = GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = GVR("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
CONFIGMAPS = GVR("", "v1", "configmaps")
EVENTS = GVR("", "v1", "events")
API_SERVICES = GVR("apiregistration.k8s.io", "v1", "apiservices")
TIMEOUT_S = 60.0
WRITE = ["get", "list", "watch", "create", "update", "patch", "delete"]
ESTABLISHED = (
    '${crd.status.?conditions.orValue([]).exists(c, c.type == "Established" && '
    'c.status == "True")}'
)


def claim_crd(group: str, kind: str = "Claim") -> dict[str, Any]:
    """A namespaced kind with a priority, a target to apply, and a status kro writes back."""
    plural = kind.lower() + "s"
    target = {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}},
            },
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"priority": {"type": "integer", "default": 0}, "target": target},
            },
            "status": {
                "type": "object",
                "properties": {"active": {"type": "boolean"}, "claim": {"type": "string"}},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


BEATEN = (
    "claims.exists(o, o.identity == c.identity && o.key != c.key && "
    "(o.priority > c.priority || (o.priority == c.priority && o.key < c.key)))"
)


def claims_nodes(group: str) -> list[dict[str, Any]]:
    """The singleton pattern, with the CRD it reads installed by its own first node."""
    api_version = f"{group}/v1alpha1"
    return [
        {"id": "crd", "template": claim_crd(group)},
        {
            "id": "claimants",
            "includeWhen": [ESTABLISHED],
            "ref": {"apiVersion": api_version, "kind": "Claim", "metadata": {"selector": {}}},
        },
        {
            "id": "claims",
            "forEach": [{"s": "${claimants}"}],
            "def": {
                "key": '${s.metadata.namespace + "/" + s.metadata.name}',
                "name": "${s.metadata.name}",
                "namespace": "${s.metadata.namespace}",
                "priority": "${s.spec.priority}",
                "target": "${s.spec.target}",
                "identity": (
                    '${s.spec.target.kind + "|" + s.spec.target.metadata.namespace + "|" + '
                    "s.spec.target.metadata.name}"
                ),
            },
        },
        {
            "id": "targets",
            "forEach": [{"c": "${claims.filter(c, !" + BEATEN + ")}"}],
            "template": {
                "apiVersion": "${c.target.apiVersion}",
                "kind": "${c.target.kind}",
                "metadata": {
                    "name": "${c.target.metadata.name}",
                    "namespace": "${c.target.metadata.namespace}",
                },
                "data": "${c.target.?data.orValue({})}",
            },
        },
        {
            "id": "claimStatus",
            "forEach": [{"c": "${claims}"}],
            "includeWhen": ["${size(claims) > 0}"],
            "patch": {
                "apiVersion": api_version,
                "kind": "Claim",
                "metadata": {"name": "${c.name}", "namespace": "${c.namespace}"},
                "status": {"active": "${!" + BEATEN + "}", "claim": "${c.identity}"},
            },
        },
    ]


class World:
    """Graphs, their ServiceAccounts and cluster objects of one test; deleted after it."""

    def __init__(self, env: KroEnv) -> None:
        self.env = env
        self.client = env.client
        self.namespace = env.namespace
        self.cluster: list[tuple[GVR, str]] = []
        self.graphs: list[str] = []

    async def create(self, gvr: GVR, obj: dict[str, Any], namespace: str | None = None) -> Any:
        created = await self.client.create(gvr, obj, namespace=namespace)
        if namespace is None:
            self.cluster.append((gvr, obj["metadata"]["name"]))
        return created

    async def applier(self, name: str, rules: list[dict[str, Any]]) -> str:
        await self.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, self.namespace)
        role = f"{self.namespace}-{name}"
        await self.create(CLUSTER_ROLES, {"metadata": {"name": role}, "rules": rules})
        subject = {"kind": "ServiceAccount", "name": name, "namespace": self.namespace}
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}
        await self.create(
            CLUSTER_ROLE_BINDINGS,
            {"metadata": {"name": role}, "roleRef": ref, "subjects": [subject]},
        )
        return name

    async def graph(self, name: str, nodes: list[dict[str, Any]], account: str) -> None:
        body = {
            "apiVersion": "kro.run/v1alpha1",
            "kind": "Graph",
            "metadata": {"name": name},
            "spec": {"nodes": nodes, "serviceAccountName": account},
        }
        self.graphs.append(name)
        await self.client.create(GRAPHS, body, namespace=self.namespace)

    async def wait(self, name: str, kind: str, status: str, reason: str = "") -> dict[str, Any]:
        return await wait_for_graph(self.client, self.namespace, name, kind, status, reason=reason)

    async def cleanup(self) -> None:
        for name in self.graphs:
            with contextlib.suppress(AssertionError):
                await delete_graph(self.client, self.namespace, name)
        for gvr, name in reversed(self.cluster):
            with contextlib.suppress(NotFound):
                await self.client.delete(gvr, name)


@pytest.fixture
async def world(kro: KroEnv) -> AsyncIterator[World]:
    found = World(kro)
    try:
        yield found
    finally:
        await found.cleanup()


def group_of(env: KroEnv, word: str) -> str:
    return f"{word}-{env.suffix}.deferred.example.com"


async def _events(world: World, name: str, reason: str) -> list[dict[str, Any]]:
    page = await world.client.list(
        EVENTS, namespace=world.namespace, field_selector=f"involvedObject.name={name}"
    )
    return [e for e in page.get("items") or () if e.get("reason") == reason]


EXPLAIN = (
    "import argparse, sys\n"
    "from kro.cli.explain import add_explain_command\n"
    "parser = argparse.ArgumentParser(prog='kro')\n"
    "add_explain_command(parser.add_subparsers(dest='command', required=True))\n"
    "args = parser.parse_args(sys.argv[1:])\n"
    "sys.exit(args.handler(args))\n"
)


def _explain(env: KroEnv, *args: str) -> dict[str, Any]:
    """`kro explain ... -o json` as a user would run it (a process of its own)."""
    assert env.controller is not None
    kubeconfig = f"--kubeconfig={env.controller.kubeconfig}"
    done = subprocess.run(
        [sys.executable, "-c", EXPLAIN, "explain", *args, kubeconfig, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


# -- Graphs -------------------------------------------------------------------------------------


async def test_a_graph_installs_its_crd_then_claims_through_it(world: World) -> None:
    client, namespace = world.client, world.namespace
    group = group_of(world.env, "claims")
    account = await world.applier(
        "claims",
        [
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "verbs": WRITE,
            },
            {"apiGroups": [group], "resources": ["claims"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [group], "resources": ["claims/status"], "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": WRITE},
        ],
    )
    await world.graph("claims", claims_nodes(group), account)
    graph = await world.wait("claims", "Ready", "True")
    accepted = graph_condition(graph, "Accepted")
    assert (accepted["status"], accepted["message"]) == ("True", "compiled 5 nodes")
    assert (await client.get(CRDS, f"claims.{group}"))["spec"]["group"] == group
    claims = GVR(group, "v1alpha1", "claims")

    def claim(name: str, priority: int) -> dict[str, Any]:
        target = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "shared", "namespace": namespace},
            "data": {"owner": name},
        }
        return {
            "apiVersion": f"{group}/v1alpha1",
            "kind": "Claim",
            "metadata": {"name": name},
            "spec": {"priority": priority, "target": target},
        }

    await client.create(claims, claim("low", 10), namespace=namespace)
    await client.create(claims, claim("high", 20), namespace=namespace)

    async def owned_by(owner: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = await client.get(CONFIGMAPS, "shared", namespace=namespace)
        except NotFound:
            return None
        return found if (found.get("data") or {}).get("owner") == owner else None

    shared = await eventually(lambda: owned_by("high"), what="high wins", timeout_s=TIMEOUT_S)

    async def active(name: str, value: bool) -> bool:
        status = (await client.get(claims, name, namespace=namespace)).get("status") or {}
        return status.get("active") is value

    await eventually(lambda: active("high", True), what="high active", timeout_s=TIMEOUT_S)
    await eventually(lambda: active("low", False), what="low inactive", timeout_s=TIMEOUT_S)
    low = await client.get(claims, "low", namespace=namespace)
    assert low["status"]["claim"] == f"ConfigMap|{namespace}|shared"

    await client.delete(claims, "high", namespace=namespace)
    after = await eventually(lambda: owned_by("low"), what="low takes over", timeout_s=TIMEOUT_S)
    assert meta(after)["uid"] == meta(shared)["uid"]  # updated in place, never re-created
    await eventually(lambda: active("low", True), what="low active", timeout_s=TIMEOUT_S)
    graph = await world.wait("claims", "Ready", "True")
    assert [(e["nodeID"], e["kind"]) for e in graph["status"]["managedResources"]] == [
        ("crd", "CustomResourceDefinition"),
        ("targets", "ConfigMap"),
    ]


async def test_a_node_waits_for_its_crd_and_applies_when_it_appears(world: World) -> None:
    """No CRD at all: the node waits (`SchemaPending`, one Warning Event), nothing is failed
    or pruned; the CRD created later is picked up at once (no edit, no poll interval)."""
    client, namespace = world.client, world.namespace
    group = group_of(world.env, "later")
    account = await world.applier(
        "later",
        [
            {"apiGroups": [group], "resources": ["widgets"], "verbs": WRITE},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": WRITE},
        ],
    )
    nodes: list[dict[str, Any]] = [
        {
            "id": "config",
            "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"}},
        },
        {
            "id": "widget",
            "optional": True,
            "template": {
                "apiVersion": f"{group}/v1alpha1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"priority": 3},
            },
        },
    ]
    await world.graph("later", nodes, account)
    graph = await world.wait("later", "ResourcesConverged", "False", "SchemaPending")
    message = graph_condition(graph, "ResourcesConverged")["message"]
    assert message == (
        f'node "widget": kind Widget of {group}/v1alpha1 is not served yet (waiting for its CRD)'
    )
    assert graph_condition(graph, "Accepted")["status"] == "True"
    assert await client.get(CONFIGMAPS, "later", namespace=namespace)  # the rest is applied

    async def warned() -> list[dict[str, Any]] | None:
        found = await _events(world, "later", "WaitingForCRD")
        return found or None

    (event,) = await eventually(warned, what="a WaitingForCRD Event", timeout_s=TIMEOUT_S)
    assert event["type"] == "Warning"
    assert f"kind Widget of {group}/v1alpha1" in event["message"]
    await asyncio.sleep(2)  # more passes: still one Event, counted once
    (again,) = await _events(world, "later", "WaitingForCRD")
    assert again.get("count", 1) == 1
    explained = await asyncio.to_thread(_explain, world.env, "graph", "later", "-n", namespace)
    node = {n["id"]: n for n in explained["nodes"]}["widget"]
    assert node["status"] == "waiting"
    assert node["reason"].startswith(f"SchemaPending: kind Widget of {group}/v1alpha1")

    started = time.monotonic()
    await world.create(CRDS, claim_crd(group, "Widget"))
    widgets = GVR(group, "v1alpha1", "widgets")

    async def applied() -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = await client.get(widgets, "w", namespace=namespace)
        except NotFound:
            return None
        return found

    widget = await eventually(applied, what="the widget applied", timeout_s=TIMEOUT_S)
    elapsed = time.monotonic() - started
    assert widget["spec"]["priority"] == 3
    assert elapsed < 10, f"the widget took {elapsed:.1f}s after its CRD was created"
    await world.wait("later", "Ready", "True")


# -- RGDs ---------------------------------------------------------------------------------------


def installer(env: KroEnv, group: str, **widget: Any) -> dict[str, Any]:
    """An RGD whose first resource installs the Widget CRD and whose second uses the kind."""
    return env.rgd(
        "installer",
        "Installer",
        {"size": "integer | default=2"},
        [
            {"id": "crd", "template": claim_crd(group, "Widget")},
            {
                "id": "widget",
                "template": {
                    "apiVersion": f"{group}/v1alpha1",
                    "kind": "Widget",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "spec": {"priority": "${schema.spec.size}"},
                },
                **widget,
            },
        ],
    )


async def test_an_rgd_installs_a_crd_then_uses_it(kro: KroEnv) -> None:
    group = group_of(kro, "installer")
    rgd = installer(kro, group, includeWhen=[ESTABLISHED])
    name = meta(rgd)["name"]
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(name)
    kro.track(CRDS, f"widgets.{group}")
    gvr = await kro.gvr_of("Installer")
    await kro.apply_instance("Installer", "one", {"size": 5})
    await kro.wait_instance(gvr, "one")
    widget = await kro.get(GVR(group, "v1alpha1", "widgets"), "one")
    assert widget["spec"]["priority"] == 5
    assert kro.controller is not None
    assert kro.controller.app is not None
    registry = kro.controller.app.registry

    async def typed() -> bool:
        entry = registry.latest(name)
        return entry is not None and entry.graph is not None and not any(
            n.deferred for n in entry.graph.nodes.values()
        )

    await eventually(typed, what="the revision compiled again, typed", timeout_s=TIMEOUT_S)


async def test_a_typo_without_includewhen_still_fails_at_build_time(kro: KroEnv) -> None:
    group = group_of(kro, "typo")
    rgd = installer(kro, group)  # no includeWhen, not optional: a typo must fail fast
    rgd["spec"]["resources"][1]["template"]["kind"] = "Widgit"
    await kro.apply_rgd(rgd)
    await _refused(kro, meta(rgd)["name"], "schema not found")


async def _refused(kro: KroEnv, name: str, text: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        live = await kro.get_rgd(name)
        accepted = condition(live, "GraphAccepted")
        return live if accepted.get("status") == "False" and text in accepted["message"] else None

    return await eventually(probe, what=f"RGD {name} refused", timeout_s=TIMEOUT_S)


async def test_with_the_gate_off_the_rgd_fails_as_before(
    controller: Any, kube_namespace: str
) -> None:
    args = tuple(a for a in ARGS if not a.startswith("--feature-gates"))
    args = (*args, "--feature-gates=InstanceConditionEvents=true")
    async with kro_env_with(controller, kube_namespace, args) as env:
        rgd = installer(env, group_of(env, "off"), includeWhen=[ESTABLISHED])
        await env.apply_rgd(rgd)
        live = await _refused(env, meta(rgd)["name"], "schema not found")
        assert (live.get("status") or {}).get("state") == "Inactive"
        assert 'failed to build resource "widget"' in condition(live, "GraphAccepted")["message"]


async def test_a_discovery_outage_is_not_a_deferral(kro: KroEnv) -> None:
    """An aggregated API whose server is down: its discovery answers 503. The RGD that uses
    a kind of it is not Accepted with that resource deferred: the build fails and is retried."""
    group = group_of(kro, "outage")
    await kro.client.create(
        API_SERVICES,
        {
            "metadata": {"name": f"v1alpha1.{group}"},
            "spec": {
                "group": group,
                "version": "v1alpha1",
                "groupPriorityMinimum": 1000,
                "versionPriority": 15,
                "insecureSkipTLSVerify": True,
                "service": {"name": "nowhere", "namespace": kro.namespace, "port": 443},
            },
        },
    )
    kro.track(API_SERVICES, f"v1alpha1.{group}")
    rgd = installer(kro, group, includeWhen=[ESTABLISHED])
    rgd["spec"]["resources"].pop(0)  # the kind is the aggregated API's
    rgd["spec"]["resources"][0]["includeWhen"] = ["${schema.spec.size > 0}"]
    rgd["spec"]["resources"][0]["optional"] = True
    name = meta(rgd)["name"]
    await kro.apply_rgd(rgd)
    deadline = time.monotonic() + 8

    while time.monotonic() < deadline:
        live = await kro.get_rgd(name)
        assert (live.get("status") or {}).get("state") != "Active", live.get("status")
        assert not await kro.revisions(name), "no revision is issued during an outage"
        await asyncio.sleep(0.5)

    async def reported() -> list[dict[str, Any]] | None:
        page = await kro.client.list(EVENTS, field_selector=f"involvedObject.name={name}")
        found = [e for e in page.get("items") or () if "503" in str(e.get("message"))]
        return found or None

    await eventually(reported, what="the outage reported", timeout_s=TIMEOUT_S)


async def test_an_instance_waits_for_a_crd_nobody_installed_yet(kro: KroEnv) -> None:
    """An optional resource of a kind with no CRD: the RGD is Active, the instance says
    `ResourcesReady=False` `SchemaPending` (one `WaitingForCRD` Event) while the rest is
    applied; the CRD created later is picked up without an edit."""
    group = group_of(kro, "optional")
    rgd = installer(kro, group, optional=True)
    rgd["spec"]["resources"].pop(0)  # nobody installs the CRD: the test will
    rgd["spec"]["resources"].append(
        {
            "id": "config",
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "${schema.metadata.name}-config"},
            },
        }
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await kro.gvr_of("Installer")
    await kro.apply_instance("Installer", "two", {"size": 4})

    def schema_pending(obj: dict[str, Any]) -> bool:
        return condition(obj, "ResourcesReady").get("reason") == "SchemaPending"

    live = await kro.wait_instance(gvr, "two", schema_pending, what="SchemaPending")
    message = condition(live, "ResourcesReady")["message"]
    assert f"widget: kind Widget of {group}/v1alpha1 is not served yet" in message
    assert await kro.get(CONFIGMAPS, "two-config")  # the rest is applied meanwhile

    async def warned() -> list[dict[str, Any]] | None:
        page = await kro.client.list(
            EVENTS, namespace=kro.namespace, field_selector="involvedObject.name=two"
        )
        found = [e for e in page.get("items") or () if e.get("reason") == "WaitingForCRD"]
        return found or None

    (event,) = await eventually(warned, what="a WaitingForCRD Event", timeout_s=TIMEOUT_S)
    assert event["type"] == "Warning"
    target = f"installers.{kro.group}/two"
    explained = await asyncio.to_thread(_explain, kro, target, "-n", kro.namespace)
    node = {n["id"]: n for n in explained["nodes"]}["widget"]
    assert node["status"] == "waiting"
    assert node["reason"].startswith(f"SchemaPending: kind Widget of {group}/v1alpha1")
    await kro.client.create(CRDS, claim_crd(group, "Widget"))
    kro.track(CRDS, f"widgets.{group}")
    await kro.wait_instance(gvr, "two")
    widget = await kro.get(GVR(group, "v1alpha1", "widgets"), "two")
    assert widget["spec"]["priority"] == 4
