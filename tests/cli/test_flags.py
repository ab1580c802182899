"""`kro controller` flags: names and defaults pinned to upstream (§1.S), Go durations."""

from __future__ import annotations

import argparse

import pytest

from kro.cli.flags import (
    ControllerConfig,
    parse_controller_args,
    parse_duration,
    parse_feature_gates,
)


def test_defaults_match_upstream() -> None:
    config = parse_controller_args([])
    assert config == ControllerConfig()
    assert (config.metrics_bind_address, config.health_probe_bind_address) == (":8078", ":8079")
    assert config.leader_elect is False
    assert config.dynamic_concurrent_reconciles == 1
    assert (config.rate_limiter_min_delay_s, config.rate_limiter_max_delay_s) == (0.2, 1000.0)
    assert (config.rate_limiter_rate_limit, config.rate_limiter_burst_limit) == (10, 100)
    assert config.instance_requeue_interval_s == 3.0
    assert (config.client_qps, config.client_burst) == (100.0, 150)
    assert (config.max_collection_size, config.max_collection_dimension_size) == (1000, 10)
    assert config.max_graph_revisions == 5
    assert config.resync_period_s == 36000
    assert config.queue_max_retries == 20
    assert dict(config.feature_gates) == {
        "CELOmitFunction": False,
        "InstanceConditionEvents": False,
        "InstanceConditionMetrics": False,
    }


def test_chart_style_arguments_parse() -> None:
    config = parse_controller_args(
        [
            "--leader-elect=true",
            "--allow-crd-deletion=true",
            "--dynamic-controller-concurrent-reconciles=16",
            "--dynamic-controller-rate-limiter-min-delay=200ms",
            "--instance-requeue-interval=0",
            "--graceful-shutdown-timeout=1m30s",
            "--feature-gates=CELOmitFunction=true",
        ]
    )
    assert config.leader_elect
    assert config.allow_crd_deletion
    assert config.dynamic_concurrent_reconciles == 16
    assert config.instance_requeue_interval_s == 0.0
    assert config.graceful_shutdown_timeout_s == 90.0
    assert config.feature_gates["CELOmitFunction"] is True


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("200ms", 0.2),
        ("3s", 3.0),
        ("1000s", 1000.0),
        ("1m30s", 90.0),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        ("0", 0.0),
    ],
    ids=str,
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "3", "3x", "s", "1m-3s"], ids=repr)
def test_bad_durations_are_rejected_with_an_example(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="examples: 200ms"):
        parse_duration(text)


def test_unknown_feature_gate_names_the_known_ones() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="known: CELOmitFunction"):
        parse_feature_gates("Nope=true")


def test_the_helm_chart_renders_arguments_the_controller_accepts() -> None:
    import subprocess
    from pathlib import Path

    import yaml

    from kro.testing.testbin import ensure

    helm = ensure(["helm"])["helm"]
    chart = Path(__file__).resolve().parents[2] / "charts" / "kro"
    rendered = subprocess.run(
        [str(helm), "template", "kro", str(chart), "--set", "config.allowCRDDeletion=true"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    deployment = next(d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    config = parse_controller_args(container["args"])
    assert config.leader_elect is True  # on in the chart, off in the binary (as upstream)
    assert config.allow_crd_deletion is True
    assert config.health_probe_bind_address == ":8079"
