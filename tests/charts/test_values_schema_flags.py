"""The chart's values schema and `kro controller` accept the same values, so no values file that
Helm accepts can make the controller exit on a flag it cannot parse.

Every value the schema enumerates (and the sample values of every pattern that maps to a flag)
is rendered with the real helm and the rendered arguments are parsed by the controller's own
parser; the log level, whose forms are many, is also compared form by form: the schema's
pattern and the controller's parser agree on which strings are levels.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chartrender import CHART, FLAGS, GATED_FLAGS, render, render_error

from kro.cli.flags import (
    ControllerConfig,
    parse_controller_args,
    parse_label_pair,
    parse_log_level,
)

pytestmark = pytest.mark.timeout(1800)  # first use may wait for the testbin build

SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
CONFIG: dict[str, Any] = SCHEMA["properties"]["config"]["properties"]


def _properties(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for name, spec in (node.get("properties") or {}).items():
        here = f"{path}.{name}" if path else name
        yield here, spec
        yield from _properties(spec, here)


def _nested(path: str, value: Any) -> dict[str, Any]:
    """`rgd.maxCollectionSize`, 5 -> {"config": {"rgd": {"maxCollectionSize": 5}}}."""
    out: Any = value
    for part in reversed(path.split(".")):
        out = {part: out}
    return {"config": out}


def _enum_cases() -> list[tuple[str, Any]]:
    """Every (config path, value) the schema enumerates or declares boolean."""
    cases: list[tuple[str, Any]] = []
    for path, spec in _properties(SCHEMA["properties"]["config"]):
        for value in spec.get("enum") or []:
            cases.append((path, value))
        if spec.get("type") == "boolean":
            cases += [(path, True), (path, False)]
    return cases


# Values each pattern or numeric range allows, at its edges: a sample of what a values file may
# hold for the flags that are not enums.
PATTERN_CASES: list[tuple[str, Any]] = [
    *[("logLevel", level) for level in ("debug", "info", "warn", "error", "dpanic", "panic")],
    *[("logLevel", level) for level in ("fatal", "DEBUG", "Warn", "2", "-1", "0", "+3")],
    *[("logLevel", level) for level in (1, 2, 10, 0, -1)],
    ("metricsBindAddress", "0"),
    ("metricsBindAddress", "[::]:8078"),
    ("healthProbeBindAddress", "127.0.0.1:65535"),
    ("healthProbeBindAddress", "[::1]:0"),
    ("leaderElectionLeaseDuration", "1h2m3s4ms"),
    ("gracefulShutdownTimeout", "0s"),
    ("instance.requeueInterval", "0"),
    ("instance.requeueInterval", 0),
    ("dynamicControllerDefaultResyncPeriod", 0),
    ("dynamicControllerDefaultQueueMaxRetries", 0),
    ("dynamicControllerConcurrentReconciles", 1),
    ("clientQps", 0.5),
    ("clientBurst", 1),
    ("rgd.maxGraphRevisions", -1),
    ("rgd.maxCollectionDimensionSize", 1),
    ("leaderElectionNamespace", "kro-system"),
    # The MultiCluster gate's values (M-02), rendered with the gate on.
    ("multicluster.clusterSecretsNamespace", "fleet"),
    ("multicluster.clusterSecretsNamespace", ""),
    ("multicluster.clusterSecretsLabel", "multicluster.runtime/cluster=true"),
    ("multicluster.clusterSecretsLabel", "member=yes"),
    ("multicluster.clusterSecretsLabel", "example.com/member="),
    ("multicluster.clusterSecretsLabel", "a.b-c.example/x_y.z=V-1.a_b"),
    ("multicluster.clusterSecretsLabel", "x=" + "v" * 63),
    ("multicluster.clusterSecretsKey", "kubeconfig"),
    ("multicluster.clusterSecretsKey", "config.yaml"),
    ("multicluster.clusterSecretsKey", "Kube_Config-1"),
    ("multicluster.localClusterName", "hub"),
    ("multicluster.localClusterName", "hub.eu-west-1"),
]
# How each MultiCluster value reads back from the controller's configuration.
GATED_FIELDS = {
    "multicluster.enabled": "enable_multicluster",
    "multicluster.clusterSecretsNamespace": "cluster_secrets_namespace",
    "multicluster.clusterSecretsLabel": "cluster_secrets_label",
    "multicluster.clusterSecretsKey": "cluster_secrets_key",
    "multicluster.localClusterName": "local_cluster_name",
}


def _ids(cases: list[tuple[str, Any]]) -> list[str]:
    return [f"{path}={value!r}" for path, value in cases]


def _values(path: str, value: Any) -> dict[str, Any]:
    values = _nested(path, value)
    if path == "enableControllerWarmup":
        values["config"]["enableLeaderElection"] = True  # the chart refuses warm-up alone
    if path == "metricsBindAddress" and value not in ("0", 0):
        values["deployment"] = {"containerPort": int(str(value).rpartition(":")[2])}
    if path in GATED_FLAGS:
        values["config"]["featureGates"] = {"MultiCluster": True}  # passed only with the gate
    return values


def _controller_config(helm: Path, values: dict[str, Any]) -> ControllerConfig:
    return parse_controller_args(render(helm, values).container()["args"])


ENUM_CASES = _enum_cases()


def test_the_schema_has_enumerated_flag_values() -> None:
    paths = {path for path, _ in ENUM_CASES}
    assert {"logEncoder", "enableLeaderElection", "featureGates.CELOmitFunction",
            "featureGates.MultiCluster", "multicluster.enabled"} <= paths


@pytest.mark.parametrize(("path", "value"), ENUM_CASES, ids=_ids(ENUM_CASES))
def test_every_enumerated_value_reaches_the_controller(
    helm: Path, path: str, value: Any
) -> None:
    config = _controller_config(helm, _values(path, value))
    if path.startswith("featureGates."):
        assert config.feature_gates[path.partition(".")[2]] is value
    elif path in GATED_FIELDS:
        assert getattr(config, GATED_FIELDS[path]) is value
    elif path in FLAGS and isinstance(value, str):
        assert f"{FLAGS[path][0]}={value}" in render(helm, _values(path, value)).container()["args"]


@pytest.mark.parametrize(("path", "value"), PATTERN_CASES, ids=_ids(PATTERN_CASES))
def test_every_pattern_sample_reaches_the_controller(helm: Path, path: str, value: Any) -> None:
    config = _controller_config(helm, _values(path, value))
    if path == "logLevel":
        assert config.log_level == parse_log_level(str(value))
    elif path == "multicluster.clusterSecretsNamespace":
        assert config.cluster_secrets_namespace == (value or config.controller_namespace)
    elif path in GATED_FIELDS:
        assert getattr(config, GATED_FIELDS[path]) == value


def test_set_metrics_bind_address_0_turns_metrics_off(helm: Path) -> None:
    rendered = render(helm, None, "--set", "config.metricsBindAddress=0")
    assert parse_controller_args(rendered.container()["args"]).metrics_bind_address == "0"


def test_the_schema_accepts_set_metrics_bind_address_0(helm: Path) -> None:
    """`--set` passes the number 0, which the schema must accept (not only the string)."""
    render(helm, None, "--set", "config.metricsBindAddress=0")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("logLevel", "loud"),
        ("logLevel", "2.5"),
        ("logLevel", 2.5),
        ("logEncoder", "xml"),
        ("metricsBindAddress", ":99999"),
        ("metricsBindAddress", 1),
        ("healthProbeBindAddress", "localhost"),
        ("multicluster.clusterSecretsLabel", "member"),
        ("multicluster.clusterSecretsLabel", "=yes"),
        ("multicluster.clusterSecretsLabel", "a=b,c=d"),
        ("multicluster.clusterSecretsLabel", ""),
    ],
    ids=str,
)
def test_values_the_controller_refuses_are_refused_by_the_schema(
    helm: Path, path: str, value: Any
) -> None:
    assert f"/config/{path.replace('.', '/')}" in render_error(helm, _nested(path, value))


LABELS_ACCEPTED = [
    *("multicluster.runtime/cluster=true", "member=yes", "member=", "a/b=c", "A.b_c-d=E.f_g-h"),
    *("x" * 63 + "=y", "k=" + "v" * 63, "a.example.com/k=v", "1=2"),
]
LABELS_REFUSED = [
    *("member", "=yes", "a=b,c=d", "a==b", "a!=b", "a = b", " a=b", "a=b ", "a=-b", "a=b-"),
    *("-a=b", "a/=b", "/a=b", "A.Example/k=v", "a/b/c=d", "x" * 64 + "=y", "k=" + "v" * 64),
    *("k=v v", "k=v/w", "", "=", "a=b=c"),
]


def test_the_label_pattern_takes_one_kubernetes_label_the_controller_parses_unchanged() -> None:
    """M-02: the schema wants one real Kubernetes label `key=value` (stricter than the
    controller's parser), and every label it lets through reaches the controller as written."""
    pattern = CONFIG["multicluster"]["properties"]["clusterSecretsLabel"]["pattern"]
    assert [t for t in LABELS_ACCEPTED if re.search(pattern, t) is None] == []
    assert [t for t in LABELS_REFUSED if re.search(pattern, t) is not None] == []
    for text in LABELS_ACCEPTED:
        assert parse_label_pair(text) == text


LEVEL_FORMS = [
    *("debug", "info", "warn", "error", "dpanic", "panic", "fatal"),
    *("DEBUG", "Info", "wArN", "ERROR", "Fatal"),
    *("0", "1", "2", "10", "127", "-1", "-5", "+2", "007"),
    *("", "loud", "warning", "2.5", "1e3", "debug ", " 2", "--1", "trace", "v2", "critical"),
]


@pytest.mark.parametrize("text", LEVEL_FORMS, ids=repr)
def test_the_log_level_pattern_and_the_parser_agree(text: str) -> None:
    pattern = CONFIG["logLevel"]["pattern"]
    in_schema = re.search(pattern, text) is not None
    try:
        parse_log_level(text)
        in_controller = True
    except Exception:
        in_controller = False
    # The parser also strips surrounding blanks, which the schema never lets through.
    if text != text.strip() and not in_schema:
        return
    assert in_schema == in_controller


def test_rendered_defaults_run_the_real_command_past_flag_parsing(helm: Path) -> None:
    """`kro controller` itself with the chart's arguments: a usage error would exit 2; with
    no cluster to reach it exits 1 with one line instead."""
    args = render(helm, {"config": {"logLevel": 2}}).container()["args"]
    done = subprocess.run(
        [sys.executable, "-m", "kro", "controller", *args, "--kubeconfig=/nonexistent",
         "--metrics-bind-address=0", "--health-probe-bind-address=0"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr == "kro controller: kubeconfig /nonexistent does not exist (--kubeconfig)\n"
