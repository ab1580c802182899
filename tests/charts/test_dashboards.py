"""The chart's Grafana dashboard and PrometheusRule: off by default, rendered where the Grafana
sidecar and the prometheus-operator look, asking only for metrics kro exports, and valid PromQL
(promtool, built from Go modules like helm, checks and unit-tests the rules).
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chartrender import NAMESPACE, REPO, render, render_error
from metricnames import (
    as_promql,
    documented,
    grafana_query_names,
    metric_names,
    registered_in_code,
    scraped,
    series_names,
    unknown,
)

from kro.testing import testbin

pytestmark = pytest.mark.timeout(1800)  # first use may wait for (or do) a testbin build

ALERTS = [
    "KroDown",
    "KroNoLeader",
    "KroLeaderChanges",
    "KroReconcileErrors",
    "KroRGDFailures",
    "KroInstanceFailures",
    "KroInstancesInError",
    "KroFieldConflictYielded",
    "KroWorkQueueDepthHigh",
    "KroWorkQueueLatencyHigh",
    "KroInstanceReconcileSlow",
]
BOTH = {"grafanaDashboard": {"enabled": True}, "prometheusRule": {"enabled": True}}
SELECTOR = 'job="kro-metrics", namespace="kro-system"'


@pytest.fixture(scope="module")
def exported() -> set[str]:
    """Sample names kro exports: a real scrape, plus names registered only at run time."""
    return series_names({**registered_in_code(), **scraped()})


@pytest.fixture(scope="module")
def promtool() -> Path:
    try:
        return testbin.ensure(["promtool"])["promtool"]
    except (OSError, subprocess.CalledProcessError, RuntimeError) as error:
        pytest.skip(
            "promtool is unavailable (it is built from Go modules by kro.testing.testbin, "
            f"or named by TEST_ASSET_PROMTOOL): {error}; the PromQL name checks still ran"
        )


@pytest.fixture(scope="module")
def rendered(helm: Path) -> dict[str, dict[str, Any]]:
    objects = render(helm, BOTH)
    return {
        "dashboard": json.loads(objects.get("ConfigMap", "kro-dashboard")["data"]["kro.json"]),
        "rule": objects.get("PrometheusRule", "kro"),
    }


def _panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def _dashboard_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, query) for every panel target and every query variable."""
    queries = [
        (f"panel {panel['title']!r} {target['refId']}", target["expr"])
        for panel in _panels(dashboard)
        for target in panel.get("targets", [])
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            queries.append((f"variable ${variable['name']}", query.get("query", query)
                            if isinstance(query, dict) else query))
    return queries


def _rules(rule: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


# -- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (le, gvr) (rate(x_bucket{job=~"$job", a="b{c}"}[5m]))', {"x_bucket"}),
        ("a_total / ignoring(code) group_left(x) b offset 5m > 0.99", {"a_total", "b"}),
        ("absent(up{job='x'}) or vector(1e3)", {"up"}),
        ('histogram_quantile(0.99, x[$__rate_interval:1m]) and on (name) y', {"x", "y"}),
    ],
    ids=["matchers-and-range", "grouping-and-offset", "functions-and-numbers", "subquery"],
)
def test_metric_names_are_found_in_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_the_code_scan_sees_every_scraped_family() -> None:
    """The code view must not miss what a real scrape shows, or it could not vouch for the
    metrics that only appear at run time either."""
    in_code = registered_in_code()
    process = {"process_", "python_"}
    missing = [n for n in scraped() if n not in in_code and not n.startswith(tuple(process))]
    assert missing == [], "registered in a way metricnames.registered_in_code does not see"


def test_dashboard_queries_use_only_exported_metric_names(
    rendered: dict[str, dict[str, Any]], exported: set[str]
) -> None:
    queries = _dashboard_queries(rendered["dashboard"])
    assert len(queries) > 20
    for where, query in queries:
        names = grafana_query_names(query)
        assert names, f"{where}: no metric in {query!r}"
        assert unknown(names, exported) == [], f"{where}: {query}"


def test_alerts_use_only_exported_metric_names(
    rendered: dict[str, dict[str, Any]], exported: set[str]
) -> None:
    for rule in _rules(rendered["rule"]):
        names = metric_names(rule["expr"])
        assert names, rule["alert"]
        assert unknown(names, exported) == [], f"{rule['alert']}: {rule['expr']}"


def test_every_metric_the_chart_queries_is_documented(
    rendered: dict[str, dict[str, Any]],
) -> None:
    used = {n for _, q in _dashboard_queries(rendered["dashboard"]) for n in grafana_query_names(q)}
    used |= {n for r in _rules(rendered["rule"]) for n in metric_names(r["expr"])}
    docs = documented()
    histogram_parts = [
        n for n in used if n not in docs and n.endswith(("_bucket", "_sum", "_count"))
    ]
    missing = {n for n in used if n not in docs} - set(histogram_parts)
    missing |= {n.rsplit("_", 1)[0] for n in histogram_parts} - docs
    assert sorted(missing) == [], "missing from docs/metrics.md"


# -- rendering ------------------------------------------------------------------------------


def test_both_are_off_by_default(helm: Path) -> None:
    objects = render(helm)
    assert objects.of_kind("ConfigMap") == []
    assert objects.of_kind("PrometheusRule") == []


def test_dashboard_configmap_carries_the_sidecar_label(helm: Path) -> None:
    configmap = render(helm, BOTH).get("ConfigMap", "kro-dashboard")
    assert configmap["metadata"]["namespace"] == NAMESPACE
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["labels"]["app.kubernetes.io/name"] == "kro"
    dashboard = json.loads(configmap["data"]["kro.json"])
    assert dashboard["uid"] == "kro-controller"
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource", "job", "rgd"]


def test_dashboard_label_namespace_and_annotations_are_configurable(helm: Path) -> None:
    values = {"grafanaDashboard": {"enabled": True, "namespace": "monitoring",
                                   "sidecarLabel": "grafana.io/dashboard",
                                   "sidecarLabelValue": "kro",
                                   "labels": {"team": "platform"},
                                   "annotations": {"grafana_folder": "kro"}}}
    meta = render(helm, values).get("ConfigMap", "kro-dashboard")["metadata"]
    assert meta["namespace"] == "monitoring"
    assert meta["labels"]["grafana.io/dashboard"] == "kro"
    assert meta["labels"]["team"] == "platform"
    assert "grafana_dashboard" not in meta["labels"]
    assert meta["annotations"] == {"grafana_folder": "kro"}


def test_dashboard_panels_all_use_the_datasource_variable(
    rendered: dict[str, dict[str, Any]],
) -> None:
    for panel in _panels(rendered["dashboard"]):
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            for target in panel["targets"]:
                assert 'job=~"$job"' in target["expr"], panel["title"]


def test_rule_has_every_alert_scoped_to_the_controllers_job(
    rendered: dict[str, dict[str, Any]],
) -> None:
    rules = _rules(rendered["rule"])
    assert [r["alert"] for r in rules] == ALERTS
    for rule in rules:
        assert SELECTOR in rule["expr"], rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"]
        assert rule["annotations"]["description"]


def test_rule_selector_labels_thresholds_and_disabled_alerts_are_configurable(
    helm: Path,
) -> None:
    values = {"prometheusRule": {
        "enabled": True,
        "selector": 'job="kro"',
        "additionalLabels": {"release": "prometheus"},
        "additionalRuleLabels": {"team": "platform"},
        "disabled": {"KroLeaderChanges": True, "KroDown": False},
        "thresholds": {"workQueueDepth": 500},
    }}
    rule = render(helm, values).get("PrometheusRule", "kro")
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    rules = {r["alert"]: r for r in _rules(rule)}
    assert sorted(rules) == sorted(set(ALERTS) - {"KroLeaderChanges"})
    assert all('{job="kro"' in r["expr"] for r in rules.values())
    assert all(r["labels"]["team"] == "platform" for r in rules.values())
    assert rules["KroWorkQueueDepthHigh"]["expr"].endswith("> 500")


@pytest.mark.parametrize(
    ("values", "where"),
    [
        # helm's validator reports a bad property name at a wrong path; its name is right.
        ({"prometheusRule": {"disabled": {"KroTypo": True}}}, "invalid propertyName 'KroTypo'"),
        ({"prometheusRule": {"selector": "{job='x'}"}}, "/prometheusRule/selector"),
        ({"prometheusRule": {"thresholds": {"workQueueDepth": 0}}},
         "/prometheusRule/thresholds/workQueueDepth"),
        ({"grafanaDashboard": {"enable": True}}, "/grafanaDashboard"),
    ],
    ids=["unknown-alert", "selector-with-braces", "zero-depth", "misspelt-key"],
)
def test_schema_rejects_bad_monitoring_values(helm: Path, values: dict[str, Any],
                                              where: str) -> None:
    assert where in render_error(helm, values)


# -- promtool -------------------------------------------------------------------------------


def _promtool(promtool: Path, *args: str, cwd: Path) -> str:
    done = subprocess.run([str(promtool), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_rules_pass_promtool_check(
    rendered: dict[str, dict[str, Any]], promtool: Path, tmp_path: Path
) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rendered["rule"]["spec"]))
    out = _promtool(promtool, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml",
                    cwd=tmp_path)
    assert f"SUCCESS: {len(ALERTS)} rules found" in out


def test_dashboard_queries_parse_with_promtool(
    rendered: dict[str, dict[str, Any]], promtool: Path, tmp_path: Path
) -> None:
    queries = _dashboard_queries(rendered["dashboard"])
    rules = [{"record": f"kro:dashboard:q{i}", "expr": as_promql(q)}
             for i, (_, q) in enumerate(queries)]
    (tmp_path / "dashboard.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    out = _promtool(promtool, "check", "rules", "dashboard.yaml", cwd=tmp_path)
    assert f"SUCCESS: {len(rules)} rules found" in out


def test_alerts_fire_on_trouble_and_stay_quiet_when_healthy(
    rendered: dict[str, dict[str, Any]], promtool: Path, tmp_path: Path
) -> None:
    """promtool's rule unit tests (tests/charts/alerts-test.yaml), on the rendered rules
    without their annotations: these tests are about when each alert fires."""
    rule = copy.deepcopy(rendered["rule"])
    for alert in _rules(rule):
        alert.pop("annotations")
    spec = rule["spec"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "test.yaml").write_text((REPO / "tests/charts/alerts-test.yaml").read_text())
    _promtool(promtool, "test", "rules", "test.yaml", cwd=tmp_path)


def test_install_guide_explains_every_alert_and_value() -> None:
    guide = (REPO / "docs" / "install.md").read_text()
    rows = {line.split("|")[1].strip() for line in guide.splitlines() if line.startswith("| `Kro")}
    assert rows == {f"`{alert}`" for alert in ALERTS}
    values = yaml.safe_load((REPO / "charts" / "kro" / "values.yaml").read_text())
    for key in ("grafanaDashboard", "prometheusRule"):
        for leaf in values[key]:
            if leaf not in ("enabled", "thresholds", "sidecarLabelValue"):
                assert f"{key}.{leaf}" in guide, f"{key}.{leaf}"
        for name in values["prometheusRule"]["thresholds"]:
            assert f"thresholds.{name}" in guide, name
