"""charts/kro with the MultiCluster gate: the member-cluster flags and the Secrets' RBAC (M-01,
M-02), and nothing at all with the gate off.

The controller reads member clusters from labelled Secrets in one namespace, so the chart grants
Secrets there only (a Role), never cluster-wide, and passes the namespace it granted as
`--cluster-secrets-namespace`, so that the flag and the grant cannot disagree.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from chartrender import (
    CHART,
    GATED_FLAGS,
    MULTICLUSTER_ON,
    NAMESPACE,
    RELEASE,
    render,
    run_helm,
    template_args,
)

from kro.api.names import (
    CLUSTER_SECRETS_KEY_DEFAULT,
    CLUSTER_SECRETS_LABEL_DEFAULT,
    LOCAL_CLUSTER_NAME_DEFAULT,
)
from kro.cli.controller import cluster_secrets_namespace
from kro.cli.flags import ControllerConfig, parse_controller_args

pytestmark = pytest.mark.timeout(1800)  # first use may wait for the testbin build

MODES = ["unrestricted", "aggregation"]
ROLE = f"{RELEASE}-cluster-secrets"
# Every multicluster value set to something other than its default, except `enabled` (which
# the chart refuses without the gate).
CUSTOM = {"clusterSecretsNamespace": "fleet", "clusterSecretsLabel": "example.com/member=yes",
          "clusterSecretsKey": "config", "localClusterName": "hub"}


def _gate_on(mode: str = "unrestricted", **multicluster: Any) -> dict[str, Any]:
    config = {**MULTICLUSTER_ON["config"], "multicluster": multicluster}
    return {"rbac": {"mode": mode}, "config": config}


def _stdout(helm: Path, values: dict[str, Any]) -> str:
    done = run_helm(helm, *template_args(), values=values, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _grants_secrets(rule: dict[str, Any]) -> bool:
    return bool({"", "*"} & set(rule["apiGroups"])) and bool(
        {"secrets", "*"} & set(rule["resources"]))


def _cluster_wide_secret_roles(objects: tuple[dict[str, Any], ...]) -> set[str]:
    return {o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"
            and any(_grants_secrets(rule) for rule in o.get("rules") or [])}


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("gate", [None, False], ids=["gate-unset", "gate-false"])
def test_gate_off_renders_nothing_of_the_fleet(helm: Path, mode: str, gate: bool | None) -> None:
    """With the gate off the multicluster values change not one byte of the manifests, and no
    flag, Role or RoleBinding of the fleet is rendered."""
    config: dict[str, Any] = {} if gate is None else {"featureGates": {"MultiCluster": gate}}
    plain = {"rbac": {"mode": mode}, "config": config}
    custom = {"rbac": {"mode": mode}, "config": {**config, "multicluster": CUSTOM}}
    assert _stdout(helm, custom) == _stdout(helm, plain)
    rendered = render(helm, plain)
    assert not rendered.of_kind("Role")
    assert not rendered.of_kind("RoleBinding")
    flags = {flag for flag, _ in GATED_FLAGS.values()}
    assert not flags & set(rendered.args())
    assert "secrets" not in _stdout(helm, plain)


def test_gate_on_passes_the_controllers_own_defaults(helm: Path) -> None:
    rendered = render(helm, MULTICLUSTER_ON)
    args = rendered.args()
    assert {flag: args[flag] for flag, _ in GATED_FLAGS.values()} == dict(GATED_FLAGS.values())
    assert args["--feature-gates"] == "GraphKind=false,MultiCluster=true"
    assert args["--controller-namespace"] == NAMESPACE
    config = parse_controller_args(rendered.container()["args"])
    assert config.enable_multicluster is False
    assert cluster_secrets_namespace(config) == NAMESPACE
    assert (config.cluster_secrets_label, config.cluster_secrets_key,
            config.local_cluster_name) == (
        CLUSTER_SECRETS_LABEL_DEFAULT, CLUSTER_SECRETS_KEY_DEFAULT, LOCAL_CLUSTER_NAME_DEFAULT)
    defaults = ControllerConfig()
    assert (defaults.cluster_secrets_label, defaults.cluster_secrets_key,
            defaults.local_cluster_name) == (
        CLUSTER_SECRETS_LABEL_DEFAULT, CLUSTER_SECRETS_KEY_DEFAULT, LOCAL_CLUSTER_NAME_DEFAULT)


def test_gate_on_passes_every_value_to_the_controller(helm: Path) -> None:
    rendered = render(helm, _gate_on(enabled=True, **CUSTOM), release="team-kro")
    config = parse_controller_args(rendered.container()["args"])
    assert config.enable_multicluster is True
    assert config.cluster_secrets_namespace == "fleet"
    assert config.cluster_secrets_label == "example.com/member=yes"
    assert config.cluster_secrets_key == "config"
    assert config.local_cluster_name == "hub"
    assert config.controller_namespace == NAMESPACE


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_gate_on_grants_secrets_in_the_release_namespace_only(helm: Path, mode: str) -> None:
    """M-02: get/list/watch on Secrets in the cluster-secrets namespace, by a Role bound to
    the controller's ServiceAccount; no ClusterRole grants Secrets because of the gate."""
    rendered = render(helm, _gate_on(mode))
    role = rendered.get("Role", ROLE)
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}]
    binding = rendered.get("RoleBinding", ROLE)
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": ROLE}
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": RELEASE, "namespace": NAMESPACE}]
    off = render(helm, {"rbac": {"mode": mode}})
    assert _cluster_wide_secret_roles(rendered.objects) == _cluster_wide_secret_roles(
        off.objects)
    assert sorted(set(rendered.kinds()) - set(off.kinds())) == [("Role", ROLE),
                                                               ("RoleBinding", ROLE)]


def test_aggregation_mode_grants_no_secret_cluster_wide(helm: Path) -> None:
    assert _cluster_wide_secret_roles(render(helm, _gate_on("aggregation")).objects) == set()


def test_unrestricted_mode_already_reads_every_secret(helm: Path) -> None:
    """Not the gate's doing: the `*` ClusterRole of rbac.mode=unrestricted covers Secrets in
    every namespace, gate or not (docs/configuration.md says so)."""
    assert _cluster_wide_secret_roles(render(helm).objects) == {"kro-cluster-role"}


def test_a_custom_namespace_moves_the_grant_and_the_flag(helm: Path) -> None:
    rendered = render(helm, _gate_on("aggregation", clusterSecretsNamespace="fleet"),
                      release="team-kro")
    assert rendered.args()["--cluster-secrets-namespace"] == "fleet"
    assert rendered.args()["--controller-namespace"] == NAMESPACE
    for kind in ("Role", "RoleBinding"):
        assert rendered.get(kind, "team-kro-cluster-secrets")["metadata"]["namespace"] == "fleet"
    assert rendered.get("RoleBinding", "team-kro-cluster-secrets")["subjects"] == [
        {"kind": "ServiceAccount", "name": "team-kro", "namespace": NAMESPACE}]


def test_an_existing_service_account_is_the_one_bound(helm: Path) -> None:
    values = {**_gate_on(), "serviceAccount": {"create": False, "name": "platform"}}
    binding = render(helm, values).get("RoleBinding", ROLE)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "platform", "namespace": NAMESPACE}]


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_helm_lint_passes_strict_with_the_gate_on(helm: Path, mode: str) -> None:
    done = run_helm(helm, "lint", "--strict", str(CHART), "--set", f"rbac.mode={mode}",
                    "--set", "config.featureGates.MultiCluster=true",
                    "--set", "config.multicluster.enabled=true", check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _notes(helm: Path, tmp_path: Path, values: dict[str, Any]) -> str:
    """NOTES.txt as `helm install` prints it. `helm template` never renders NOTES.txt, and an
    install needs a cluster, so a copy of the chart renders it through `tpl` into a ConfigMap."""
    chart = tmp_path / "kro"
    shutil.copytree(CHART, chart)
    (chart / "notes.txt").write_text((chart / "templates" / "NOTES.txt").read_text())
    (chart / "templates" / "notes-test.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n'
        'data: {notes: {{ tpl (.Files.Get "notes.txt") . | toJson }}}\n')
    done = run_helm(helm, "template", RELEASE, str(chart), "--namespace", NAMESPACE,
                    "--show-only", "templates/notes-test.yaml", values=values, check=False)
    assert done.returncode == 0, done.stderr
    notes: str = yaml.safe_load(done.stdout)["data"]["notes"]
    return notes


def test_notes_name_the_member_secrets_and_the_command_that_lists_them(
        helm: Path, tmp_path: Path) -> None:
    notes = _notes(helm, tmp_path, _gate_on(**CUSTOM))
    assert ("kro clusters -n fleet --label example.com/member=yes --key config"
            " --local-cluster-name hub") in notes
    assert 'Role "kro-cluster-secrets"' in notes
    assert "kro clusters" not in _notes(helm, tmp_path / "off", {})
