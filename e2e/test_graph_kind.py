"""The `Graph` kind on the real control plane (gate `GraphKind` on), as its examples describe.

* A decorator: a `ref` by selector over Namespaces fans a NetworkPolicy out into each labelled
  one; labelling a Namespace adds one, unlabelling prunes it, and deleting the Graph deletes
  what it created, never the Namespaces. The objects carry the Graph's marks and field manager,
  no ownerReferences and no ApplySet labels; `status.managedResources` lists them with UIDs.
* A fan-in: one Ingress with a rule per labelled Service, sorted; `includeWhen` deletes it when
  no Service is left rather than applying an empty list.
* A bundle: objects in dependency order, `readyWhen` reporting on a Deployment; the Graph is
  Ready once it is available.
* Identity: a ServiceAccount missing one permission creates nothing it may not, and says so in
  `ResourcesConverged`; granting the permission converges it without an edit. A Graph naming
  kro's own ServiceAccount is refused, and a typo in a field path is a compile error.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from graph_support import GRAPHS, delete_graph, graph_condition, wait_for_graph
from kro_harness import (
    CONTROLLER_ARGS,
    NAMESPACES,
    SERVICES,
    KroEnv,
    kro_fixtures,
    log_records,
    meta,
)

from kro.controllers.crd import wait_established
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.waiting import eventually

controller, kro = kro_fixtures(
    (
        *CONTROLLER_ARGS[:-2],
        "--feature-gates=InstanceConditionEvents=true,GraphKind=true",
        "--controller-namespace=kro-system",
        "--controller-service-account=kro",
        "--log-level=info",
    )
)

SERVICE_ACCOUNTS = GVR("", "v1", "serviceaccounts")
CLUSTER_ROLES = GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = GVR("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
ROLES = GVR("rbac.authorization.k8s.io", "v1", "roles")
ROLE_BINDINGS = GVR("rbac.authorization.k8s.io", "v1", "rolebindings")
POLICIES = GVR("networking.k8s.io", "v1", "networkpolicies")
INGRESSES = GVR("networking.k8s.io", "v1", "ingresses")
CONFIGMAPS = GVR("", "v1", "configmaps")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
TIMEOUT_S = 60.0
WRITE = ["get", "list", "watch", "create", "update", "patch", "delete"]
CONFIGMAP_WRITER = {"apiGroups": [""], "resources": ["configmaps"], "verbs": WRITE}


_condition = graph_condition


class Graphs:
    """Create Graphs, their identity and helpers in one test's world; delete them after."""

    def __init__(self, kro: KroEnv) -> None:
        self.kro = kro
        self.client = kro.client
        self.namespace = kro.namespace
        self.cluster_objects: list[tuple[GVR, str]] = []

    async def create(self, gvr: GVR, obj: dict[str, Any], namespace: str | None = None) -> Any:
        created = await self.client.create(gvr, obj, namespace=namespace)
        if namespace is None and gvr not in (GRAPHS,):
            self.cluster_objects.append((gvr, obj["metadata"]["name"]))
        return created

    async def applier(self, name: str, rules: list[dict[str, Any]]) -> str:
        """A ServiceAccount of the test namespace bound to a ClusterRole with `rules`."""
        await self.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, namespace=self.namespace)
        await self.grant(name, rules)
        return name

    async def grant(
        self, name: str, rules: list[dict[str, Any]], *, role: str | None = None
    ) -> None:
        """Bind the ServiceAccount `name` to a new ClusterRole (`<namespace>-<name>`, or
        `role`) holding `rules`."""
        role = role or f"{self.namespace}-{name}"
        await self.create(CLUSTER_ROLES, {"metadata": {"name": role}, "rules": rules})
        await self.create(
            CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": self.namespace}],
            },
        )

    async def graph(self, name: str, nodes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
        body = {
            "apiVersion": "kro.run/v1alpha1",
            "kind": "Graph",
            "metadata": {"name": name},
            "spec": {"nodes": nodes, **spec},
        }
        created: dict[str, Any] = await self.create(GRAPHS, body, namespace=self.namespace)
        return created

    async def get(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = await self.client.get(GRAPHS, name, namespace=self.namespace)
        return found

    async def wait(self, name: str, kind: str, status: str, reason: str = "") -> dict[str, Any]:
        return await wait_for_graph(self.client, self.namespace, name, kind, status, reason=reason)

    async def delete_graph(self, name: str) -> None:
        await delete_graph(self.client, self.namespace, name)

    async def cleanup(self) -> None:
        graphs, _ = await self.client.list_all(GRAPHS, namespace=self.namespace)
        for graph in graphs:
            with contextlib.suppress(AssertionError):
                await self.delete_graph(meta(graph)["name"])
        for gvr, name in reversed(self.cluster_objects):
            with contextlib.suppress(NotFound):
                await self.client.delete(gvr, name)


@pytest.fixture
async def graphs(kro: KroEnv) -> AsyncIterator[Graphs]:
    world = Graphs(kro)
    try:
        yield world
    finally:
        await world.cleanup()


async def _named(client: Any, gvr: GVR, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = await client.get(gvr, name, namespace=namespace)
    except NotFound:
        return None
    return None if meta(found).get("deletionTimestamp") else found


# -- decorator -----------------------------------------------------------------------------------


async def test_decorator_follows_namespace_labels(graphs: Graphs) -> None:
    client, suffix = graphs.client, graphs.kro.suffix
    label = f"baseline-{suffix}.example.com/on"
    red, blue = f"red-{suffix}", f"blue-{suffix}"
    await graphs.create(NAMESPACES, {"metadata": {"name": red, "labels": {label: "yes"}}})
    await graphs.create(NAMESPACES, {"metadata": {"name": blue}})
    applier = await graphs.applier(
        "baseline",
        [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
            {
                "apiGroups": ["networking.k8s.io"],
                "resources": ["networkpolicies"],
                "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
            },
        ],
    )
    await graphs.graph(
        "baseline",
        [
            {
                "id": "targets",
                "ref": {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"selector": {"matchLabels": {label: "yes"}}},
                },
            },
            {
                "id": "policies",
                "forEach": [{"target": "${targets}"}],
                "template": {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "NetworkPolicy",
                    "metadata": {
                        "name": "baseline-deny",
                        "namespace": "${target.metadata.name}",
                        "labels": {"app.kubernetes.io/part-of": "baseline"},
                    },
                    "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
                },
            },
        ],
        serviceAccountName=applier,
    )
    graph = await graphs.wait("baseline", "Ready", "True", "Ready")
    accepted = _condition(graph, "Accepted")
    assert (accepted["status"], accepted["reason"], accepted["message"]) == (
        "True",
        "Compiled",
        "compiled 2 nodes",
    )
    converged = _condition(graph, "ResourcesConverged")
    assert (converged["reason"], converged["message"]) == (
        "Applied",
        "all nodes applied and ready",
    )
    assert [c["type"] for c in graph["status"]["conditions"]] == [
        "Accepted",
        "ResourcesConverged",
        "WatchesHealthy",
        "Ready",
    ]
    watches = _condition(graph, "WatchesHealthy")
    assert (watches["status"], watches["reason"]) == ("True", "AllWatchesSynced")
    assert graph["status"]["appliedServiceAccount"] == (
        f"system:serviceaccount:{graphs.namespace}:{applier}"
    )
    assert "kro.run/graph-finalizer" in meta(graph)["finalizers"]

    # The Graphs' watch router reports under its own names (V-85).
    assert graphs.kro.controller is not None
    scraped = graphs.kro.controller.scrape()
    owners = [
        line for line in scraped.splitlines() if line.startswith("graphengine_watch_owner_count ")
    ]
    assert owners
    assert float(owners[0].split()[-1]) >= 1
    assert (
        'graphengine_watch_request_count{gvr="/v1, Resource=namespaces",kind="collection"}'
        in scraped
    )

    policy = await client.get(POLICIES, "baseline-deny", namespace=red)
    labels, annotations = meta(policy)["labels"], meta(policy)["annotations"]
    assert labels["kro.run/node-id"] == "policies"
    assert labels["kro.run/collection-index"] == "0"
    assert labels["kro.run/collection-size"] == "1"
    assert labels["kro.run/instance-id"] == meta(graph)["uid"]
    assert labels["app.kubernetes.io/part-of"] == "baseline"  # the template's own label stays
    assert annotations["internal.kro.run/node-path"] == "policies"
    assert "internal.kro.run/apply-order" in annotations
    assert not [k for k in labels if k == "kro.run/owned" or k.startswith("applyset.")]
    assert not meta(policy).get("ownerReferences")
    managers = {m["manager"] for m in meta(policy)["managedFields"]}
    assert any(m.startswith("kro-graphengine.tmpl.") and len(m) == 33 for m in managers)
    assert await _named(client, POLICIES, "baseline-deny", blue) is None
    entries = graph["status"]["managedResources"]
    assert [(e["nodeID"], e["kind"], e["namespace"], e["uid"]) for e in entries] == [
        ("policies", "NetworkPolicy", red, meta(policy)["uid"])
    ]

    # Labelling a Namespace adds a policy there, without touching the Graph.
    await client.patch(NAMESPACES, blue, {"metadata": {"labels": {label: "yes"}}})

    async def both() -> bool:
        found = [await _named(client, POLICIES, "baseline-deny", ns) for ns in (red, blue)]
        sizes = [meta(p)["labels"]["kro.run/collection-size"] for p in found if p]
        return sizes == ["2", "2"]

    await eventually(both, what="a policy in both namespaces, size 2", timeout_s=TIMEOUT_S)

    # Unlabelling one prunes its policy; the record follows.
    await client.patch(NAMESPACES, red, {"metadata": {"labels": {label: None}}})

    async def pruned() -> dict[str, Any] | None:
        if await _named(client, POLICIES, "baseline-deny", red) is not None:
            return None
        obj = await graphs.get("baseline")
        entries = obj["status"].get("managedResources") or []
        return obj if [e["namespace"] for e in entries] == [blue] else None

    await eventually(pruned, what="the red policy pruned", timeout_s=TIMEOUT_S)

    # Drift is taken back.
    await client.patch(
        POLICIES, "baseline-deny", {"spec": {"policyTypes": ["Ingress"]}}, namespace=blue
    )

    async def reclaimed() -> bool:
        found = await _named(client, POLICIES, "baseline-deny", blue)
        return bool(found) and found["spec"]["policyTypes"] == ["Ingress", "Egress"]

    await eventually(reclaimed, what="drift on the policy reclaimed", timeout_s=TIMEOUT_S)

    # Deleting the Graph deletes what it created, never what it only read.
    await graphs.delete_graph("baseline")
    assert await _named(client, POLICIES, "baseline-deny", blue) is None
    assert (await client.get(NAMESPACES, blue))["metadata"]["name"] == blue


# -- fan-in --------------------------------------------------------------------------------------


def _service(name: str, port: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": {"app": name}, "ports": [{"port": port}]},
    }


async def test_fan_in_follows_services(graphs: Graphs) -> None:
    client, namespace = graphs.client, graphs.namespace
    route = {"fanin.example.com/route": "yes"}
    await graphs.create(SERVICES, _service("alpha", 80, route), namespace=namespace)
    await graphs.create(SERVICES, _service("beta", 8080, {}), namespace=namespace)
    await graphs.create(SERVICE_ACCOUNTS, {"metadata": {"name": "edge"}}, namespace=namespace)
    await graphs.create(
        ROLES,
        {
            "metadata": {"name": "edge"},
            "rules": [
                {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch"]},
                {
                    "apiGroups": ["networking.k8s.io"],
                    "resources": ["ingresses"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
                },
            ],
        },
        namespace=namespace,
    )
    await graphs.create(
        ROLE_BINDINGS,
        {
            "metadata": {"name": "edge"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "edge"},
            "subjects": [{"kind": "ServiceAccount", "name": "edge", "namespace": namespace}],
        },
        namespace=namespace,
    )
    rules = (
        '${services.sortBy(s, s.metadata.name).map(s, {"host": s.metadata.name + ".example.test",'
        ' "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": '
        '{"name": s.metadata.name, "port": {"number": s.spec.ports[0].port}}}}]}})}'
    )
    await graphs.graph(
        "edge",
        [
            {
                "id": "services",
                "ref": {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"namespace": namespace, "selector": {"matchLabels": route}},
                },
            },
            {
                "id": "ingress",
                "includeWhen": ["${size(services) > 0}"],
                "template": {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "Ingress",
                    "metadata": {"name": "edge"},
                    "spec": {"rules": rules},
                },
            },
        ],
        serviceAccountName="edge",
    )
    await graphs.wait("edge", "Ready", "True")

    async def hosts() -> list[str]:
        found = await _named(client, INGRESSES, "edge", namespace)
        return [r["host"] for r in (found or {}).get("spec", {}).get("rules", [])]

    assert await hosts() == ["alpha.example.test"]
    uid = meta(await client.get(INGRESSES, "edge", namespace=namespace))["uid"]

    await client.patch(SERVICES, "beta", {"metadata": {"labels": route}}, namespace=namespace)

    async def two() -> bool:
        return await hosts() == ["alpha.example.test", "beta.example.test"]

    await eventually(two, what="a rule per labelled Service, sorted", timeout_s=TIMEOUT_S)
    assert meta(await client.get(INGRESSES, "edge", namespace=namespace))["uid"] == uid

    for name in ("alpha", "beta"):
        unlabel = {"metadata": {"labels": {"fanin.example.com/route": None}}}
        await client.patch(SERVICES, name, unlabel, namespace=namespace)

    async def removed() -> dict[str, Any] | None:
        if await _named(client, INGRESSES, "edge", namespace) is not None:
            return None
        obj = await graphs.get("edge")
        ready = _condition(obj, "Ready").get("status") == "True"
        return obj if ready and not obj["status"].get("managedResources") else None

    await eventually(removed, what="the Ingress pruned, the Graph Ready", timeout_s=TIMEOUT_S)
    await graphs.delete_graph("edge")
    assert await _named(client, SERVICES, "alpha", namespace) is not None


# -- bundle, identity ----------------------------------------------------------------------------


def _bundle() -> list[dict[str, Any]]:
    return [
        {
            "id": "settings",
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "bundle-settings"},
                "data": {"mode": "on"},
            },
        },
        {
            "id": "server",
            "readyWhen": ["${server.status.?availableReplicas.orValue(0) == 1}"],
            "template": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "bundle-server"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "bundle"}},
                    "template": {
                        "metadata": {
                            "labels": {"app": "bundle"},
                            "annotations": {"mode": "${settings.data.mode}"},
                        },
                        "spec": {"containers": [{"name": "server", "image": "example/server"}]},
                    },
                },
            },
        },
        {
            "id": "service",
            "template": {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "${server.metadata.name}"},
                "spec": {"selector": {"app": "bundle"}, "ports": [{"port": 53}]},
            },
        },
    ]


BUNDLE_RULES = [
    {
        "apiGroups": [""],
        "resources": ["configmaps", "services"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
]
DEPLOYMENT_RULE = {
    "apiGroups": ["apps"],
    "resources": ["deployments"],
    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
}


async def test_missing_permission_then_granted(graphs: Graphs) -> None:
    """The applier may write ConfigMaps and Services but not Deployments: the Deployment is not
    created and ResourcesConverged says it was forbidden; the grant converges it unedited, and
    the teardown deletes in reverse order."""
    client, namespace = graphs.client, graphs.namespace
    applier = await graphs.applier("installer", BUNDLE_RULES)
    await graphs.graph("bundle", _bundle(), serviceAccountName=applier)
    graph = await graphs.wait("bundle", "ResourcesConverged", "False", "ApplyFailed")
    message = _condition(graph, "ResourcesConverged")["message"]
    assert "forbidden" in message.lower()
    assert "server" in message
    assert _condition(graph, "Ready")["reason"] == "ApplyFailed"
    assert await _named(client, DEPLOYMENTS, "bundle-server", namespace) is None
    assert await _named(client, CONFIGMAPS, "bundle-settings", namespace) is not None

    await graphs.grant("installer-deployments", [DEPLOYMENT_RULE])
    await graphs.create(
        CLUSTER_ROLE_BINDINGS,
        {
            "metadata": {"name": f"{namespace}-installer-deployments-bind"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{namespace}-installer-deployments",
            },
            "subjects": [{"kind": "ServiceAccount", "name": applier, "namespace": namespace}],
        },
    )
    graph = await graphs.wait("bundle", "Ready", "True")
    kinds = [e["kind"] for e in graph["status"]["managedResources"]]
    assert kinds == ["ConfigMap", "Deployment", "Service"]
    assert all(e.get("uid") for e in graph["status"]["managedResources"])
    service = await client.get(SERVICES, "bundle-server", namespace=namespace)
    assert meta(service)["annotations"]["internal.kro.run/node-path"] == "service"

    await graphs.delete_graph("bundle")
    for gvr, name in (
        (SERVICES, "bundle-server"),
        (DEPLOYMENTS, "bundle-server"),
        (CONFIGMAPS, "bundle-settings"),
    ):
        assert await _named(client, gvr, name, namespace) is None


async def test_graph_may_not_apply_as_kro(graphs: Graphs, kro: KroEnv) -> None:
    """A Graph in kro's namespace naming kro's ServiceAccount is refused before anything."""
    with contextlib.suppress(Exception):
        await graphs.client.create(NAMESPACES, {"metadata": {"name": "kro-system"}})
    body = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": f"as-kro-{kro.suffix}"},
        "spec": {"serviceAccountName": "kro", "nodes": _bundle()[:1]},
    }
    name = body["metadata"]["name"]
    await graphs.client.create(GRAPHS, body, namespace="kro-system")
    try:

        async def refused() -> dict[str, Any] | None:
            obj = await graphs.client.get(GRAPHS, name, namespace="kro-system")
            found = _condition(obj, "Accepted")
            return obj if found.get("reason") == "InvalidGraph" else None

        obj = await eventually(refused, what="the Graph refused", timeout_s=TIMEOUT_S)
        message = _condition(obj, "Accepted")["message"]
        assert message.startswith("refusing to apply: Graph would impersonate the kro controller")
        assert '"system:serviceaccount:kro-system:kro"' in message
        assert _condition(obj, "Ready")["status"] == "False"
        assert not (obj.get("status") or {}).get("managedResources")
        assert await _named(graphs.client, CONFIGMAPS, "bundle-settings", "kro-system") is None
    finally:
        await graphs.client.delete(GRAPHS, name, namespace="kro-system")


async def test_a_typo_is_a_compile_error(graphs: Graphs) -> None:
    nodes = _bundle()
    nodes[2]["template"]["spec"]["ports"] = [{"port": "${server.spec.replicsa}"}]
    await graphs.graph("typo", nodes)
    graph = await graphs.wait("typo", "Accepted", "False", "InvalidGraph")
    assert "replicsa" in _condition(graph, "Accepted")["message"]
    assert _condition(graph, "Ready")["reason"] == "InvalidGraph"
    assert await _named(graphs.client, CONFIGMAPS, "bundle-settings", graphs.namespace) is None


# -- patch ---------------------------------------------------------------------------------------


async def test_patch_contributes_and_releases_exactly_its_fields(graphs: Graphs) -> None:
    """A ConfigMap another manager owns gets one label and one data key from a patch node;
    removing the node releases exactly those, and the target is never deleted."""
    client, namespace = graphs.client, graphs.namespace
    await client.create(
        CONFIGMAPS,
        {"metadata": {"name": "shared", "labels": {"team": "red"}}, "data": {"owner": "them"}},
        namespace=namespace,
        field_manager="someone-else",
    )
    applier = await graphs.applier(
        "patcher",
        [CONFIGMAP_WRITER],
    )
    contribution = {
        "id": "mark",
        "patch": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "shared", "labels": {"decorated": "yes"}},
            "data": {"extra": "${settings.data.mode}"},
        },
    }
    settings = _bundle()[0]
    await graphs.graph("patcher", [settings, contribution], serviceAccountName=applier)
    graph = await graphs.wait("patcher", "Ready", "True")
    shared = await client.get(CONFIGMAPS, "shared", namespace=namespace)
    assert shared["data"] == {"owner": "them", "extra": "on"}
    assert meta(shared)["labels"] == {"team": "red", "decorated": "yes"}
    assert not [k for k in meta(shared).get("annotations") or {} if "kro.run" in k]
    (recorded,) = graph["status"]["contributions"]
    assert (recorded["kind"], recorded["name"], recorded["namespace"]) == (
        "ConfigMap",
        "shared",
        namespace,
    )
    assert recorded["fieldManager"].startswith("kro-graphengine.patch.")
    assert "subresource" not in recorded
    managers = {m["manager"] for m in meta(shared)["managedFields"]}
    assert recorded["fieldManager"] in managers
    assert [e["name"] for e in graph["status"]["managedResources"]] == ["bundle-settings"]

    # Remove the node: exactly its fields go; the other manager's stay; the target stays.
    await client.patch(GRAPHS, "patcher", {"spec": {"nodes": [settings]}}, namespace=namespace)

    async def released() -> dict[str, Any] | None:
        found = await client.get(CONFIGMAPS, "shared", namespace=namespace)
        return found if "extra" not in (found.get("data") or {}) else None

    shared = await eventually(released, what="the contribution released", timeout_s=TIMEOUT_S)
    assert shared["data"] == {"owner": "them"}
    assert meta(shared)["labels"] == {"team": "red"}
    graph = await graphs.wait("patcher", "Ready", "True")
    assert not graph["status"].get("contributions")

    # Put it back, then delete the Graph: the teardown releases it too, and deletes only
    # what the Graph created.
    await client.patch(
        GRAPHS, "patcher", {"spec": {"nodes": [settings, contribution]}}, namespace=namespace
    )

    async def contributed() -> bool:
        found = await client.get(CONFIGMAPS, "shared", namespace=namespace)
        return (found.get("data") or {}).get("extra") == "on"

    await eventually(contributed, what="the contribution back", timeout_s=TIMEOUT_S)
    await graphs.delete_graph("patcher")
    shared = await client.get(CONFIGMAPS, "shared", namespace=namespace)
    assert shared["data"] == {"owner": "them"}
    assert meta(shared)["labels"] == {"team": "red"}
    assert await _named(client, CONFIGMAPS, "bundle-settings", namespace) is None


async def test_patch_waits_for_its_target(graphs: Graphs) -> None:
    """A missing target is a wait, not an error; its creation wakes the Graph."""
    client, namespace = graphs.client, graphs.namespace
    # No serviceAccountName: the namespace's `default` ServiceAccount applies.
    await graphs.grant(
        "default",
        [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "verbs": ["get", "list", "watch", "patch"],
            }
        ],
    )
    await graphs.graph(
        "later",
        [
            {
                "id": "mark",
                "patch": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "later"},
                    "data": {"x": "1"},
                },
            }
        ],
    )
    graph = await graphs.wait("later", "ResourcesConverged", "False", "WaitingForReadiness")
    assert "not found" in _condition(graph, "ResourcesConverged")["message"]
    await client.create(CONFIGMAPS, {"metadata": {"name": "later"}}, namespace=namespace)
    graph = await graphs.wait("later", "Ready", "True")
    assert graph["status"]["appliedServiceAccount"] == (
        f"system:serviceaccount:{namespace}:default"
    )
    assert (await client.get(CONFIGMAPS, "later", namespace=namespace))["data"] == {"x": "1"}


# -- singleton: def + forEach, a dynamic kind, status patches ------------------------------------


def _singleton_crd(group: str) -> dict[str, Any]:
    string = {"type": "string"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"singletons.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": "Singleton",
                "listKind": "SingletonList",
                "plural": "singletons",
                "singular": "singleton",
            },
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "priority": {"type": "integer", "default": 0},
                                        "target": {
                                            "type": "object",
                                            "properties": {
                                                "apiVersion": string,
                                                "kind": string,
                                                "metadata": {
                                                    "type": "object",
                                                    "properties": {
                                                        "name": string,
                                                        "namespace": string,
                                                    },
                                                },
                                                "data": {
                                                    "type": "object",
                                                    "additionalProperties": string,
                                                },
                                            },
                                        },
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"active": {"type": "boolean"}, "claim": string},
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


def _claimant(group: str, name: str, namespace: str, priority: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1alpha1",
        "kind": "Singleton",
        "metadata": {"name": name},
        "spec": {
            "priority": priority,
            "target": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "shared", "namespace": namespace},
                "data": {"owner": name},
            },
        },
    }


WINS = (
    "!claims.exists(o, o.identity == c.identity && o.key != c.key && (o.priority > c.priority"
    " || (o.priority == c.priority && (o.created < c.created || (o.created == c.created"
    " && o.key < c.key)))))"
)


def _singleton_nodes(group: str) -> list[dict[str, Any]]:
    return [
        {
            "id": "claimants",
            "ref": {
                "apiVersion": f"{group}/v1alpha1",
                "kind": "Singleton",
                "metadata": {"selector": {}},
            },
        },
        {
            "id": "claims",
            "forEach": [{"s": "${claimants}"}],
            "def": {
                "key": '${s.metadata.namespace + "/" + s.metadata.name}',
                "name": "${s.metadata.name}",
                "namespace": "${s.metadata.namespace}",
                "priority": "${s.spec.priority}",
                "created": "${s.metadata.creationTimestamp}",
                "target": "${s.spec.target}",
                "identity": '${s.spec.target.apiVersion + "|" + s.spec.target.kind + "|" + '
                's.spec.target.metadata.namespace + "|" + s.spec.target.metadata.name}',
            },
        },
        {
            "id": "targets",
            "forEach": [{"w": "${claims.filter(c, " + WINS + ")}"}],
            "template": {
                "apiVersion": "${w.target.apiVersion}",
                "kind": "${w.target.kind}",
                "metadata": {
                    "name": "${w.target.metadata.name}",
                    "namespace": "${w.target.metadata.namespace}",
                },
                "data": "${w.target.?data.orValue({})}",
            },
        },
        {
            "id": "claimStatus",
            "forEach": [{"c": "${claims}"}],
            "patch": {
                "apiVersion": f"{group}/v1alpha1",
                "kind": "Singleton",
                "metadata": {"name": "${c.name}", "namespace": "${c.namespace}"},
                "status": {"active": "${" + WINS + "}", "claim": "${c.identity}"},
            },
        },
    ]


async def test_singleton_claims_fail_over_in_place(graphs: Graphs, kro: KroEnv) -> None:
    client, namespace, group = graphs.client, graphs.namespace, kro.group
    crd = _singleton_crd(group)
    await graphs.create(GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions"), crd)
    await wait_established(client, crd["metadata"]["name"])
    singletons = GVR(group, "v1alpha1", "singletons")
    applier = await graphs.applier(
        "claims",
        [
            {"apiGroups": [group], "resources": ["singletons"], "verbs": ["get", "list", "watch"]},
            {
                "apiGroups": [group],
                "resources": ["singletons/status"],
                "verbs": ["get", "patch", "update"],
            },
            CONFIGMAP_WRITER,
        ],
    )
    for name, priority in (("low", 10), ("high", 20)):
        await client.create(
            singletons, _claimant(group, name, namespace, priority), namespace=namespace
        )
    await graphs.graph("claims", _singleton_nodes(group), serviceAccountName=applier)
    graph = await graphs.wait("claims", "Ready", "True")
    assert _condition(graph, "Accepted")["message"] == "compiled 4 nodes"
    shared = await client.get(CONFIGMAPS, "shared", namespace=namespace)
    assert shared["data"] == {"owner": "high"}
    uid = meta(shared)["uid"]
    assert [
        (e["nodeID"], e["kind"], e["name"], e["uid"]) for e in graph["status"]["managedResources"]
    ] == [("targets", "ConfigMap", "shared", uid)]
    contributions = graph["status"]["contributions"]
    assert sorted(c["name"] for c in contributions) == ["high", "low"]
    assert {c["subresource"] for c in contributions} == {"status"}
    assert len({c["fieldManager"] for c in contributions}) == 1
    claim = f"v1|ConfigMap|{namespace}|shared"

    async def statuses() -> dict[str, Any] | None:
        found = {
            n: (await client.get(singletons, n, namespace=namespace)).get("status")
            for n in ("high", "low")
        }
        expected = {
            "high": {"active": True, "claim": claim},
            "low": {"active": False, "claim": claim},
        }
        return found if found == expected else None

    await eventually(statuses, what="the claimants' status", timeout_s=TIMEOUT_S)

    # The winner goes: the next claimant takes over, the target is updated in place.
    await client.delete(singletons, "high", namespace=namespace)

    async def failed_over() -> bool:
        found = await client.get(CONFIGMAPS, "shared", namespace=namespace)
        low = await client.get(singletons, "low", namespace=namespace)
        return found["data"] == {"owner": "low"} and bool((low.get("status") or {}).get("active"))

    await eventually(failed_over, what="low takes over", timeout_s=TIMEOUT_S)
    assert meta(await client.get(CONFIGMAPS, "shared", namespace=namespace))["uid"] == uid

    # Deleting the Graph deletes the claimed object and releases the status it wrote.
    await graphs.delete_graph("claims")
    assert await _named(client, CONFIGMAPS, "shared", namespace) is None
    low = await client.get(singletons, "low", namespace=namespace)
    assert not low.get("status")


async def test_an_expression_failing_at_run_time_is_reported(graphs: Graphs) -> None:
    """A hard evaluation error names the node and the expression in ResourcesConverged."""
    reader = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
    await graphs.grant("default", [reader])
    await graphs.graph(
        "broken",
        [
            {
                "id": "nothing",
                "ref": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"selector": {"matchLabels": {"no-such-label": graphs.kro.suffix}}},
                },
            },
            {"id": "first", "def": {"count": '${int("x" + string(size(nothing)))}'}},
        ],
    )
    graph = await graphs.wait("broken", "ResourcesConverged", "False", "ApplyFailed")
    message = _condition(graph, "ResourcesConverged")["message"]
    assert 'int("x" + string(size(nothing)))' in message
    assert 'node "first"' in message
    assert _condition(graph, "Accepted")["status"] == "True"


async def test_a_missing_kind_recompiles_once_its_crd_exists(graphs: Graphs, kro: KroEnv) -> None:
    """V-48: a literal kind without its CRD is a compile error, healed by the CRD alone."""
    group = f"late.{kro.group}"
    claimants = {
        "id": "claimants",
        "ref": {
            "apiVersion": f"{group}/v1alpha1",
            "kind": "Singleton",
            "metadata": {"selector": {}},
        },
    }
    reader = {"apiGroups": [group], "resources": ["singletons"], "verbs": ["get", "list", "watch"]}
    await graphs.grant("default", [reader])
    await graphs.graph("late", [claimants])
    graph = await graphs.wait("late", "Accepted", "False", "InvalidGraph")
    assert group in _condition(graph, "Accepted")["message"]
    await graphs.create(
        GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions"), _singleton_crd(group)
    )
    graph = await graphs.wait("late", "Ready", "True")
    assert _condition(graph, "Accepted")["message"] == "compiled 1 nodes"


async def test_an_rgd_instance_never_takes_a_graphs_object(graphs: Graphs, kro: KroEnv) -> None:
    """V-18: an instance rendering an object a Graph manages waits and says whose it is; the
    object keeps the Graph's content and gets none of the instance's labels."""
    await graphs.grant(
        "default",
        [CONFIGMAP_WRITER],
    )
    await graphs.graph("owner", _bundle()[:1])
    await graphs.wait("owner", "Ready", "True")
    rgd = kro.rgd(
        "taker",
        "Taker",
        {"mode": "string | default=off"},
        [
            {
                "id": "settings",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "bundle-settings"},
                    "data": {"mode": "${schema.spec.mode}"},
                },
            }
        ],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of("Taker")
    await kro.apply_instance("Taker", "taker", {})

    def held(obj: dict[str, Any]) -> bool:
        found = [
            c
            for c in (obj.get("status") or {}).get("conditions") or ()
            if c["type"] == "ResourcesReady"
        ]
        return bool(found) and "kro-graphengine.tmpl." in found[0].get("message", "")

    instance = await kro.wait_instance(gvr, "taker", held, what="the instance held back")
    assert (instance.get("status") or {}).get("state") != "ACTIVE"
    settings = await graphs.client.get(CONFIGMAPS, "bundle-settings", namespace=graphs.namespace)
    assert settings["data"] == {"mode": "on"}
    assert "kro.run/owned" not in (meta(settings).get("labels") or {})


async def test_kro_never_watches_what_the_service_account_may_not(graphs: Graphs) -> None:
    """V-54: the ServiceAccount may read and write ConfigMaps but not watch them: the Graph
    still converges, and kro registers no watch of ConfigMaps for it. With no event to bring it
    back, kro looks again a minute later; once `watch` is granted that pass registers the
    watch, and from then on a change is followed at once, without an edit of the Graph."""
    client, namespace = graphs.client, graphs.namespace
    await client.create(
        CONFIGMAPS, {"metadata": {"name": "source"}, "data": {"v": "1"}}, namespace=namespace
    )
    no_watch = [v for v in WRITE if v != "watch"]
    await graphs.grant(
        "default", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": no_watch}]
    )
    nodes = [
        {
            "id": "source",
            "ref": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "source"}},
        },
        {
            "id": "copy",
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "copy"},
                "data": {"v": "${source.data.v}"},
            },
        },
    ]
    with log_records() as records:
        await graphs.graph("blind", nodes)
        await graphs.wait("blind", "Ready", "True")
    skipped = [
        e
        for e in records.named("graph.watch_skipped", resource="configmaps")
        if e.get("graph") == f"{namespace}/blind"
    ]
    assert skipped
    assert skipped[0]["service_account"] == f"system:serviceaccount:{namespace}:default"

    async def copied(value: str) -> bool:
        found = await client.get(CONFIGMAPS, "copy", namespace=namespace)
        return bool(found["data"] == {"v": value})

    # Granted now; a change no watch reports reaches the copy at the next look (within a
    # minute), which also registers the watch.
    watch = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["watch"]}]
    await graphs.grant("default", watch, role=f"{namespace}-default-watch")
    await client.patch(CONFIGMAPS, "source", {"data": {"v": "2"}}, namespace=namespace)
    await eventually(lambda: copied("2"), what="the next look copies v=2", timeout_s=90.0)
    await client.patch(CONFIGMAPS, "source", {"data": {"v": "3"}}, namespace=namespace)
    await eventually(lambda: copied("3"), what="the watch brings v=3 at once", timeout_s=15.0)


async def test_a_nested_graph_applies_with_its_parent(graphs: Graphs) -> None:
    """V-47: a `graph` node's nodes are applied in the same pass, under the same identity and
    status; their objects name the nested path; outer nodes read them through the graph node."""
    client, namespace = graphs.client, graphs.namespace
    await graphs.grant(
        "default",
        [CONFIGMAP_WRITER],
    )
    config = {
        "id": "config",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "outer"},
            "data": {"t": "gold"},
        },
    }
    inner = {
        "id": "settings",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "inner"},
            "data": {"t": "${config.data.t}"},
        },
    }
    summary = {
        "id": "summary",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "summary"},
            "data": {"from": "${backend.settings.metadata.name}"},
        },
    }
    await graphs.graph("nested", [config, {"id": "backend", "graph": {"nodes": [inner]}}, summary])
    graph = await graphs.wait("nested", "Ready", "True")
    settings = await client.get(CONFIGMAPS, "inner", namespace=namespace)
    assert settings["data"] == {"t": "gold"}
    assert meta(settings)["annotations"]["internal.kro.run/node-path"] == "backend/settings"
    assert meta(settings)["labels"]["kro.run/node-id"] == "backend.settings"
    assert (await client.get(CONFIGMAPS, "summary", namespace=namespace))["data"] == {
        "from": "inner"
    }
    assert [e["nodeID"] for e in graph["status"]["managedResources"]] == [
        "config",
        "backend/settings",
        "summary",
    ]
    await graphs.delete_graph("nested")
    for name in ("outer", "inner", "summary"):
        assert await _named(client, CONFIGMAPS, name, namespace) is None


EVENTS = GVR("", "v1", "events")


async def test_a_node_id_too_long_for_a_label_is_hashed_and_named_in_an_event(
    graphs: Graphs,
) -> None:
    """V-61: a node path longer than a label value is labelled `h-` and 40 hex digits of its
    SHA-256; the object keeps the full path in its annotation, and a Warning Event
    `NodeIDEncoded` on the Graph says which label value to select on."""
    client, namespace = graphs.client, graphs.namespace
    await graphs.grant(
        "default",
        [CONFIGMAP_WRITER],
    )
    long_id = "settingsForTheTeamThatOwnsTheCheckoutServiceInEveryRegionWeRunIn"
    assert len(long_id) > 63
    expected = "h-" + hashlib.sha256(long_id.encode()).hexdigest()[:40]
    node = {
        "id": long_id,
        "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "long"}},
    }
    await graphs.graph("long-ids", [node])
    await graphs.wait("long-ids", "Ready", "True")
    labels = meta(await client.get(CONFIGMAPS, "long", namespace=namespace))
    assert labels["labels"]["kro.run/node-id"] == expected
    assert labels["annotations"]["internal.kro.run/node-path"] == long_id

    async def warned() -> dict[str, Any] | None:
        page = await client.list(
            EVENTS, namespace=namespace, field_selector="involvedObject.name=long-ids"
        )
        found = [e for e in page.get("items") or () if e.get("reason") == "NodeIDEncoded"]
        return found[0] if found else None

    event = await eventually(warned, what="a NodeIDEncoded Event", timeout_s=TIMEOUT_S)
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "Graph"
    assert long_id in event["message"]
    assert f"kro.run/node-id={expected}" in event["message"]
    assert "internal.kro.run/node-path" in event["message"]
