"""charts/kro renders objects a real API server accepts, and its RBAC grants what it promises.

Every rendered object goes through server-side apply in dry-run mode (admission, schema
validation, RBAC escalation checks), for both RBAC modes. The RBAC objects are then applied for
real, under a unique full name, to prove on the live cluster that aggregation works and that the
controller's ServiceAccount can do exactly what docs/rbac.md says and no more. The
ServiceMonitor stays disabled: its CRD (prometheus-operator) is not installed here.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.api.names import LABEL_AGGREGATE_TO_CONTROLLER, LEADER_ELECTION_LEASE
from kro.testing import testbin
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle
from kro.testing.wait import wait_for

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "kro"
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def helm() -> Path:
    return testbin.ensure(["helm"])["helm"]


def _render(helm: Path, namespace: str, *sets: str,
            flags: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(helm), "template", "kro", str(CHART), "--namespace", namespace, *flags,
         *(arg for s in sets for arg in ("--set", s))],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _as_stream(objects: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objects)


def _ref(obj: dict[str, Any]) -> str:
    """How kubectl names an object in its output: `kind[.group]/name`."""
    group = obj["apiVersion"].rpartition("/")[0]
    kind = obj["kind"].lower() + (f".{group}" if group else "")
    return f"{kind}/{obj['metadata']['name']}"


def _dry_run_apply(kubectl: Kubectl, namespace: str, manifest: str) -> list[str]:
    done = kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server",
                   "--field-manager=kro-chart-e2e", "-n", namespace, "-f", "-",
                   input=manifest, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("mode", ["unrestricted", "aggregation"], ids=str)
def test_every_rendered_object_passes_server_side_dry_run(
        helm: Path, kubectl: Kubectl, kube_namespace: str, mode: str) -> None:
    objects = _render(helm, kube_namespace, f"rbac.mode={mode}", "metrics.service.create=true",
                      "debug.pprof.enabled=true", "debug.pprof.service.enabled=true",
                      "config.featureGates.CELOmitFunction=true",
                      "config.featureGates.GraphKind=true")
    lines = _dry_run_apply(kubectl, kube_namespace, _as_stream(objects))
    assert len(lines) == len(objects)
    assert all(line.endswith("serverside-applied (server dry run)") for line in lines), lines
    assert sorted(line.split()[0] for line in lines) == sorted(_ref(o) for o in objects)


def test_documented_raw_manifests_pass_server_side_dry_run(
        helm: Path, kubectl: Kubectl, kube_namespace: str) -> None:
    """The `helm template ... > kro.yaml` of docs/install.md, CRDs included."""
    objects = _render(helm, kube_namespace, "rbac.mode=aggregation",
                      "metadata.includeHelmChart=false", "metadata.includeManagedBy=false",
                      flags=("--include-crds",))
    assert {o["kind"] for o in objects} >= {"CustomResourceDefinition", "Deployment"}
    lines = _dry_run_apply(kubectl, kube_namespace, _as_stream(objects))
    assert sorted(line.split()[0] for line in lines) == sorted(_ref(o) for o in objects)


def test_chart_crds_pass_server_side_dry_run(kubectl: Kubectl, kube_namespace: str) -> None:
    manifest = "\n---\n".join(p.read_text() for p in sorted((CHART / "crds").glob("*.yaml")))
    lines = _dry_run_apply(kubectl, kube_namespace, manifest)
    assert sorted(line.split()[0] for line in lines) == [
        "customresourcedefinition.apiextensions.k8s.io/graphrevisions.internal.kro.run",
        "customresourcedefinition.apiextensions.k8s.io/graphs.kro.run",
        "customresourcedefinition.apiextensions.k8s.io/resourcegraphdefinitions.kro.run",
    ]


def test_helm_install_dry_run_shows_the_notes(
        helm: Path, kube_cluster: ClusterHandle, kube_namespace: str) -> None:
    done = subprocess.run(
        [str(helm), "install", "kro", str(CHART), "--namespace", kube_namespace,
         "--dry-run=server", f"--kubeconfig={kube_cluster.kubeconfig}",
         "--set", "rbac.mode=aggregation"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    notes = done.stdout.split("NOTES:", 1)[1]
    assert LABEL_AGGREGATE_TO_CONTROLLER in notes
    assert f'Lease "{LEADER_ELECTION_LEASE}"' in notes
    assert f"kubectl -n {kube_namespace} rollout status deployment/kro" in notes


def _cluster_scoped(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]


def _rbac_objects(helm: Path, namespace: str, fullname: str,
                  *sets: str) -> list[dict[str, Any]]:
    """The chart's ServiceAccount and cluster RBAC, named `fullname`, as `sets` render them."""
    return [o for o in _render(helm, namespace, *sets, f"fullnameOverride={fullname}")
            if o["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")]


def _delete_cluster_scoped(admin: AdminApi, objects: list[dict[str, Any]]) -> None:
    """Remove the ClusterRoles and ClusterRoleBindings a test applied (they outlive its
    namespace)."""
    for obj in _cluster_scoped(objects):
        plural = "clusterroles" if obj["kind"] == "ClusterRole" else "clusterrolebindings"
        admin.delete(f"{RBAC_API}/{plural}/{obj['metadata']['name']}")


@pytest.fixture
def installed_rbac(helm: Path, kubectl: Kubectl, kube_admin: AdminApi,
                   kube_namespace: str) -> Iterator[tuple[str, str]]:
    """The chart's ServiceAccount and RBAC (aggregation mode) applied for real.

    Yields (full name, ServiceAccount user). Cluster-scoped objects are named after the test
    namespace so that runs never collide, and are deleted afterwards.
    """
    fullname = kube_namespace
    objects = _rbac_objects(helm, kube_namespace, fullname, "rbac.mode=aggregation")
    example = yaml.safe_load((REPO / "examples" / "nginxapp" / "rbac.yaml").read_text())
    example["metadata"]["name"] = f"{fullname}:controller:reviewed-nginxapps"
    objects.append(example)
    try:
        kubectl("apply", "--server-side", "-n", kube_namespace, "-f", "-",
                input=_as_stream(objects))
        yield fullname, f"system:serviceaccount:{kube_namespace}:{fullname}"
    finally:
        _delete_cluster_scoped(kube_admin, objects)


def _can(admin: AdminApi, user: str, verb: str, resource: str, namespace: str | None) -> bool:
    """Ask the authorizer directly (SubjectAccessReview): no discovery, so the kinds need not
    exist. `resource` is `plural[.group][/subresource]`."""
    name, _, subresource = resource.partition("/")
    plural, _, group = name.partition(".")
    attributes = {"verb": verb, "group": group, "resource": plural, "subresource": subresource}
    if namespace:
        attributes["namespace"] = namespace
    review = admin.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts", "system:authenticated"],
                 "resourceAttributes": attributes}})
    return bool(review["status"].get("allowed"))


def _rule_set(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in role.get("rules") or [] for g in rule.get("apiGroups", [])
            for r in rule.get("resources", []) for v in rule["verbs"]}


def test_aggregated_role_collects_the_static_and_example_rules(
        installed_rbac: tuple[str, str], kube_admin: AdminApi) -> None:
    fullname, _ = installed_rbac
    static = kube_admin.get(f"{RBAC_API}/clusterroles/{fullname}:controller:static")
    example = kube_admin.get(f"{RBAC_API}/clusterroles/{fullname}:controller:reviewed-nginxapps")
    wanted = _rule_set(static) | _rule_set(example)
    wait_for(lambda: wanted <= _rule_set(
        kube_admin.get(f"{RBAC_API}/clusterroles/{fullname}:controller")),
        what="the aggregation controller to fill in the aggregated role")


# (verb, resource, namespaced?, allowed?) for the controller's ServiceAccount in aggregation mode
# with the nginxapp example role installed.
PERMISSIONS = [
    ("watch", "resourcegraphdefinitions.kro.run", False, True),
    ("patch", "resourcegraphdefinitions.kro.run/status", False, True),
    ("update", "resourcegraphdefinitions.kro.run/finalizers", False, True),
    ("delete", "graphrevisions.internal.kro.run", False, True),
    ("create", "customresourcedefinitions.apiextensions.k8s.io", False, True),
    ("update", "leases.coordination.k8s.io", True, True),
    ("create", "events", True, True),
    ("patch", "events.events.k8s.io", True, True),
    ("create", "selfsubjectaccessreviews.authorization.k8s.io", False, True),
    # Graphs (V-86): watched, finalized, given a status; never created or deleted by kro, and
    # without GraphKind kro impersonates nobody.
    ("watch", "graphs.kro.run", True, True),
    ("patch", "graphs.kro.run", True, True),
    ("update", "graphs.kro.run/finalizers", True, True),
    ("patch", "graphs.kro.run/status", True, True),
    ("create", "graphs.kro.run", True, False),
    ("delete", "graphs.kro.run", True, False),
    ("impersonate", "serviceaccounts", True, False),
    ("patch", "nginxapps.platform.example.com", True, True),
    ("patch", "nginxapps.platform.example.com/status", True, True),  # status by SSA (V-04)
    ("update", "nginxapps.platform.example.com/status", True, False),
    ("create", "deployments.apps", True, True),
    ("delete", "services", True, True),
    ("watch", "ingresses.networking.k8s.io", True, True),
    # Kinds no example RGD creates, so another test's aggregated role cannot grant them.
    ("create", "pods/exec", True, False),
    ("update", "nodes", False, False),
    ("create", "clusterroles.rbac.authorization.k8s.io", False, False),
    ("delete", "events", True, False),
    ("delete", "customresourcedefinitions.apiextensions.k8s.io/status", False, False),
    # Least privilege (kro generate rbac): kro never creates or PUTs instances.
    ("create", "nginxapps.platform.example.com", True, False),
    ("update", "nginxapps.platform.example.com", True, False),
]


def test_service_account_has_exactly_the_documented_permissions(
        installed_rbac: tuple[str, str], kube_admin: AdminApi, kube_namespace: str) -> None:
    _, user = installed_rbac
    # The example's rules reach the SA only through aggregation, which is asynchronous.
    wait_for(lambda: _can(kube_admin, user, "create", "deployments.apps", kube_namespace),
             what="the example role to be aggregated")
    actual = [(verb, resource, _can(kube_admin, user, verb, resource,
                                    kube_namespace if namespaced else None))
              for verb, resource, namespaced, _ in PERMISSIONS]
    assert actual == [(verb, resource, allowed) for verb, resource, _, allowed in PERMISSIONS]


def test_people_with_builtin_roles_get_kros_edit_and_view_rules(
        installed_rbac: tuple[str, str], kube_admin: AdminApi, kube_namespace: str) -> None:
    rgds = ("resourcegraphdefinitions", "resourcegraphdefinitions/status")

    def has(role: str, verbs: tuple[str, ...]) -> bool:
        rules = _rule_set(kube_admin.get(f"{RBAC_API}/clusterroles/{role}"))
        return {("kro.run", r, verb) for r in rgds for verb in verbs} <= rules

    wait_for(lambda: has("view", ("get", "list", "watch")),
             what="kro's view role to be aggregated into the built-in view role")
    wait_for(lambda: has("edit", ("get", "create", "patch", "delete", "deletecollection")),
             what="kro's edit and view roles to be aggregated into the built-in edit role")
    wait_for(lambda: has("admin", ("watch", "update")),
             what="kro's edit and view roles to be aggregated into the built-in admin role")
    # V-86: Graphs do not come with the built-in roles: someone bound to `admin` in a namespace
    # may not create a Graph there (a Graph borrows a ServiceAccount's permissions).
    person = f"person-{kube_namespace}"
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "admin-person", "namespace": kube_namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "admin"},
               "subjects": [{"kind": "User", "name": person,
                             "apiGroup": "rbac.authorization.k8s.io"}]}
    kube_admin.create(f"{RBAC_API}/namespaces/{kube_namespace}/rolebindings", binding)
    wait_for(lambda: _can(kube_admin, person, "create", "configmaps", kube_namespace),
             what="the RoleBinding to admin in effect")
    assert not _can(kube_admin, person, "create", "graphs.kro.run", kube_namespace)
    assert not _can(kube_admin, person, "get", "graphs.kro.run", kube_namespace)


def test_unrestricted_mode_lets_the_service_account_do_anything(
        helm: Path, kubectl: Kubectl, kube_admin: AdminApi, kube_namespace: str) -> None:
    objects = _rbac_objects(helm, kube_namespace, kube_namespace, "rbac.mode=unrestricted")
    user = f"system:serviceaccount:{kube_namespace}:{kube_namespace}"
    try:
        kubectl("apply", "--server-side", "-n", kube_namespace, "-f", "-",
                input=_as_stream(objects))
        wait_for(lambda: _can(kube_admin, user, "*", "*", None), what="cluster-wide access")
        assert _can(kube_admin, user, "get", "secrets", "kube-system")
        # GraphKind needs nothing more in this mode: "*" includes impersonate.
        assert _can(kube_admin, user, "impersonate", "serviceaccounts", kube_namespace)
        assert _can(kube_admin, user, "create", "nginxapps.platform.example.com", kube_namespace)
    finally:
        _delete_cluster_scoped(kube_admin, objects)


def test_graph_kind_lets_the_service_account_impersonate_in_aggregation_mode(
        helm: Path, kubectl: Kubectl, kube_admin: AdminApi, kube_namespace: str) -> None:
    """V-86: with GraphKind the static role adds `impersonate` on serviceaccounts (and only
    that: still no creating or deleting Graphs)."""
    fullname = f"{kube_namespace}-graphs"
    objects = _rbac_objects(helm, kube_namespace, fullname, "rbac.mode=aggregation",
                            "config.featureGates.GraphKind=true")
    user = f"system:serviceaccount:{kube_namespace}:{fullname}"
    try:
        kubectl("apply", "--server-side", "-n", kube_namespace, "-f", "-",
                input=_as_stream(objects))
        wait_for(lambda: _can(kube_admin, user, "impersonate", "serviceaccounts",
                              kube_namespace), what="impersonate granted")
        assert _can(kube_admin, user, "impersonate", "serviceaccounts", "kube-system")
        assert not _can(kube_admin, user, "impersonate", "users", None)
        assert not _can(kube_admin, user, "create", "graphs.kro.run", kube_namespace)
        assert _can(kube_admin, user, "patch", "graphs.kro.run/status", kube_namespace)
    finally:
        _delete_cluster_scoped(kube_admin, objects)


def test_rendered_deployment_is_accepted_with_its_security_context(
        helm: Path, kubectl: Kubectl, kube_namespace: str) -> None:
    """The API server's own view of the Deployment keeps the hardening (nothing pruned)."""
    (deployment,) = [o for o in _render(helm, kube_namespace) if o["kind"] == "Deployment"]
    done = kubectl("apply", "--server-side", "--dry-run=server", "-n", kube_namespace,
                   "-o", "json", "-f", "-", input=_as_stream([deployment]))
    stored = json.loads(done.stdout)
    container = stored["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"] == deployment["spec"]["template"]["spec"][
        "containers"][0]["securityContext"]
    assert container["args"] == deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert container["livenessProbe"]["httpGet"]["port"] == 8079
