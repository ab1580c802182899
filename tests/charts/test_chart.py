"""charts/kro renders what upstream's chart renders: names, RBAC per mode, flags, hardening.

Every assertion is on parsed `helm template` output. The flag table in chartrender.py (FLAGS) is
the contract between the chart and the controller's command line (reference §1.S and §1.T).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from chartrender import (
    CHART,
    FLAGS,
    GATED_FLAGS,
    NAMESPACE,
    OPTIONAL_FLAGS,
    RELEASE_FLAGS,
    REPO,
    render,
    run_helm,
)

from kro.api.names import LABEL_AGGREGATE_TO_CONTROLLER

# First use may wait for the control-plane build holding the testbin lock (see conftest.py).
pytestmark = pytest.mark.timeout(1800)

NON_DEFAULT: dict[str, Any] = {
    "fullnameOverride": "platform-kro",
    "additionalLabels": {"team": "platform"},
    "image": {"repository": "registry.example.com/kro", "tag": "1.2.3"},
    "config": {
        "enableLeaderElection": False,
        "enableControllerWarmup": False,
        "allowCRDDeletion": True,
        "featureGates": {"InstanceConditionEvents": True, "CELOmitFunction": False},
        "healthProbeBindAddress": "127.0.0.1:9440",
        "dynamicControllerConcurrentReconciles": 8,
        "dynamicControllerDefaultResyncPeriod": 100000000,
        "gracefulShutdownTimeout": "1m30s",
        "instance": {"requeueInterval": 0},
        "logLevel": 2,
    },
    "metrics": {"service": {"create": True, "port": 9000},
                "serviceMonitor": {"enabled": True, "interval": "30s",
                                   "additionalLabels": {"release": "prometheus"}}},
    "debug": {"pprof": {"enabled": True, "port": 6061, "service": {"enabled": True}}},
}


def _leaves(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and key != "featureGates":
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _default_values() -> dict[str, Any]:
    loaded = yaml.safe_load((CHART / "values.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def _subjects_are_the_service_account(binding: dict[str, Any], name: str) -> bool:
    return binding["subjects"] == [
        {"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]


@pytest.mark.parametrize("mode", ["unrestricted", "aggregation"], ids=str)
def test_helm_lint_passes_strict(helm: Path, mode: str) -> None:
    done = run_helm(helm, "lint", "--strict", str(CHART), "--set", f"rbac.mode={mode}",
                    check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_chart_app_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert chart["name"] == "kro"
    assert chart["appVersion"] == project["version"]


def test_every_config_value_has_its_flag() -> None:
    config = _leaves(_default_values()["config"])
    assert set(config) == set(FLAGS) | OPTIONAL_FLAGS | set(GATED_FLAGS)


def test_default_flags_are_upstreams_defaults(helm: Path) -> None:
    assert render(helm).args() == {
        **{flag: default for flag, default in FLAGS.values()}, **RELEASE_FLAGS}


def test_container_runs_kro_controller(helm: Path) -> None:
    container = render(helm).container()
    assert container["command"] == ["kro", "controller"]
    assert container["image"] == "kro:0.1.0"


def test_unrestricted_mode_grants_everything_under_upstreams_names(helm: Path) -> None:
    rendered = render(helm, {"rbac": {"mode": "unrestricted"}})
    role = rendered.get("ClusterRole", "kro-cluster-role")
    assert role["rules"] == [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    binding = rendered.get("ClusterRoleBinding", "kro-cluster-role-binding")
    assert binding["roleRef"]["name"] == "kro-cluster-role"
    assert _subjects_are_the_service_account(binding, "kro")
    assert not [r for r in rendered.of_kind("ClusterRole") if ":controller" in
                r["metadata"]["name"]]


def test_aggregation_mode_renders_the_aggregated_and_static_roles(helm: Path) -> None:
    rendered = render(helm, {"rbac": {"mode": "aggregation"}})
    aggregated = rendered.get("ClusterRole", "kro:controller")
    assert aggregated["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {LABEL_AGGREGATE_TO_CONTROLLER: "true"}}]
    assert "rules" not in aggregated  # owned by the aggregation controller
    static = rendered.get("ClusterRole", "kro:controller:static")
    assert static["metadata"]["labels"][LABEL_AGGREGATE_TO_CONTROLLER] == "true"
    for name in ("kro:controller", "kro:controller:static"):
        binding = rendered.get("ClusterRoleBinding", name)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                      "kind": "ClusterRole", "name": name}
        assert _subjects_are_the_service_account(binding, "kro")
    assert not [r for r in rendered.of_kind("ClusterRole") if r["metadata"]["name"].endswith(
        "-cluster-role")]


def _granted(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in rules for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_static_role_covers_exactly_kros_own_needs(helm: Path) -> None:
    static = render(helm, {"rbac": {"mode": "aggregation"}}).get(
        "ClusterRole", "kro:controller:static")
    granted = _granted(static["rules"])
    full = ("get", "list", "watch", "create", "update", "patch", "delete")
    needed = {
        *(("kro.run", "resourcegraphdefinitions", v) for v in full),
        *(("internal.kro.run", "graphrevisions", v) for v in full),
        *(("apiextensions.k8s.io", "customresourcedefinitions", v) for v in full),
        *(("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")),
        *(("", "configmaps", v) for v in ("get", "create", "update")),
        *((g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")),
        *(("kro.run", f"resourcegraphdefinitions/{s}", "update") for s in ("status", "finalizers")),
        *(("internal.kro.run", f"graphrevisions/{s}", "update") for s in ("status", "finalizers")),
        ("authorization.k8s.io", "selfsubjectaccessreviews", "create"),  # the RGD pre-flight
        # Graphs (V-86): whatever the gate says.
        *(("kro.run", "graphs", v) for v in ("get", "list", "watch", "patch", "update")),
        ("kro.run", "graphs/finalizers", "update"),
        *(("kro.run", "graphs/status", v) for v in ("get", "patch", "update")),
    }
    assert needed <= granted
    # kro never creates or deletes a Graph; without the gate it impersonates nobody.
    assert not {e for e in granted if e[1] == "graphs" and e[2] in ("create", "delete")}
    assert not {e for e in granted if e[2] == "impersonate"}
    assert not any("*" in entry for entry in granted)
    groups = {group for group, _, _ in granted}
    assert groups == {"kro.run", "internal.kro.run", "apiextensions.k8s.io",
                      "coordination.k8s.io", "", "events.k8s.io", "authorization.k8s.io"}
    assert {e for e in granted if e[0] == "authorization.k8s.io"} == {
        ("authorization.k8s.io", "selfsubjectaccessreviews", "create")}


@pytest.mark.parametrize("mode", ["unrestricted", "aggregation"], ids=str)
def test_edit_and_view_roles_are_rendered_in_every_mode(helm: Path, mode: str) -> None:
    rendered = render(helm, {"rbac": {"mode": mode}})
    edit = rendered.get("ClusterRole", "kro-edit")
    view = rendered.get("ClusterRole", "kro-view")
    aggregate = "rbac.authorization.k8s.io/aggregate-to-"
    assert {k for k, v in edit["metadata"]["labels"].items()
            if k.startswith(aggregate) and v == "true"} == {aggregate + "admin", aggregate + "edit"}
    assert {k for k, v in view["metadata"]["labels"].items()
            if k.startswith(aggregate) and v == "true"} == {
        aggregate + "admin", aggregate + "edit", aggregate + "view"}
    # V-86: the RGD resources by name, so graphs.kro.run never comes with the built-in roles.
    rgd = ("resourcegraphdefinitions", "resourcegraphdefinitions/status")
    assert _granted(edit["rules"]) == {("kro.run", r, v) for r in rgd for v in
                                       ("create", "delete", "deletecollection", "patch", "update")}
    assert _granted(view["rules"]) == {("kro.run", r, v) for r in rgd
                                       for v in ("get", "list", "watch")}


GRAPH_KIND_ON = {"config": {"featureGates": {"GraphKind": True}}}


def test_graph_kind_on_grants_impersonate_in_aggregation_mode(helm: Path) -> None:
    """V-86: only with the gate does kro's static role let it impersonate ServiceAccounts."""
    on = render(helm, {"rbac": {"mode": "aggregation"}, **GRAPH_KIND_ON})
    static = on.get("ClusterRole", "kro:controller:static")
    impersonation = {e for e in _granted(static["rules"]) if e[2] == "impersonate"}
    assert impersonation == {("", "serviceaccounts", "impersonate")}
    off = render(helm, {"rbac": {"mode": "aggregation"}})
    assert not [e for e in _granted(off.get("ClusterRole", "kro:controller:static")["rules"])
                if e[2] == "impersonate"]
    # Everything else is the same either way.
    assert _granted(static["rules"]) - impersonation == _granted(
        off.get("ClusterRole", "kro:controller:static")["rules"])


def test_graph_kind_on_in_unrestricted_mode_needs_no_extra_rule(helm: Path) -> None:
    """The unrestricted role's verb "*" already covers impersonate (checked against a real
    authorizer in e2e/test_chart.py)."""
    on = render(helm, {"rbac": {"mode": "unrestricted"}, **GRAPH_KIND_ON})
    assert on.get("ClusterRole", "kro-cluster-role")["rules"] == [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]


@pytest.mark.parametrize("enabled", [True, False], ids=["gate-on", "gate-off"])
def test_graph_flags_are_passed_with_the_gate_on_or_off(helm: Path, enabled: bool) -> None:
    """V-80: the chart always names kro's namespace and ServiceAccount, so switching the gate
    on needs no other value; the controller accepts what the chart renders either way."""
    from kro.cli.flags import parse_controller_args

    rendered = render(helm, {"config": {"featureGates": {"GraphKind": enabled},
                                        "graphConcurrentReconciles": 3}},
                      release="team-kro")
    args = rendered.args()
    assert args["--feature-gates"] == f"GraphKind={str(enabled).lower()}"
    assert args["--controller-namespace"] == NAMESPACE
    service_account = rendered.of_kind("ServiceAccount")[0]["metadata"]["name"]
    assert args["--controller-service-account"] == service_account == "team-kro"
    assert args["--graph-concurrent-reconciles"] == "3"
    config = parse_controller_args(rendered.container()["args"])
    assert config.feature_gates["GraphKind"] is enabled
    assert (config.controller_namespace, config.controller_service_account) == (
        NAMESPACE, "team-kro")
    assert config.graph_concurrent_reconciles == 3


def test_existing_service_account_is_named_to_the_controller(helm: Path) -> None:
    rendered = render(helm, {"serviceAccount": {"create": False, "name": "platform"},
                             **GRAPH_KIND_ON})
    assert rendered.args()["--controller-service-account"] == "platform"


def test_default_render_has_no_optional_objects(helm: Path) -> None:
    assert render(helm).kinds() == [
        ("ClusterRole", "kro-cluster-role"),
        ("ClusterRole", "kro-edit"),
        ("ClusterRole", "kro-view"),
        ("ClusterRoleBinding", "kro-cluster-role-binding"),
        ("Deployment", "kro"),
        ("ServiceAccount", "kro"),
    ]


def test_container_is_hardened(helm: Path) -> None:
    rendered = render(helm)
    pod = rendered.of_kind("Deployment")[0]["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    context = rendered.container()["securityContext"]
    assert context["runAsUser"] == 1000
    assert context["runAsNonRoot"] is True
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["privileged"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert rendered.container()["resources"] == {
        "limits": {"cpu": "1000m", "memory": "1024Mi"},
        "requests": {"cpu": "256m", "memory": "128Mi"}}


@pytest.mark.parametrize(("address", "port"), [(":8079", 8079), ("127.0.0.1:9440", 9440),
                                               ("[::]:7000", 7000)], ids=str)
def test_probes_use_the_port_of_the_health_bind_address(helm: Path, address: str,
                                                        port: int) -> None:
    container = render(helm, {"config": {"healthProbeBindAddress": address}}).container()
    assert container["livenessProbe"] == {
        "httpGet": {"path": "/healthz", "port": port},
        "initialDelaySeconds": 15, "periodSeconds": 10}
    assert container["readinessProbe"] == {
        "httpGet": {"path": "/readyz", "port": port},
        "initialDelaySeconds": 10, "periodSeconds": 10}
    assert {"name": "health", "containerPort": port, "protocol": "TCP"} in container["ports"]


def test_non_default_values_render_names_and_flags(helm: Path) -> None:
    rendered = render(helm, NON_DEFAULT)
    args = rendered.args()
    assert args["--leader-elect"] == "false"
    assert "--enable-controller-warmup" not in args  # only meaningful with leader election
    assert args["--allow-crd-deletion"] == "true"
    assert args["--feature-gates"] == (
        "CELOmitFunction=false,GraphKind=false,InstanceConditionEvents=true")
    assert args["--controller-service-account"] == "platform-kro"  # the chart's SA, renamed
    assert args["--health-probe-bind-address"] == "127.0.0.1:9440"
    assert args["--dynamic-controller-concurrent-reconciles"] == "8"
    assert args["--dynamic-controller-default-resync-period"] == "100000000"  # not 1e+08
    assert args["--instance-requeue-interval"] == "0"
    assert args["--zap-log-level"] == "2"
    assert args["--pprof-bind-address"] == ":6061"
    assert rendered.container()["image"] == "registry.example.com/kro:1.2.3"
    deployment = rendered.get("Deployment", "platform-kro")
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 100
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "platform-kro"
    assert rendered.kinds() == [
        ("ClusterRole", "platform-kro-cluster-role"),
        ("ClusterRole", "platform-kro-edit"),
        ("ClusterRole", "platform-kro-view"),
        ("ClusterRoleBinding", "platform-kro-cluster-role-binding"),
        ("Deployment", "platform-kro"),
        ("Service", "platform-kro-metrics"),
        ("Service", "platform-kro-pprof"),
        ("ServiceAccount", "platform-kro"),
        ("ServiceMonitor", "platform-kro"),
    ]
    assert all(o["metadata"]["labels"]["team"] == "platform" for o in rendered.objects)


def test_metrics_service_and_service_monitor_select_the_controller(helm: Path) -> None:
    rendered = render(helm, NON_DEFAULT)
    service = rendered.get("Service", "platform-kro-metrics")
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 9000, "targetPort": "metricsport", "protocol": "TCP"}]
    pod_labels = rendered.get("Deployment", "platform-kro")["spec"]["template"]["metadata"][
        "labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    monitor = rendered.get("ServiceMonitor", "platform-kro")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"][
        "labels"].items()
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}]
    pprof = rendered.get("Service", "platform-kro-pprof")
    assert pprof["spec"]["ports"][0]["port"] == 6061
    assert monitor["spec"]["selector"]["matchLabels"].items() > pprof["spec"]["selector"].items()
    assert not monitor["spec"]["selector"]["matchLabels"].items() <= pprof["metadata"][
        "labels"].items()


def test_leader_election_namespace_is_passed_when_set(helm: Path) -> None:
    args = render(helm, {"config": {"leaderElectionNamespace": "kro-leases",
                                    "enableControllerWarmup": True}}).args()
    assert args["--leader-election-namespace"] == "kro-leases"
    assert args["--enable-controller-warmup"] == "true"


def test_raw_manifests_can_drop_the_helm_labels(helm: Path) -> None:
    rendered = render(helm, {"rbac": {"mode": "aggregation"},
                             "metadata": {"includeHelmChart": False, "includeManagedBy": False}})
    for obj in rendered.objects:
        labels = obj["metadata"]["labels"]
        assert "helm.sh/chart" not in labels
        assert "app.kubernetes.io/managed-by" not in labels


def test_names_follow_the_release_name(helm: Path) -> None:
    assert render(helm, release="my-kro").container()["name"] == "kro"
    assert ("Deployment", "my-kro") in render(helm, release="my-kro").kinds()
    assert ("Deployment", "team-a-kro") in render(helm, release="team-a").kinds()

