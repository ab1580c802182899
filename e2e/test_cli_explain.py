"""`kro explain` on the real control plane, run as a user who holds only the `view` role.

The chart's user roles are rendered with helm, and the one aggregated into the built-in `view`
ClusterRole (`<fullname>-view`: get/list/watch on RGDs) is applied; a ServiceAccount bound to
`view` cluster-wide, plus read access to the instance kinds, is the identity explain runs as,
through a kubeconfig holding nothing but its token. Since v0.10 the chart's view role names the
RGD resources only (an instance kind is an API of its own), so a platform team grants read on
its instance kinds as it grants any other API: here get/list/watch on `kro.run` resources. So
explain proves it needs no write, no Secret, no CRD and no GraphRevision access. Instances are
in the `kro.run` group, each test with a kind of its own.

Explain runs as a separate process (`python -c`), as a user runs it, against instances the
in-process kro controller is reconciling:

(a) waiting on readiness: a readyWhen that never holds, a dependent waiting on it, and a node
    whose expression reads a field that never appears;
(b) a child the API server refuses with 422;
(c) a resource excluded by includeWhen;
(d) a deletion stuck on a child held by a foreign finalizer;
(e) an external reference that does not exist, an expression that fails at run time, and a
    child the API server forbids (403, exceeded quota).

Both explain and the controller report from the engine's node results (explain runs the same
pass, dry): the nodes explain flags are the ones the controller's ResourcesReady names.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kro_harness import CONFIGMAPS, KroEnv, kro_fixtures, wait_for

from kro.testing import testbin
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import (
    ClusterHandle,
    create_namespace,
    service_account_kubeconfig,
)
from kro.testing.wait import wait_for as wait_for_sync

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "kro"
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
GROUP = "kro.run"
HOLD_FINALIZER = "example.com/hold"
EXPLAIN = (
    "import argparse, sys\n"
    "from kro.cli.explain import add_explain_command\n"
    "parser = argparse.ArgumentParser(prog='kro')\n"
    "add_explain_command(parser.add_subparsers(dest='command', required=True))\n"
    "args = parser.parse_args(sys.argv[1:])\n"
    "sys.exit(args.handler(args))\n"
)


@dataclass(frozen=True)
class Explained:
    code: int
    out: str
    err: str

    @property
    def root_cause(self) -> str:
        return self.out.splitlines()[0] if self.out else ""


controller, kro = kro_fixtures()


def chart_view_role(fullname: str) -> dict[str, Any]:
    """The chart's ClusterRole that aggregates read access to kro.run into `view`."""
    helm = testbin.ensure(["helm"])["helm"]
    done = subprocess.run(
        [str(helm), "template", "kro", str(CHART), "--set", f"fullnameOverride={fullname}"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    roles = [
        o for o in yaml.safe_load_all(done.stdout)
        if o and o["kind"] == "ClusterRole" and o["metadata"]["name"] == f"{fullname}-view"
    ]
    assert len(roles) == 1
    assert roles[0]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    return dict(roles[0])


def can(admin: AdminApi, user: str, verb: str, group: str, resource: str) -> bool:
    review = admin.create(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": ["system:serviceaccounts", "system:authenticated"],
                     "resourceAttributes": {"verb": verb, "group": group, "resource": resource}},
        },
    )
    return bool(review["status"].get("allowed"))


@pytest.fixture(scope="module")
def viewer(kube_cluster: ClusterHandle, kube_admin: AdminApi) -> Iterator[Path]:
    """A kubeconfig for a ServiceAccount bound to the `view` ClusterRole, and nothing else."""
    name = f"kro-explain-{secrets.token_hex(4)}"
    create_namespace(kube_admin, name)
    role = chart_view_role(name)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{name}-viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": name}],
    }
    instances = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": f"{name}-instances"},
        "rules": [{"apiGroups": [GROUP], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
    }
    instances_binding = {
        **binding,
        "metadata": {"name": f"{name}-instances"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": f"{name}-instances"},
    }
    try:
        kube_admin.create(f"{RBAC_API}/clusterroles", role)
        kube_admin.create(f"{RBAC_API}/clusterrolebindings", binding)
        kube_admin.create(f"{RBAC_API}/clusterroles", instances)
        kube_admin.create(f"{RBAC_API}/clusterrolebindings", instances_binding)
        path = service_account_kubeconfig(kube_cluster, kube_admin, name, "viewer")
        user = f"system:serviceaccount:{name}:viewer"
        wait_for_sync(
            lambda: can(kube_admin, user, "list", GROUP, "resourcegraphdefinitions"),
            timeout_s=30, what="the view role to aggregate the chart's kro.run rules",
        )
        # What the identity must not have: explain works without any of it.
        for verb, group, resource in (
            ("get", "", "secrets"), ("create", "", "configmaps"), ("patch", GROUP, "*"),
            ("list", "internal.kro.run", "graphrevisions"),
            ("get", "apiextensions.k8s.io", "customresourcedefinitions"),
        ):
            assert not can(kube_admin, user, verb, group, resource), (verb, group, resource)
        yield path
    finally:
        kube_admin.delete(f"{RBAC_API}/clusterrolebindings/{name}-viewer")
        kube_admin.delete(f"{RBAC_API}/clusterroles/{name}-view")
        kube_admin.delete(f"{RBAC_API}/clusterrolebindings/{name}-instances")
        kube_admin.delete(f"{RBAC_API}/clusterroles/{name}-instances")
        kube_admin.delete(f"/api/v1/namespaces/{name}")


def explain_sync(kubeconfig: Path, *args: str) -> Explained:
    done = subprocess.run(
        [sys.executable, "-c", EXPLAIN, "explain", *args, "--kubeconfig", str(kubeconfig)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    return Explained(done.returncode, done.stdout, done.stderr)


async def explain(kubeconfig: Path, *args: str) -> Explained:
    result = await asyncio.to_thread(explain_sync, kubeconfig, *args)
    print(f"$ kro explain {' '.join(args)}  (exit {result.code})\n{result.out}{result.err}")
    return result


async def explain_json(kubeconfig: Path, *args: str) -> dict[str, Any]:
    result = await asyncio.to_thread(explain_sync, kubeconfig, *args, "-o", "json")
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


def nodes_of(data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["id"]: n for n in data["nodes"]}


def configmap(name: str, data: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data),
            **extra}


def kind_for(kro: KroEnv, case: str) -> str:
    return f"Explain{case}{kro.suffix.capitalize()}"


async def serve(kro: KroEnv, case: str, spec: Mapping[str, Any], resources: list[Any]) -> str:
    """An RGD in the kro.run group (what the view role covers) with a kind of this test."""
    kind = kind_for(kro, case)
    rgd = kro.rgd(case.lower(), kind, spec, resources)
    del rgd["spec"]["schema"]["group"]
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    return kind


def resources_ready(obj: Mapping[str, Any]) -> str:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "ResourcesReady":
            return str(condition.get("message") or "")
    return ""


async def test_waiting_on_readiness_and_on_a_missing_field(kro: KroEnv, viewer: Path) -> None:
    kind = await serve(kro, "Wait", {}, [
        {"id": "config", "readyWhen": ["${config.data.phase == 'done'}"],
         "template": configmap("${schema.metadata.name}-config", {"phase": "starting"})},
        {"id": "app", "template": configmap("${schema.metadata.name}-app",
                                            {"phase": "${config.data.phase}"})},
        {"id": "source", "template": configmap("${schema.metadata.name}-source", {"a": "b"})},
        {"id": "sink", "template": configmap("${schema.metadata.name}-sink",
                                             {"token": "${source.data.token}"})},
    ])
    await kro.apply_instance(kind, "demo", {}, group=GROUP)
    gvr = await kro.gvr_of(kind, GROUP)
    live = await kro.wait_instance(
        gvr, "demo", lambda o: "config" in resources_ready(o) and "sink" in resources_ready(o),
        what="kro to report config and sink as waiting",
    )
    result = await explain(viewer, f"{kind}/demo", "-n", kro.namespace)
    assert result.code == 0, result.err
    assert result.root_cause == (
        f'Root cause: node "config" (ConfigMap {kro.namespace}/demo-config) is not ready: '
        "readyWhen \"config.data.phase == 'done'\" is false"
    )
    nodes = nodes_of(await explain_json(viewer, f"{kind}/demo", "-n", kro.namespace))
    assert nodes["config"]["status"] == "not-ready"
    assert nodes["config"]["expression"] == "config.data.phase == 'done'"
    assert nodes["app"]["status"] == "waiting"
    assert nodes["app"]["waitingOn"] == "config"
    assert nodes["source"]["status"] == "applied"
    assert nodes["sink"]["status"] == "waiting"
    assert nodes["sink"]["expression"] == "source.data.token"
    assert nodes["sink"]["missing"] == {
        "node": "source", "path": "data.token",
        "obj": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": kro.namespace,
                "name": "demo-source"},
    }
    assert "GraphRevisions" in result.out  # not readable with view: said, and worked around
    assert flagged_by_explain(nodes) == flagged_by_controller(live, list(nodes))
    assert "would write" not in result.out  # what exists is what kro applied


async def test_a_child_refused_with_422(kro: KroEnv, viewer: Path) -> None:
    kind = await serve(kro, "Invalid", {"name": "string"}, [
        {"id": "base", "template": configmap("${schema.metadata.name}-base", {"a": "b"})},
        {"id": "named", "template": configmap("${schema.spec.name}", {"a": "b"})},
    ])
    await kro.apply_instance(kind, "demo", {"name": "Not_A_Valid_Name"}, group=GROUP)
    gvr = await kro.gvr_of(kind, GROUP)
    await kro.wait_instance(
        gvr, "demo", lambda o: "resource error" in resources_ready(o),
        what="kro to record the apply error",
    )
    result = await explain(viewer, f"{kind}/demo", "-n", kro.namespace)
    assert result.code == 0, result.err
    cause = result.root_cause
    assert cause.startswith(
        f'Root cause: node "named" (ConfigMap {kro.namespace}/Not_A_Valid_Name) failed: '
        "the API server refused it: "
    ), cause
    assert "422" in cause
    assert "metadata.name" in cause
    nodes = nodes_of(await explain_json(viewer, f"{kind}/demo", "-n", kro.namespace))
    assert nodes["named"]["status"] == "error"
    assert nodes["base"]["status"] == "applied"


async def test_a_resource_excluded_by_include_when(kro: KroEnv, viewer: Path) -> None:
    kind = await serve(kro, "Optional", {"extra": "boolean | default=false"}, [
        {"id": "base", "template": configmap("${schema.metadata.name}-base", {"a": "b"})},
        {"id": "extra", "includeWhen": ["${schema.spec.extra}"],
         "template": configmap("${schema.metadata.name}-extra", {"from": "${base.data.a}"})},
    ])
    await kro.apply_instance(kind, "demo", {}, group=GROUP)
    gvr = await kro.gvr_of(kind, GROUP)
    await kro.wait_instance(gvr, "demo")
    result = await explain(viewer, f"{kind.lower()}/demo", "-n", kro.namespace)
    assert result.code == 0, result.err
    assert result.root_cause == (
        "Root cause: no problem found: the instance is ACTIVE and every resource is ready"
    )
    assert 'includeWhen "schema.spec.extra" is false' in result.out
    as_yaml = await asyncio.to_thread(
        explain_sync, viewer, f"{kind}/demo", "-n", kro.namespace, "-o", "yaml"
    )
    assert yaml.safe_load(as_yaml.out)["rootCause"] == result.root_cause.removeprefix(
        "Root cause: "
    )
    nodes = nodes_of(await explain_json(viewer, f"{kind}/demo", "-n", kro.namespace))
    assert nodes["extra"]["status"] == "excluded"
    assert nodes["extra"]["expression"] == "schema.spec.extra"
    assert nodes["base"]["status"] == "applied"


async def test_a_deletion_stuck_on_a_foreign_finalizer(
    kro: KroEnv, viewer: Path, kube_admin: AdminApi
) -> None:
    kind = await serve(kro, "Held", {}, [
        {"id": "base", "template": configmap("${schema.metadata.name}-base", {"a": "b"})},
        {"id": "held", "template": configmap("${schema.metadata.name}-held",
                                             {"from": "${base.data.a}"})},
    ])
    await kro.apply_instance(kind, "demo", {}, group=GROUP)
    gvr = await kro.gvr_of(kind, GROUP)
    await kro.wait_instance(gvr, "demo")
    held_path = f"/api/v1/namespaces/{kro.namespace}/configmaps/demo-held"
    kube_admin.request("PATCH", held_path, {"metadata": {"finalizers": [HOLD_FINALIZER]}},
                       content_type="application/merge-patch+json")
    try:
        await kro.client.delete(gvr, "demo", namespace=kro.namespace)
        await wait_for(
            lambda: _terminating(kro, "demo-held"), what="kro to delete the held child"
        )
        result = await explain(viewer, f"{kind}/demo", "-n", kro.namespace)
        assert result.code == 0, result.err
        assert result.root_cause == (
            f"Root cause: deletion is blocked at wave 2: ConfigMap {kro.namespace}/demo-held "
            f'(node "held") is terminating but held by finalizer(s) {HOLD_FINALIZER}, which kro '
            "does not own: whoever added them must finish (or remove them) before kro can "
            "delete the next wave"
        )
        data = await explain_json(viewer, f"{kind}/demo", "-n", kro.namespace)
        deletion = data["deletion"]
        assert deletion["wave"] == 2
        assert deletion["instanceFinalizers"] == ["kro.run/finalizer"]
        waves = {m["node"]: (m["wave"], m["terminating"]) for m in deletion["members"]}
        assert waves == {"held": (2, True), "base": (1, False)}  # wave 1 waits its turn
    finally:
        kube_admin.request("PATCH", held_path, {"metadata": {"finalizers": None}},
                           content_type="application/merge-patch+json")
    await kro.wait_gone(gvr, "demo")


async def _terminating(kro: KroEnv, name: str) -> bool:
    live = await kro.get(CONFIGMAPS, name)
    return bool(live["metadata"].get("deletionTimestamp"))


async def test_an_rgd_and_unknown_targets(kro: KroEnv, viewer: Path) -> None:
    kind = await serve(kro, "Plain", {}, [
        {"id": "base", "template": configmap("${schema.metadata.name}-base", {"a": "b"})},
    ])
    rgd = kro.rgd_name("plain")
    result = await explain(viewer, "rgd", rgd)
    assert result.code == 0, result.err
    assert result.root_cause == (
        "Root cause: no problem found: the ResourceGraphDefinition is Active"
    )
    assert f"kind {kind}" in result.out
    missing = await explain(viewer, f"{kind}/nobody", "-n", kro.namespace)
    assert missing.code == 1
    assert f'{kind} "nobody" not found in namespace "{kro.namespace}"' in missing.err
    unknown = await explain(viewer, "nosuchkind/x")
    assert unknown.code == 1
    assert 'no resource type "nosuchkind"' in unknown.err


async def test_an_rgd_that_is_not_active(kro: KroEnv, viewer: Path) -> None:
    rgd = kro.rgd("broken", kind_for(kro, "Broken"), {"name": "string"}, [
        {"id": "config", "template": configmap("${schema.metadata.name}",
                                               {"n": "${schema.spec.nmae}"})},
    ])
    del rgd["spec"]["schema"]["group"]
    await kro.apply_rgd(rgd)
    name = rgd["metadata"]["name"]

    async def rejected() -> bool:
        live = await kro.get_rgd(name)
        return any(c.get("type") == "GraphAccepted" and c.get("status") == "False"
                   for c in (live.get("status") or {}).get("conditions") or [])

    await wait_for(rejected, what=f"RGD {name} rejected")
    result = await explain(viewer, "rgd", name)
    assert result.code == 0, result.err
    assert result.root_cause.startswith(
        'Root cause: the graph does not compile (resource "config"): '
    ), result.root_cause
    data = await explain_json(viewer, "rgd", name)
    assert data["build"]["resourceId"] == "config"
    assert data["build"]["expression"] == "schema.spec.nmae"
    assert data["state"] == "Inactive"


# -- explain's verdict is the controller's: both come from the engine's node results ----------


async def explained(kro: KroEnv, viewer: Path, kind: str) -> tuple[Explained, dict[str, Any]]:
    """`kro explain <kind>/demo` as text (it succeeded), and its nodes from `-o json`."""
    result = await explain(viewer, f"{kind}/demo", "-n", kro.namespace)
    assert result.code == 0, result.err
    return result, nodes_of(await explain_json(viewer, f"{kind}/demo", "-n", kro.namespace))


def flagged_by_controller(obj: Mapping[str, Any], node_ids: list[str]) -> set[str]:
    """The nodes the controller's ResourcesReady message names (`<prefix>: a: ...; b: ...`)."""
    message = resources_ready(obj)
    _, _, body = message.partition(": ")
    return {n for n in node_ids if body.startswith(f"{n}: ") or f"; {n}: " in body}


def flagged_by_explain(nodes: Mapping[str, Mapping[str, Any]]) -> set[str]:
    return {n for n, node in nodes.items() if node["status"] not in ("ready", "applied",
                                                                     "excluded")}


async def test_an_external_reference_that_does_not_exist(kro: KroEnv, viewer: Path) -> None:
    shared = f"shared-{kro.suffix}"
    kind = await serve(kro, "External", {}, [
        {"id": "ext", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": shared}}},
        {"id": "base", "template": configmap("${schema.metadata.name}-base", {"a": "b"})},
        {"id": "copy", "template": configmap("${schema.metadata.name}-copy",
                                             {"k": "${ext.data.k}"})},
    ])
    await kro.apply_instance(kind, "demo", {}, group=GROUP)
    gvr = await kro.gvr_of(kind, GROUP)
    live = await kro.wait_instance(gvr, "demo", lambda o: "ext" in resources_ready(o),
                                   what="kro to report the external reference")
    result, nodes = await explained(kro, viewer, kind)
    assert result.root_cause == (
        f'Root cause: node "ext" (ConfigMap {kro.namespace}/{shared}) is waiting: the external '
        f"reference ConfigMap {kro.namespace}/{shared} does not exist"
    )
    assert nodes["copy"]["waitingOn"] == "ext"
    assert flagged_by_explain(nodes) == flagged_by_controller(live, list(nodes)) == {"ext", "copy"}
    assert live["status"]["state"] == "IN_PROGRESS"


async def test_an_expression_that_fails_at_run_time(kro: KroEnv, viewer: Path) -> None:
    kind = await serve(kro, "Divide", {"n": "integer | default=1"}, [
        {"id": "base", "template": configmap("${schema.metadata.name}-base", {"a": "b"})},
        {"id": "ratio", "template": configmap("${schema.metadata.name}-ratio",
                                              {"r": "${string(100 / schema.spec.n)}"})},
    ])
    await kro.apply_instance(kind, "demo", {"n": 0}, group=GROUP)
    gvr = await kro.gvr_of(kind, GROUP)
    live = await kro.wait_instance(
        gvr, "demo", lambda o: (o.get("status") or {}).get("state") == "ERROR"
        and "ratio" in resources_ready(o), what="kro to report the failed expression",
    )
    result, nodes = await explained(kro, viewer, kind)
    assert result.root_cause == (  # the object cannot be named: its name was never rendered
        'Root cause: node "ratio" failed: an expression failed: node "ratio": failed to evaluate '
        'expression "string(100 / schema.spec.n)" in path "data.r": divide by zero'
    )
    assert nodes["ratio"]["status"] == "error"
    assert nodes["ratio"]["expression"] == "string(100 / schema.spec.n)"
    assert nodes["ratio"]["message"] in resources_ready(live)  # the controller's very words


async def test_a_child_the_api_server_forbids(
    kro: KroEnv, viewer: Path, kube_admin: AdminApi
) -> None:
    """A ResourceQuota admits one more ConfigMap than the namespace holds: the second child is
    refused with 403 Forbidden (exceeded quota), on the real API server."""
    quota_path = f"/api/v1/namespaces/{kro.namespace}/resourcequotas"
    existing = kube_admin.request("GET", f"/api/v1/namespaces/{kro.namespace}/configmaps")
    allowed = len(existing["items"]) + 1
    kube_admin.create(quota_path, {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "one-more"},
        "spec": {"hard": {"count/configmaps": str(allowed)}},
    })
    wait_for_sync(
        lambda: (kube_admin.request("GET", f"{quota_path}/one-more").get("status") or {})
        .get("hard"),
        timeout_s=60, what="kube-controller-manager to compute the quota's usage",
    )
    kind = await serve(kro, "Quota", {}, [
        {"id": "base", "template": configmap("${schema.metadata.name}-base", {"a": "b"})},
        {"id": "extra", "template": configmap("${schema.metadata.name}-extra",
                                              {"from": "${base.data.a}"})},
    ])
    await kro.apply_instance(kind, "demo", {}, group=GROUP)
    gvr = await kro.gvr_of(kind, GROUP)
    live = await kro.wait_instance(gvr, "demo", lambda o: "extra: 403" in resources_ready(o),
                                   what="kro to record the 403")
    result, nodes = await explained(kro, viewer, kind)
    assert result.root_cause.startswith(
        f'Root cause: node "extra" (ConfigMap {kro.namespace}/demo-extra) failed: the API '
        "server refused it: 403"
    ), result.root_cause
    assert "exceeded quota" in result.root_cause
    assert nodes["base"]["status"] == "applied"
    assert flagged_by_explain(nodes) == flagged_by_controller(live, list(nodes)) == {"extra"}
