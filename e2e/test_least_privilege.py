"""kro with least privilege, on the real control plane: the chart's rbac.mode=aggregation.

The chart is rendered with helm and its ServiceAccount, ClusterRoles and ClusterRoleBindings are
applied for real (named after the test's namespace, removed afterwards). The controller runs
in-process as that ServiceAccount: its kubeconfig holds a TokenRequest token and nothing else,
never admin credentials. The test then walks through what docs/rbac.md promises:

1. Before examples/nginxapp/rbac.yaml exists, kro may only manage its own APIs: it creates the
   generated CRD, but cannot watch NginxApps yet. It must cope with those 403s and pick the
   permission up once the role is applied and the cluster has aggregated it (no restart).
2. With the role, examples/nginxapp reconciles to ACTIVE with its Deployment and Service.
3. When the role loses its rules for the child kinds (Deployments, Services, Ingresses), the next
   reconcile (a spec change) reports the 403 in the instance's conditions: ResourcesReady=False
   with a message saying "forbidden", state ERROR. The controller stays healthy and backs off
   instead of hot-looping.
4. With the rules back, the instance recovers by itself and converges on the new spec.

Leader election is on, as in the chart's default configuration, so the static role's Lease rules
are exercised too.

The generated kind's own rules (nginxapps, /status, /finalizers) stay in place in step 3, or kro
could not write the condition that reports the problem.

A second test deletes an instance while the child rules are gone: the instance reports
`deletion blocked: <error>` (reference D-06) and finishes once the rules are back.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from inprocess_controller import InProcessController, Scrape
from nginxapp_example import (
    DYNAMIC_GVR_KEY,
    GENERATED_CRD,
    GROUP,
    NginxApp,
    apply,
    condition,
    established,
    install_kro_crds,
    wait_explained,
)

from kro.api.names import LABEL_AGGREGATE_TO_CONTROLLER, LEADER_ELECTION_LEASE
from kro.testing import testbin
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig
from kro.testing.wait import wait_for

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "kro"
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
ROLE_PATHS = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
DYNAMIC_QUEUE = "dynamic-controller-queue"

# While the child rules are gone: how long the controller is watched, and how much work it may
# do meanwhile. Upstream's per-item backoff (200ms doubling) allows ~5 retries in 5s; a hot loop
# would do hundreds.
OBSERVE_S = 5.0
MAX_RECONCILES_WHILE_FORBIDDEN = 10
MAX_REQUESTS_WHILE_FORBIDDEN = 60


@pytest.fixture(scope="module")
def helm() -> Path:
    return testbin.ensure(["helm"])["helm"]


def render_rbac(helm: Path, namespace: str, fullname: str) -> list[dict[str, Any]]:
    """The chart's ServiceAccount and RBAC objects in aggregation mode."""
    done = subprocess.run(
        [str(helm), "template", "kro", str(CHART), "--namespace", namespace,
         "--set", "rbac.mode=aggregation", "--set", f"fullnameOverride={fullname}"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    return [
        o for o in yaml.safe_load_all(done.stdout)
        if o and o["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")
    ]


def object_path(obj: dict[str, Any], namespace: str) -> str:
    name = obj["metadata"]["name"]
    if obj["kind"] == "ServiceAccount":
        return f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}"
    return f"{RBAC_API}/{ROLE_PATHS[obj['kind']]}/{name}"


@dataclass
class ChartRbac:
    """The chart's RBAC plus the example's aggregated role, applied as admin."""

    admin: AdminApi
    namespace: str
    fullname: str
    objects: list[dict[str, Any]]
    example_role: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        role = yaml.safe_load((REPO / "examples" / "nginxapp" / "rbac.yaml").read_text())
        role["metadata"]["name"] = f"{self.fullname}:controller:reviewed-nginxapps"
        assert role["metadata"]["labels"] == {LABEL_AGGREGATE_TO_CONTROLLER: "true"}
        self.example_role = role

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.fullname}"

    def apply_chart(self) -> None:
        for obj in self.objects:
            apply(self.admin, object_path(obj, self.namespace), obj)

    def apply_example_role(self) -> None:
        """examples/nginxapp/rbac.yaml as shipped (under this test's name)."""
        apply(self.admin, object_path(self.example_role, self.namespace), self.example_role)

    def trim_example_role(self) -> None:
        """The same role with only the generated kind's rules: no Deployments, Services,
        Ingresses. (A plain update, so the apply's field ownership does not matter.)"""
        path = object_path(self.example_role, self.namespace)
        live = self.admin.get(path)
        live["rules"] = [r for r in live["rules"] if r["apiGroups"] == [GROUP]]
        assert live["rules"], "the example role has no rules for the generated kind"
        self.admin.request("PUT", path, live)

    def remove(self) -> None:
        for obj in [*self.objects, self.example_role]:
            if obj["kind"] in ROLE_PATHS:
                self.admin.delete(object_path(obj, self.namespace))

    def can(self, verb: str, group: str, resource: str, subresource: str = "") -> bool:
        """Ask the authorizer what the ServiceAccount may do in the test namespace."""
        review = self.admin.create(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": self.user,
                    "groups": ["system:serviceaccounts", "system:authenticated"],
                    "resourceAttributes": {
                        "verb": verb, "group": group, "resource": resource,
                        "subresource": subresource, "namespace": self.namespace,
                    },
                },
            },
        )
        return bool(review["status"].get("allowed"))

    def wait_children_allowed(self, allowed: bool) -> None:
        """Until the aggregated role does (or no longer does) grant the child kinds."""
        wait_for(
            lambda: all(
                self.can(verb, group, resource) == allowed
                for verb, group, resource in (
                    ("get", "apps", "deployments"),
                    ("patch", "", "services"),
                    ("list", "networking.k8s.io", "ingresses"),
                )
            ),
            timeout_s=30,
            what=f"the aggregated role to {'grant' if allowed else 'stop granting'} "
            "Deployments, Services and Ingresses",
        )


@pytest.fixture
def rbac(helm: Path, kube_admin: AdminApi, kube_namespace: str) -> Iterator[ChartRbac]:
    fullname = kube_namespace  # unique per test run; also names the ServiceAccount
    installed = ChartRbac(kube_admin, kube_namespace, fullname,
                          render_rbac(helm, kube_namespace, fullname))
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in installed.objects)
    assert kinds == [
        ("ClusterRole", f"{fullname}-edit"),
        ("ClusterRole", f"{fullname}-view"),
        ("ClusterRole", f"{fullname}:controller"),
        ("ClusterRole", f"{fullname}:controller:static"),
        ("ClusterRoleBinding", f"{fullname}:controller"),
        ("ClusterRoleBinding", f"{fullname}:controller:static"),
        ("ServiceAccount", fullname),
    ]
    try:
        installed.apply_chart()
        yield installed
    finally:
        installed.remove()


def sa_kubeconfig(cluster: ClusterHandle, admin: AdminApi, rbac: ChartRbac) -> Path:
    """A kubeconfig with a TokenRequest token for the chart's ServiceAccount, and proof of it."""
    path = service_account_kubeconfig(cluster, admin, rbac.namespace, rbac.fullname)
    config = yaml.safe_load(path.read_text())
    assert [set(u["user"]) for u in config["users"]] == [{"token"}]
    review = AdminApi.from_kubeconfig(path).create(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    assert review["status"]["userInfo"]["username"] == rbac.user
    return path


@pytest.fixture
def controller(
    kube_cluster: ClusterHandle, kube_admin: AdminApi, rbac: ChartRbac
) -> Iterator[InProcessController]:
    install_kro_crds(kube_admin)  # as `helm install` does, before the controller starts
    # Leader election on, as the chart's default: the static role must cover the Lease.
    running = InProcessController(
        sa_kubeconfig(kube_cluster, kube_admin, rbac),
        ["--leader-elect=true", f"--leader-election-namespace={rbac.namespace}"],
    ).start()
    try:
        lease = wait_for(
            lambda: (kube_admin.get(
                f"/apis/coordination.k8s.io/v1/namespaces/{rbac.namespace}/leases/"
                f"{LEADER_ELECTION_LEASE}"
            ) or {}).get("spec", {}).get("holderIdentity"),
            timeout_s=30,
            what=f"the controller to take the Lease {LEADER_ELECTION_LEASE} as the ServiceAccount",
        )
        assert lease
        yield running
    finally:
        running.stop()


@pytest.fixture
def nginxapp(
    kube_admin: AdminApi, kube_namespace: str, rbac: ChartRbac, controller: InProcessController
) -> Iterator[NginxApp]:
    app = NginxApp(kube_admin, kube_namespace)
    try:
        yield app
    finally:
        # kro needs its permissions back to delete the children and release its finalizers.
        try:
            rbac.apply_example_role()
            if controller.is_running():
                app.delete()
        finally:
            app.delete_generated_crd()


def healthy_throughout(controller: InProcessController, seconds: float) -> None:
    """Probe /healthz and /readyz for `seconds`; every answer must be 200."""
    deadline = time.monotonic() + seconds
    probes = 0
    while time.monotonic() < deadline:
        assert controller.healthz() == 200
        assert controller.readyz() == 200
        probes += 1
        time.sleep(0.25)
    assert probes >= seconds * 2


def work_done(scrape: Scrape) -> dict[str, float]:
    return {
        "reconciles": scrape.total("dynamic_controller_reconcile_total", gvr=DYNAMIC_GVR_KEY),
        "requests": scrape.total("rest_client_requests_total"),
        "forbidden": scrape.total("rest_client_requests_total", code="403"),
        "retries": scrape.total("workqueue_retries_total", name=DYNAMIC_QUEUE),
    }


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: after[key] - before[key] for key in before}


def forbidden_reported(app: NginxApp, generation: int) -> Callable[[], dict[str, Any] | None]:
    def probe() -> dict[str, Any] | None:
        live = app.get_instance()
        ready = condition(live, "ResourcesReady")
        if (
            ready.get("status") == "False"
            and ready.get("observedGeneration") == generation
            and "forbidden" in str(ready.get("message", "")).lower()
        ):
            return live
        return None

    return probe


def test_least_privilege_controller_reports_forbidden_and_recovers(
    rbac: ChartRbac, controller: InProcessController, nginxapp: NginxApp,
    kube_admin: AdminApi,
) -> None:
    app = nginxapp
    # 1. Only the chart's static rules so far: kro creates the CRD but may not watch NginxApps.
    assert not rbac.can("list", GROUP, "nginxapps"), (
        f"another ClusterRole labelled {LABEL_AGGREGATE_TO_CONTROLLER} already grants nginxapps "
        "(left over from an earlier run?)"
    )
    apply(kube_admin, app.rgd_path, app.rgd)
    wait_explained(lambda: established(kube_admin, GENERATED_CRD), app.get_rgd,
                   what="kro (static role only) to create the generated CRD")
    assert (app.get_rgd() or {}).get("status", {}).get("state") != "Active"
    assert controller.healthz() == 200
    rbac.apply_example_role()
    rbac.wait_children_allowed(True)
    app.apply_rgd(timeout_s=60)

    # 2. ACTIVE with its children, as the ServiceAccount.
    live = app.apply_instance(timeout_s=60)
    assert live["status"]["availableReplicas"] == 2
    deployment = kube_admin.get(app.deployment_path)
    assert deployment["spec"]["replicas"] == 2
    assert kube_admin.get(app.service_path)["spec"]["clusterIP"] == live["status"]["serviceIP"]
    assert kube_admin.get(app.ingress_path) is None  # includeWhen: ingress.enabled is false
    managers = {m["manager"] for m in deployment["metadata"]["managedFields"]}
    assert "kro.run/applyset" in managers

    # 3. The child rules go away; the next reconcile reports the 403 and backs off.
    rbac.trim_example_role()
    rbac.wait_children_allowed(False)
    generation = app.set_replicas(3)
    failed = wait_explained(forbidden_reported(app, generation), app.resources_ready,
                            what="ResourcesReady=False mentioning forbidden", timeout_s=30)
    message = condition(failed, "ResourcesReady")["message"]
    assert message.startswith("resource reconciliation failed: "), message
    assert rbac.user in message, message
    assert failed["status"]["state"] == "ERROR"
    assert condition(failed, "Ready")["status"] == "False"
    assert condition(failed, "InstanceManaged")["status"] == "True"

    before = work_done(controller.metrics())
    healthy_throughout(controller, OBSERVE_S)
    during = delta(before, work_done(controller.metrics()))
    assert during["reconciles"] <= MAX_RECONCILES_WHILE_FORBIDDEN, during
    assert during["requests"] <= MAX_REQUESTS_WHILE_FORBIDDEN, during
    assert during["retries"] >= 1, during  # failures go back through the rate limiter
    assert kube_admin.get(app.deployment_path)["spec"]["replicas"] == 2  # nothing applied
    assert forbidden_reported(app, generation)()  # still reported, not flapping

    # 4. The rules come back: kro retries on its own and converges on the new spec.
    rbac.apply_example_role()
    rbac.wait_children_allowed(True)
    recovered = app.wait_active(generation, timeout_s=60)
    assert condition(recovered, "ResourcesReady")["status"] == "True"
    assert recovered["status"]["availableReplicas"] == 3
    assert kube_admin.get(app.deployment_path)["spec"]["replicas"] == 3
    assert controller.healthz() == 200
    assert controller.metrics().total("dynamic_controller_reconcile_panics_total") == 0


def deletion_blocked_reported(app: NginxApp) -> dict[str, Any] | None:
    live = app.get_instance()
    ready = condition(live, "ResourcesReady")
    if (
        (live or {}).get("status", {}).get("state") == "DELETING"
        and ready.get("status") == "Unknown"
        and ready.get("reason") == "UnderDeletion"
        and str(ready.get("message", "")).startswith("deletion blocked: ")
        and "forbidden" in str(ready.get("message", "")).lower()
    ):
        return live
    return None


def test_deletion_blocked_by_a_missing_permission_is_reported(
    rbac: ChartRbac, controller: InProcessController, nginxapp: NginxApp,
    kube_admin: AdminApi,
) -> None:
    app = nginxapp
    rbac.apply_example_role()
    rbac.wait_children_allowed(True)
    app.apply_rgd(timeout_s=60)
    app.apply_instance(timeout_s=60)

    rbac.trim_example_role()
    rbac.wait_children_allowed(False)
    kube_admin.delete(app.instance_path)
    try:
        wait_explained(lambda: deletion_blocked_reported(app), app.resources_ready,
                       what="state DELETING with ResourcesReady 'deletion blocked: ...forbidden'",
                       timeout_s=10)
        assert controller.healthz() == 200
    finally:
        # With the rules back, kro finishes the deletion: children first, then its finalizer.
        rbac.apply_example_role()
        rbac.wait_children_allowed(True)
        wait_explained(lambda: not kube_admin.exists(app.instance_path), app.resources_ready,
                       what="the instance deleted once kro may delete its children", timeout_s=60)
    assert kube_admin.get(app.deployment_path) is None
    assert kube_admin.get(app.service_path) is None
