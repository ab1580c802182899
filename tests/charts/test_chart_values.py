"""charts/kro refuses bad values before anything reaches a cluster, and says which value is wrong.

values.schema.json catches types, enums, patterns and minimums; templates/_helpers.tpl
(`kro.validateValues`) catches combinations the schema cannot express.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from chartrender import CHART, render, render_error

from kro.api.names import FEATURE_GATE_DEFAULTS

pytestmark = pytest.mark.timeout(1800)  # first use may wait for the testbin build

SCHEMA_REJECTS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("rbac-mode", {"rbac": {"mode": "bogus"}},
     ["/rbac/mode", "'unrestricted', 'aggregation'"]),
    ("duration-without-unit", {"config": {"leaderElectionLeaseDuration": "15"}},
     ["/config/leaderElectionLeaseDuration", "does not match pattern"]),
    ("duration-as-number", {"config": {"gracefulShutdownTimeout": 60}},
     ["/config/gracefulShutdownTimeout", "want string"]),
    ("duration-with-space", {"config": {"dynamicControllerRateLimiterMinDelay": "200 ms"}},
     ["/config/dynamicControllerRateLimiterMinDelay"]),
    ("requeue-interval-number", {"config": {"instance": {"requeueInterval": 5}}},
     ["/config/instance/requeueInterval"]),
    ("zero-workers", {"config": {"dynamicControllerConcurrentReconciles": 0}},
     ["/config/dynamicControllerConcurrentReconciles", "minimum"]),
    ("fractional-integer", {"config": {"rgd": {"maxCollectionSize": 1.5}}},
     ["/config/rgd/maxCollectionSize", "want integer"]),
    ("negative-resync", {"config": {"dynamicControllerDefaultResyncPeriod": -1}},
     ["/config/dynamicControllerDefaultResyncPeriod", "minimum"]),
    ("zero-qps", {"config": {"clientQps": 0}}, ["/config/clientQps"]),
    ("unknown-flag-value", {"config": {"clientQPS": 10}},
     ["/config", "additional properties 'clientQPS' not allowed"]),
    ("unknown-top-level", {"confg": {}}, ["additional properties 'confg' not allowed"]),
    ("unknown-feature-gate", {"config": {"featureGates": {"Bogus": True}}},
     ["/config/featureGates", "'Bogus' not allowed"]),
    ("feature-gate-not-bool", {"config": {"featureGates": {"CELOmitFunction": "yes"}}},
     ["/config/featureGates/CELOmitFunction", "want boolean"]),
    ("log-level", {"config": {"logLevel": "loud"}}, ["/config/logLevel"]),
    ("log-encoder", {"config": {"logEncoder": "xml"}}, ["/config/logEncoder"]),
    ("health-address-without-port", {"config": {"healthProbeBindAddress": "localhost"}},
     ["/config/healthProbeBindAddress"]),
    ("leader-election-namespace", {"config": {"leaderElectionNamespace": "Kro_System"}},
     ["/config/leaderElectionNamespace"]),
    ("pull-policy", {"image": {"pullPolicy": "Sometimes"}}, ["/image/pullPolicy"]),
    ("cluster-secrets-label-selector", {"config": {"multicluster": {
        "clusterSecretsLabel": "env in (prod)"}}},
     ["/config/multicluster/clusterSecretsLabel", "does not match pattern"]),
    ("cluster-secrets-namespace", {"config": {"multicluster": {
        "clusterSecretsNamespace": "Fleet_NS"}}},
     ["/config/multicluster/clusterSecretsNamespace"]),
    ("cluster-secrets-key", {"config": {"multicluster": {"clusterSecretsKey": "a/b"}}},
     ["/config/multicluster/clusterSecretsKey"]),
    ("local-cluster-name-empty", {"config": {"multicluster": {"localClusterName": ""}}},
     ["/config/multicluster/localClusterName"]),
    ("local-cluster-name-upper", {"config": {"multicluster": {"localClusterName": "Hub"}}},
     ["/config/multicluster/localClusterName"]),
    ("multicluster-enabled-string", {"config": {"multicluster": {"enabled": "yes"}}},
     ["/config/multicluster/enabled", "want boolean"]),
    ("multicluster-unknown", {"config": {"multicluster": {"secretsNamespace": "fleet"}}},
     ["/config/multicluster", "additional properties 'secretsNamespace' not allowed"]),
    ("ko-build", {"image": {"ko": True}}, ["/image/ko", "value must be false"]),
]

TEMPLATE_REJECTS: list[tuple[str, dict[str, Any], str]] = [
    ("service-monitor-without-service",
     {"metrics": {"serviceMonitor": {"enabled": True}}},
     "metrics.serviceMonitor.enabled needs metrics.service.create=true"),
    ("pprof-service-without-pprof", {"debug": {"pprof": {"service": {"enabled": True}}}},
     "debug.pprof.service.enabled needs debug.pprof.enabled=true"),
    ("warmup-without-leader-election",
     {"config": {"enableLeaderElection": False, "enableControllerWarmup": True}},
     "config.enableControllerWarmup needs config.enableLeaderElection=true"),
    ("replicas-without-leader-election",
     {"deployment": {"replicaCount": 2}, "config": {"enableLeaderElection": False}},
     "deployment.replicaCount > 1 needs config.enableLeaderElection=true"),
    ("metrics-port-mismatch", {"config": {"metricsBindAddress": ":9090"}},
     "deployment.containerPort (8078) must be the port of config.metricsBindAddress (:9090)"),
    # M-01: the controller refuses --enable-multicluster without the gate; so does the chart.
    ("multicluster-without-gate", {"config": {"multicluster": {"enabled": True}}},
     "config.multicluster.enabled needs config.featureGates.MultiCluster=true"),
    ("multicluster-with-gate-off",
     {"config": {"multicluster": {"enabled": True}, "featureGates": {"MultiCluster": False}}},
     "config.multicluster.enabled needs config.featureGates.MultiCluster=true"),
]


@pytest.mark.parametrize(("values", "expected"), [c[1:] for c in SCHEMA_REJECTS],
                         ids=[c[0] for c in SCHEMA_REJECTS])
def test_schema_rejects_bad_values_naming_the_field(
        helm: Path, values: dict[str, Any], expected: list[str]) -> None:
    error = render_error(helm, values)
    assert "don't meet the specifications of the schema" in error
    for fragment in expected:
        assert fragment in error, error


@pytest.mark.parametrize(("values", "message"), [c[1:] for c in TEMPLATE_REJECTS],
                         ids=[c[0] for c in TEMPLATE_REJECTS])
def test_inconsistent_values_fail_with_a_message(
        helm: Path, values: dict[str, Any], message: str) -> None:
    assert message in render_error(helm, values)


@pytest.mark.parametrize("values", [
    {"config": {"leaderElectionLeaseDuration": "1m30s"}},
    {"config": {"instance": {"requeueInterval": 0}}},
    {"config": {"instance": {"requeueInterval": "0"}}},
    {"config": {"logLevel": 3}},
    {"config": {"metricsBindAddress": "0"}},
    {"config": {"metricsBindAddress": "127.0.0.1:8078"}},
    {"config": {"rgd": {"maxGraphRevisions": 0}}},
    {"config": {"clientQps": 2.5}},
    {"global": {"imageRegistry": "example.com"}},
    {"image": {"ko": False}},
    {"config": {"featureGates": {"MultiCluster": True}, "multicluster": {
        "enabled": True, "clusterSecretsLabel": "example.com/member="}}},
], ids=["compound-duration", "requeue-off-int", "requeue-off-str", "numeric-log-level",
        "metrics-off", "metrics-loopback", "keep-all-revisions", "fractional-qps", "global",
        "upstream-ko-default", "hub-and-spokes-empty-label-value"])
def test_schema_accepts_valid_edge_values(helm: Path, values: dict[str, Any]) -> None:
    render(helm, values)


def test_schema_knows_exactly_the_controllers_feature_gates() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    gates = schema["properties"]["config"]["properties"]["featureGates"]["properties"]
    assert set(gates) == set(FEATURE_GATE_DEFAULTS)


def test_schema_describes_every_default_value() -> None:
    """values.yaml and values.schema.json list the same keys (so additionalProperties bites)."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def undeclared(node: dict[str, Any], spec: dict[str, Any], path: str) -> list[str]:
        missing = []
        properties = spec.get("properties", {})
        for key, value in node.items():
            if key not in properties:
                missing.append(path + key)
            elif isinstance(value, dict) and properties[key].get("properties"):
                missing += undeclared(value, properties[key], f"{path}{key}.")
        return missing

    assert undeclared(values, schema, "") == []
