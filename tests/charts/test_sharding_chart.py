"""The chart's shards.enabled: every replica reconciles a share, a PodDisruptionBudget keeps
some of them through a node drain, and the Leases they hold are within the chart's RBAC."""

from __future__ import annotations

from pathlib import Path

import pytest
from chartrender import render, render_error

from kro.cli.flags import parse_controller_args

pytestmark = pytest.mark.timeout(1800)  # first use may wait for the testbin build

SHARDED = {"shards": {"enabled": True, "minAvailable": 2}, "deployment": {"replicaCount": 3}}


def test_shards_are_off_by_default(helm: Path) -> None:
    rendered = render(helm)
    assert "--shards" not in rendered.args()
    assert rendered.of_kind("PodDisruptionBudget") == []
    assert parse_controller_args(rendered.container()["args"]).shards == "off"


def test_enabled_shards_pass_the_flag_and_render_a_disruption_budget(helm: Path) -> None:
    rendered = render(helm, SHARDED)
    assert rendered.args()["--shards"] == "auto"
    assert parse_controller_args(rendered.container()["args"]).shards == "auto"
    (deployment,) = rendered.of_kind("Deployment")
    assert deployment["spec"]["replicas"] == 3
    (budget,) = rendered.of_kind("PodDisruptionBudget")
    assert budget["spec"]["minAvailable"] == 2
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


@pytest.mark.parametrize("mode", ["aggregation", "unrestricted"])
def test_the_member_leases_are_allowed_in_every_rbac_mode(helm: Path, mode: str) -> None:
    rendered = render(helm, {**SHARDED, "rbac": {"mode": mode}})
    rules = [r for role in rendered.of_kind("ClusterRole") for r in role.get("rules") or []]
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    }
    needed = {("coordination.k8s.io", "leases", v) for v in ("get", "list", "create", "update")}
    assert needed <= granted or ("*", "*", "*") in granted


def test_the_schema_refuses_unknown_shard_settings(helm: Path) -> None:
    assert "shards" in render_error(helm, {"shards": {"enabled": True, "replicas": 3}})
