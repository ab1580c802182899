"""What kro reports when it may not watch a kind, on the real control plane (V-14, V-15).

kro runs in-process as a ServiceAccount whose ClusterRoles the test writes: kro's own APIs
(RGDs, GraphRevisions, CRDs, Events, access reviews), the generated kinds it is meant to serve,
and ConfigMaps, the child kind, without `list` and `watch` unless a test grants them. So kro can
create and read each ConfigMap by name, but its informer cannot list the kind:

(a) with the grant, an instance lists five conditions in upstream's order, `WatchesHealthy`
    True `AllWatchesSynced` between `ResourcesReady` and `Ready`;
(b) without it, the instance still applies its ConfigMap and is `Ready`/`ACTIVE`, while
    `WatchesHealthy` is False `WatchBlocked` naming `configmaps` and carrying the API server's
    `Forbidden`; granting list/watch turns it True with no edit of the instance;
(c) an RGD whose generated kind kro may not list reports `ControllerReady=False`
    `FailedToStart` with the API server's `forbidden` within 20 s (not after the 30 s sync
    timeout) and stays `Inactive`, while another RGD goes `Active`; granting the kind makes it
    `Active`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from inprocess_controller import InProcessController
from nginxapp_example import (
    CRDS_API,
    RGDS_API,
    apply,
    condition,
    established,
    install_kro_crds,
)

from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig
from kro.testing.wait import wait_for

RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
SA = "kro-watches"
FIVE = ["InstanceManaged", "GraphResolved", "ResourcesReady", "WatchesHealthy", "Ready"]
DEADLINE_S = 60.0
FAILED_TO_START_WITHIN_S = 20.0  # V-15; the informer sync timeout it must beat is 30 s
# Granted list/watch, the refused informer lists at its next retry: its backoff doubles from
# 0.8 s up to 30 s (jittered), so a grant some seconds after the refusal is seen within ~15 s.
RECOVERY_S = 60.0


@dataclass
class Identity:
    """kro's ServiceAccount and the ClusterRoles the test grants it, all named per test."""

    admin: AdminApi
    namespace: str
    group: str

    @property
    def prefix(self) -> str:
        return f"{self.namespace}:kro-watches"

    def grant(self, suffix: str, rules: list[dict[str, Any]]) -> None:
        """A ClusterRole `<prefix>:<suffix>` with `rules`, bound to the ServiceAccount."""
        name = f"{self.prefix}:{suffix}"
        apply(self.admin, f"{RBAC_API}/clusterroles/{name}", {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        })
        apply(self.admin, f"{RBAC_API}/clusterrolebindings/{name}", {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": self.namespace}],
        })

    def can(self, verb: str, group: str, resource: str) -> bool:
        """The authorizer's answer for the ServiceAccount, cluster-wide."""
        review = self.admin.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": f"system:serviceaccount:{self.namespace}:{SA}",
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "resourceAttributes": {"verb": verb, "group": group, "resource": resource},
            },
        })
        return bool(review["status"].get("allowed"))

    def grant_kind(self, plural: str) -> None:
        """Everything kro does with a generated kind (docs/rbac.md)."""
        self.grant(plural, [
            {"apiGroups": [self.group], "resources": [plural],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": [self.group], "resources": [f"{plural}/status", f"{plural}/finalizers"],
             "verbs": ["get", "update", "patch"]},
        ])
        wait_for(lambda: self.can("watch", self.group, plural), timeout_s=30,
                 what=f"list/watch of {plural} granted")

    def grant_configmap_watches(self) -> None:
        self.grant("configmaps-watch", [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]},
        ])
        wait_for(lambda: self.can("watch", "", "configmaps"), timeout_s=30,
                 what="list/watch of configmaps granted")

    def remove(self) -> None:
        for name in self.role_names():
            self.admin.delete(f"{RBAC_API}/clusterrolebindings/{name}")
            self.admin.delete(f"{RBAC_API}/clusterroles/{name}")

    def role_names(self) -> list[str]:
        roles = self.admin.get(f"{RBAC_API}/clusterroles") or {}
        return [r["metadata"]["name"] for r in roles.get("items") or []
                if r["metadata"]["name"].startswith(f"{self.prefix}:")]


@pytest.fixture
def identity(kube_admin: AdminApi, kube_namespace: str) -> Iterator[Identity]:
    found = Identity(kube_admin, kube_namespace, f"{kube_namespace}.e2e.kro.run")
    found.grant("base", [
        {"apiGroups": ["kro.run"], "resources": ["resourcegraphdefinitions"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": ["kro.run"],
         "resources": ["resourcegraphdefinitions/status", "resourcegraphdefinitions/finalizers"],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": ["internal.kro.run"], "resources": ["graphrevisions"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": ["internal.kro.run"],
         "resources": ["graphrevisions/status", "graphrevisions/finalizers"],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
         "verbs": ["create", "patch"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"],
         "verbs": ["create"]},
        # The child kind: by name only.
        {"apiGroups": [""], "resources": ["configmaps"],
         "verbs": ["get", "create", "update", "patch", "delete"]},
    ])
    wait_for(lambda: found.can("create", "", "configmaps"), timeout_s=30,
             what="the base role in effect")
    assert not found.can("list", "", "configmaps"), (
        "another role grants every ServiceAccount list on configmaps: this test cannot run here"
    )
    try:
        yield found
    finally:
        found.remove()


@pytest.fixture
def controller(
    kube_cluster: ClusterHandle, kube_admin: AdminApi, identity: Identity
) -> Iterator[InProcessController]:
    install_kro_crds(kube_admin)
    kubeconfig = service_account_kubeconfig(kube_cluster, kube_admin, identity.namespace, SA)
    running = InProcessController(kubeconfig, [
        "--leader-elect=false",
        "--rgd-progress-requeue-delay=1s",
        "--instance-requeue-interval=1s",
        "--allow-crd-deletion=true",
    ]).start()
    try:
        yield running
    finally:
        running.stop()


@dataclass
class Kro:
    """The test's view: RGDs and instances, written and read as admin."""

    admin: AdminApi
    identity: Identity
    controller: InProcessController
    rgds: list[str]
    instances: list[str]

    @property
    def namespace(self) -> str:
        return self.identity.namespace

    def rgd_name(self, name: str) -> str:
        return f"{name}-{self.namespace}"

    def apply_rgd(self, name: str, kind: str) -> None:
        """An RGD generating `kind`, one ConfigMap per instance named after it."""
        rgd = {
            "apiVersion": "kro.run/v1alpha1",
            "kind": "ResourceGraphDefinition",
            "metadata": {"name": self.rgd_name(name)},
            "spec": {
                "schema": {
                    "apiVersion": "v1alpha1",
                    "kind": kind,
                    "group": self.identity.group,
                    "spec": {"value": "string | default=one"},
                },
                "resources": [{
                    "id": "config",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "data": {"value": "${schema.spec.value}"},
                    },
                }],
            },
        }
        self.rgds.append(rgd["metadata"]["name"])
        apply(self.admin, f"{RGDS_API}/{rgd['metadata']['name']}", rgd)

    def get_rgd(self, name: str) -> dict[str, Any]:
        return self.admin.get(f"{RGDS_API}/{self.rgd_name(name)}") or {}

    def wait_rgd_active(self, name: str) -> dict[str, Any]:
        return wait_for(
            lambda: (live := self.get_rgd(name)).get("status", {}).get("state") == "Active"
            and live,
            timeout_s=DEADLINE_S,
            what=f"RGD {name} Active",
        )

    def instance_path(self, plural: str, name: str = "") -> str:
        path = f"/apis/{self.identity.group}/v1alpha1/namespaces/{self.namespace}/{plural}"
        return f"{path}/{name}" if name else path

    def apply_instance(self, kind: str, plural: str, name: str) -> None:
        self.instances.append(self.instance_path(plural, name))
        apply(self.admin, self.instance_path(plural, name), {
            "apiVersion": f"{self.identity.group}/v1alpha1",
            "kind": kind,
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {"value": "one"},
        })

    def get_instance(self, plural: str, name: str) -> dict[str, Any]:
        return self.admin.get(self.instance_path(plural, name)) or {}

    def configmap(self, name: str) -> dict[str, Any] | None:
        return self.admin.get(f"/api/v1/namespaces/{self.namespace}/configmaps/{name}")

    def clean_up(self) -> None:
        """Instances first, while kro serves them (it needs list to delete their children),
        then the RGDs and their CRDs; everything granted first, whatever step a test ended at
        (kro lists a deleted RGD's kind to know whether instances are left)."""
        self.identity.grant_configmap_watches()
        self.identity.grant("all-kinds", [
            {"apiGroups": [self.identity.group], "resources": ["*"], "verbs": ["*"]},
        ])
        for path in self.instances:
            self.admin.delete(path)
        for path in self.instances:
            wait_for(lambda p=path: not self.admin.exists(p), timeout_s=DEADLINE_S,
                     what=f"{path} deleted")
        for name in self.rgds:
            self.admin.delete(f"{RGDS_API}/{name}")
        for name in self.rgds:
            wait_for(lambda n=name: not self.admin.exists(f"{RGDS_API}/{n}"),
                     timeout_s=DEADLINE_S, what=f"RGD {name} deleted")
        crds = self.admin.get(CRDS_API) or {}
        for crd in crds.get("items") or []:
            if crd["spec"]["group"] == self.identity.group:
                self.admin.delete(f"{CRDS_API}/{crd['metadata']['name']}")


@pytest.fixture
def kro(
    kube_admin: AdminApi, identity: Identity, controller: InProcessController
) -> Iterator[Kro]:
    env = Kro(kube_admin, identity, controller, [], [])
    try:
        yield env
    finally:
        env.clean_up()


def types(obj: dict[str, Any]) -> list[str]:
    return [c["type"] for c in obj["status"]["conditions"]]


def test_an_instance_lists_five_conditions_watches_healthy_before_ready(kro: Kro) -> None:
    kro.identity.grant_configmap_watches()
    kro.identity.grant_kind("watchers")
    kro.apply_rgd("healthy", "Watcher")
    kro.wait_rgd_active("healthy")
    kro.apply_instance("Watcher", "watchers", "first")
    live = wait_for(
        lambda: (o := kro.get_instance("watchers", "first")).get("status", {}).get("state")
        == "ACTIVE" and condition(o, "WatchesHealthy").get("status") == "True" and o,
        timeout_s=DEADLINE_S,
        what="instance ACTIVE with WatchesHealthy True",
    )
    conditions = live["status"]["conditions"]
    assert sorted(types(live)) == sorted(FIVE)
    assert types(live)[-1] == "Ready"
    # Upstream's order: by transition time, ties in the order of FIVE.
    ordered = sorted(
        conditions[:-1], key=lambda c: (c["lastTransitionTime"], FIVE.index(c["type"]))
    )
    assert conditions[:-1] == ordered
    if len({c["lastTransitionTime"] for c in conditions}) == 1:
        assert types(live) == FIVE
    watches = condition(live, "WatchesHealthy")
    assert watches["reason"] == "AllWatchesSynced"
    assert watches["message"] == "changes to all watched kinds are detected"
    assert watches["observedGeneration"] == live["metadata"]["generation"]


def test_a_child_kind_kro_may_not_watch_is_reported_and_recovers_with_no_edit(
    kro: Kro,
) -> None:
    kro.identity.grant_kind("watchers")
    kro.apply_rgd("blocked-child", "Watcher")
    kro.wait_rgd_active("blocked-child")
    kro.apply_instance("Watcher", "watchers", "unseen")

    def blocked() -> dict[str, Any] | None:
        live = kro.get_instance("watchers", "unseen")
        return live if condition(live, "WatchesHealthy").get("status") == "False" else None

    live = wait_for(blocked, timeout_s=DEADLINE_S, what="WatchesHealthy False")
    watches = condition(live, "WatchesHealthy")
    assert watches["reason"] == "WatchBlocked"
    assert "configmaps" in watches["message"]
    assert "Forbidden" in watches["message"]
    # Not a dependent of Ready: the ConfigMap was applied, the instance is ready.
    live = wait_for(
        lambda: (o := kro.get_instance("watchers", "unseen")).get("status", {}).get("state")
        == "ACTIVE" and o,
        timeout_s=DEADLINE_S,
        what="instance ACTIVE",
    )
    assert condition(live, "Ready")["status"] == "True"
    assert condition(live, "WatchesHealthy")["status"] == "False"
    assert (kro.configmap("unseen") or {}).get("data") == {"value": "one"}
    generation = live["metadata"]["generation"]

    granted = time.monotonic()
    kro.identity.grant_configmap_watches()
    recovered = wait_for(
        lambda: (o := kro.get_instance("watchers", "unseen"))
        and condition(o, "WatchesHealthy").get("status") == "True" and o,
        timeout_s=RECOVERY_S,
        what="WatchesHealthy True after the grant, with no edit",
    )
    print(f"WatchesHealthy True {time.monotonic() - granted:.1f}s after the grant")
    assert recovered["metadata"]["generation"] == generation  # nobody edited it
    watches = condition(recovered, "WatchesHealthy")
    assert watches["reason"] == "AllWatchesSynced"
    assert recovered["status"]["state"] == "ACTIVE"
    assert types(recovered)[-1] == "Ready"


def test_an_rgd_whose_kind_kro_may_not_watch_fails_to_start_within_20s(kro: Kro) -> None:
    kro.identity.grant_configmap_watches()
    kro.identity.grant_kind("helpers")
    # `blockers` is not granted: kro creates its CRD but may not list or watch it.
    started = time.monotonic()
    kro.apply_rgd("blocker", "Blocker")
    kro.apply_rgd("helper", "Helper")

    def failed() -> dict[str, Any] | None:
        live = kro.get_rgd("blocker")
        return live if condition(live, "ControllerReady").get("status") == "False" else None

    live = wait_for(failed, timeout_s=DEADLINE_S, interval_s=0.2, what="ControllerReady False")
    elapsed = time.monotonic() - started
    print(f"ControllerReady=False after {elapsed:.1f}s")  # the figure V-15 bounds
    assert elapsed < FAILED_TO_START_WITHIN_S
    ready = condition(live, "ControllerReady")
    assert ready["reason"] == "FailedToStart"
    assert "forbidden" in ready["message"]
    assert f"blockers.{kro.identity.group}" in ready["message"]
    assert live["status"]["state"] == "Inactive"
    assert established(kro.admin, f"blockers.{kro.identity.group}")

    kro.wait_rgd_active("helper")  # not blocked by the other
    assert kro.get_rgd("blocker")["status"]["state"] == "Inactive"

    kro.identity.grant_kind("blockers")
    served = kro.wait_rgd_active("blocker")
    assert condition(served, "ControllerReady")["reason"] == "Running"
