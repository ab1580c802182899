"""`kro generate rbac` and the RGD pre-flight, on the real control plane.

The chart is rendered in rbac.mode=aggregation and only its controller objects are applied (the
ServiceAccount, the static role, the aggregated role and their bindings). The only other rules
kro gets come from the role `kro generate rbac --mode aggregation` prints for examples/nginxapp,
run in this process exactly as the command runs. The controller runs in-process as that
ServiceAccount (a TokenRequest token, never admin credentials).

1. With the generated role, the nginxapp instance reaches ACTIVE with its Deployment and
   Service, and is deleted again (children first, then kro's finalizer): the role holds every
   verb kro uses, although it grants neither `create`/`update` on the instances nor their
   `/finalizers`. The RGD is Ready and carries no `PermissionsGranted` condition (it appears
   only while something is missing, so an RGD that is fine has exactly upstream's conditions).
2. With one rule of the generated role removed, the RGD's `PermissionsGranted` condition (and
   so its Ready) names exactly that rule's resource and verbs; the RGD stays Active and is
   served. Removing the Ingress rule shows what no instance would have shown yet (the Ingress
   is conditional and off); removing the `/status` rule shows the rule of the generated kind.
   Once the rule is back, the condition goes by itself and the RGD is Ready.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from inprocess_controller import InProcessController
from nginxapp_example import (
    EXAMPLE,
    GROUP,
    PLURAL,
    NginxApp,
    apply,
    condition,
    install_kro_crds,
    wait_explained,
)

from kro.api.names import LABEL_AGGREGATE_TO_CONTROLLER
from kro.cli.rbac import add_rbac_command
from kro.controllers.permissions import PolicyRule, describe_missing
from kro.testing import testbin
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig
from kro.testing.wait import wait_for

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "kro"
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
ROLE_PATHS = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
PERMISSIONS_GRANTED = "PermissionsGranted"
# The pre-flight looks again 15 s after finding something missing; aggregation takes seconds.
RECHECK_TIMEOUT_S = 60.0


def generate_rbac(*argv: str) -> tuple[int, str, str]:
    """`kro generate rbac ARGV...`, run in this process as the command line runs it."""
    parser = argparse.ArgumentParser(prog="kro")
    generate = parser.add_subparsers(dest="artifact", required=True)
    add_rbac_command(generate)
    args = parser.parse_args(["rbac", *argv])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = int(args.handler(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def helm() -> Path:
    return testbin.ensure(["helm"])["helm"]


def chart_controller_rbac(helm: Path, namespace: str, fullname: str) -> list[dict[str, Any]]:
    """The chart's ServiceAccount and controller roles and bindings in aggregation mode
    (not the roles for people, which have nothing to do with the controller)."""
    done = subprocess.run(
        [str(helm), "template", "kro", str(CHART), "--namespace", namespace,
         "--set", "rbac.mode=aggregation", "--set", f"fullnameOverride={fullname}"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    objects = [o for o in yaml.safe_load_all(done.stdout) if o]
    return [o for o in objects if o["kind"] == "ServiceAccount" or (
        o["kind"] in ROLE_PATHS and ":controller" in o["metadata"]["name"])]


@dataclass
class Rbac:
    """The chart's controller RBAC plus the generated role, applied as admin."""

    admin: AdminApi
    namespace: str
    objects: list[dict[str, Any]]
    role: dict[str, Any]

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.namespace}"

    @property
    def role_path(self) -> str:
        return f"{RBAC_API}/clusterroles/{self.role['metadata']['name']}"

    def path(self, obj: dict[str, Any]) -> str:
        name = obj["metadata"]["name"]
        if obj["kind"] == "ServiceAccount":
            return f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{name}"
        return f"{RBAC_API}/{ROLE_PATHS[obj['kind']]}/{name}"

    def apply_role(self, rules: list[dict[str, Any]]) -> None:
        """The generated role with these rules (a PUT once it exists: field ownership of a
        removed rule does not matter), then wait until the authorizer agrees."""
        body = {**self.role, "rules": rules}
        live = self.admin.get(self.role_path)
        if live is None:
            apply(self.admin, self.role_path, body)
        else:
            live["rules"] = rules
            self.admin.request("PUT", self.role_path, live)
        granted = {(p.group, p.resource, p.verb) for r in rules for p in _rule(r).permissions()}
        every = {(p.group, p.resource, p.verb)
                 for r in self.role["rules"] for p in _rule(r).permissions()}
        wait_for(lambda: all(self.can(*p) == (p in granted) for p in sorted(every)),
                 timeout_s=30, what="the aggregated role to grant exactly the applied rules")

    def can(self, group: str, resource: str, verb: str) -> bool:
        """Ask the authorizer about the ServiceAccount, cluster-wide (as kro's pre-flight)."""
        plural, _, subresource = resource.partition("/")
        review = self.admin.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": self.user,
                     "groups": ["system:serviceaccounts", "system:authenticated"],
                     "resourceAttributes": {"verb": verb, "group": group, "resource": plural,
                                            "subresource": subresource}}})
        return bool(review["status"].get("allowed"))

    def remove(self) -> None:
        for obj in [*self.objects, self.role]:
            if obj["kind"] in ROLE_PATHS:
                self.admin.delete(self.path(obj))


def _rule(rule: dict[str, Any]) -> PolicyRule:
    return PolicyRule(tuple(rule["apiGroups"]), tuple(rule["resources"]), tuple(rule["verbs"]))


@pytest.fixture
def rbac(helm: Path, kube_admin: AdminApi, kube_namespace: str) -> Iterator[Rbac]:
    fullname = kube_namespace  # unique per test; also names the ServiceAccount
    code, out, err = generate_rbac("-f", str(EXAMPLE / "rgd.yaml"), "--mode", "aggregation",
                                   "--fullname", fullname, "-o", "json")
    assert (code, err) == (0, ""), err
    role = json.loads(out)
    assert role["metadata"] == {"name": f"{fullname}:controller:reviewed-nginxapps",
                                "labels": {LABEL_AGGREGATE_TO_CONTROLLER: "true"}}
    installed = Rbac(kube_admin, kube_namespace,
                     chart_controller_rbac(helm, kube_namespace, fullname), role)
    try:
        for obj in installed.objects:
            apply(kube_admin, installed.path(obj), obj)
        assert not installed.can(GROUP, PLURAL, "list"), (
            f"another ClusterRole labelled {LABEL_AGGREGATE_TO_CONTROLLER} already grants "
            f"{PLURAL} (left over from an earlier run?)")
        yield installed
    finally:
        installed.remove()


@pytest.fixture
def controller(
    kube_cluster: ClusterHandle, kube_admin: AdminApi, rbac: Rbac
) -> Iterator[InProcessController]:
    install_kro_crds(kube_admin)
    kubeconfig = service_account_kubeconfig(kube_cluster, kube_admin, rbac.namespace,
                                            rbac.namespace)
    running = InProcessController(kubeconfig).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def nginxapp(
    kube_admin: AdminApi, kube_namespace: str, rbac: Rbac, controller: InProcessController
) -> Iterator[NginxApp]:
    app = NginxApp(kube_admin, kube_namespace)
    try:
        yield app
    finally:
        try:
            rbac.apply_role(rbac.role["rules"])  # kro needs them to delete what it made
            if controller.is_running():
                app.delete()
        finally:
            app.delete_generated_crd()


def permissions_condition(app: NginxApp, status: str, message: str) -> dict[str, Any] | None:
    """The RGD, once its PermissionsGranted has this status and message at its generation."""
    live = app.get_rgd()
    found = condition(live, PERMISSIONS_GRANTED)
    if (
        live is not None
        and found.get("status") == status
        and found.get("message") == message
        and found.get("observedGeneration") == live["metadata"]["generation"]
    ):
        return live
    return None


def ready_without_permission_condition(app: NginxApp) -> dict[str, Any] | None:
    """The RGD, once it is Ready at its generation with no PermissionsGranted condition."""
    live = app.get_rgd()
    if live is None or condition(live, PERMISSIONS_GRANTED):
        return None
    ready = condition(live, "Ready")
    current = ready.get("observedGeneration") == live["metadata"]["generation"]
    return live if current and ready.get("status") == "True" else None


def test_the_generated_role_alone_lets_kro_run_and_delete_an_instance(
    rbac: Rbac, controller: InProcessController, nginxapp: NginxApp, kube_admin: AdminApi,
) -> None:
    app = nginxapp
    rbac.apply_role(rbac.role["rules"])
    assert not rbac.can(GROUP, PLURAL, "create")  # least privilege: kro never creates these
    assert not rbac.can(GROUP, f"{PLURAL}/finalizers", "update")
    app.apply_rgd(timeout_s=60)
    live = wait_explained(lambda: ready_without_permission_condition(app), app.get_rgd,
                          what="the RGD Ready, without a PermissionsGranted condition")
    assert sorted(c["type"] for c in live["status"]["conditions"]) == sorted(
        ["GraphRevisionsResolved", "GraphAccepted", "KindReady", "ControllerReady", "Ready"])

    instance = app.apply_instance(timeout_s=90)
    assert instance["status"]["availableReplicas"] == 2
    managers = {m["manager"] for m in kube_admin.get(app.deployment_path)["metadata"][
        "managedFields"]}
    assert "kro.run/applyset" in managers
    assert kube_admin.get(app.service_path)["spec"]["clusterIP"] == instance["status"][
        "serviceIP"]

    kube_admin.delete(app.instance_path)
    wait_explained(lambda: not kube_admin.exists(app.instance_path), app.resources_ready,
                   what="kro to delete the children and release its finalizer", timeout_s=60)
    assert kube_admin.get(app.deployment_path) is None
    assert kube_admin.get(app.service_path) is None
    assert controller.healthz() == 200


def test_a_removed_rule_is_named_exactly_on_the_rgd(
    rbac: Rbac, controller: InProcessController, nginxapp: NginxApp,
) -> None:
    app = nginxapp
    rules = rbac.role["rules"]
    ingresses = next(r for r in rules if r["resources"] == ["ingresses"])
    status = next(r for r in rules if r["resources"] == [f"{PLURAL}/status"])

    rbac.apply_role([r for r in rules if r is not ingresses])
    app.apply_rgd(timeout_s=60)  # Active: kro serves the RGD anyway
    message = describe_missing(_rule(ingresses).permissions())
    assert message == (
        "missing permissions: networking.k8s.io/ingresses: get, list, watch, create, patch, "
        "delete")
    live = wait_explained(lambda: permissions_condition(app, "False", message), app.get_rgd,
                          what=f"PermissionsGranted=False: {message}")
    assert condition(live, PERMISSIONS_GRANTED)["reason"] == "MissingPermissions"
    ready = condition(live, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "MissingPermissions", message)
    assert live["status"]["state"] == "Active"
    # The Ingress is off, so an instance still works: the RGD said it first.
    assert app.apply_instance(timeout_s=90)["status"]["state"] == "ACTIVE"

    rbac.apply_role([r for r in rules if r is not status])
    message = describe_missing(_rule(status).permissions())
    assert message == f"missing permissions: {GROUP}/{PLURAL}/status: patch"
    wait_explained(lambda: permissions_condition(app, "False", message), app.get_rgd,
                   what=f"PermissionsGranted=False: {message}", timeout_s=RECHECK_TIMEOUT_S)

    rbac.apply_role(rules)
    wait_explained(lambda: ready_without_permission_condition(app), app.get_rgd,
                   what="PermissionsGranted gone and the RGD Ready once the rule is back",
                   timeout_s=RECHECK_TIMEOUT_S)
    assert controller.healthz() == 200
