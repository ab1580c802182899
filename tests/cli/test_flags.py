"""`kro controller` flags: names and defaults pinned to upstream (§1.S), Go durations."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kro.cli.flags import (
    ControllerConfig,
    parse_controller_args,
    parse_duration,
    parse_feature_gates,
    parse_log_level,
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
        "ConservativeCRDComparison": False,  # V-81: alpha, default off
        "DeletionPolicy": False,  # V-30: alpha, default off
        "GraphKind": False,  # V-40, V-81: alpha, default off
        "DeferredSchemaResolution": False,  # kro-py: alpha, default off
        "MultiCluster": False,  # M-01: kro-py, alpha, default off
    }
    assert (config.enable_multicluster, config.cluster_secrets_namespace) == (False, "")
    assert config.cluster_secrets_label == "multicluster.runtime/cluster=true"  # M-02
    assert (config.cluster_secrets_key, config.local_cluster_name) == ("kubeconfig", "local")
    assert config.graph_concurrent_reconciles == 1  # V-80
    assert (config.controller_namespace, config.controller_service_account) == ("", "")


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


def test_the_helm_chart_renders_arguments_the_controller_accepts(helm: Path) -> None:
    import subprocess

    import yaml

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


# -- Go-style values (kro.cli.flags module docstring) ------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--leader-elect"], True),
        (["--leader-elect=true"], True),
        (["--leader-elect=false"], False),
        (["--leader-elect=0"], False),
        (["--leader-elect=T"], True),
        (["--leader-elect=FALSE"], False),
        (["--leader-elect", "--allow-crd-deletion"], True),
        ([], False),
    ],
    ids=str,
)
def test_boolean_flags_take_go_syntax(argv: list[str], expected: bool) -> None:
    assert parse_controller_args(argv).leader_elect is expected


def test_a_boolean_flag_alone_does_not_swallow_the_next_flag() -> None:
    config = parse_controller_args(["--allow-crd-deletion", "--client-burst=7"])
    assert config.allow_crd_deletion is True
    assert config.client_burst == 7


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("debug", "debug"),
        ("info", "info"),
        ("warn", "warning"),
        ("error", "error"),
        ("dpanic", "critical"),
        ("panic", "critical"),
        ("fatal", "critical"),
        ("DEBUG", "debug"),
        ("1", "debug"),
        ("2", "debug"),
        ("10", "debug"),
        ("-1", "debug"),
        ("0", "info"),
    ],
    ids=str,
)
def test_every_zap_log_level_form_is_accepted(text: str, level: str) -> None:
    assert parse_log_level(text) == level
    assert parse_controller_args([f"--zap-log-level={text}"]).log_level == level


@pytest.mark.parametrize(
    "argv",
    [
        ["--log-level=loud"],
        ["--log-level=2.5"],
        ["--log-encoder=xml"],
        ["--leader-elect=yes"],
        ["--metrics-bind-address=localhost"],
        ["--metrics-bind-address=:99999"],
        ["--health-probe-bind-address=1.2.3.4"],
        ["--dynamic-controller-concurrent-reconciles=0"],
        ["--client-qps=0"],
        ["--client-burst=-1"],
        ["--dynamic-controller-default-queue-max-retries=-1"],
        ["--instance-requeue-interval=3"],
        ["--feature-gates=Nope=true"],
        ["--feature-gates=GraphKind=true"],  # without kro's own identity (V-40)
        ["--bogus"],
        ["--leader"],  # no abbreviations, as Go's flag package
    ],
    ids=lambda argv: argv[0],
)
def test_bad_flags_exit_2_with_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_controller_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("kro controller: ")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "address", [":8078", "127.0.0.1:8078", "[::1]:8078", "[::]:0", "0", "localhost:1"], ids=str
)
def test_bind_addresses(address: str) -> None:
    assert parse_controller_args([f"--metrics-bind-address={address}"]).metrics_bind_address == (
        address
    )


def test_enable_multicluster_needs_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    """M-01: the mode is refused, naming the gate, while MultiCluster is off."""
    with pytest.raises(SystemExit) as exited:
        parse_controller_args(["--enable-multicluster"])
    assert exited.value.code == 2
    assert "MultiCluster feature gate" in capsys.readouterr().err
    config = parse_controller_args(["--enable-multicluster", "--feature-gates=MultiCluster=true"])
    assert config.enable_multicluster


def test_cluster_secrets_label_is_one_key_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_controller_args(["--cluster-secrets-label=nolabel"])
    assert "invalid label 'nolabel'" in capsys.readouterr().err
    config = parse_controller_args(["--cluster-secrets-label=fleet.example.com/member=yes"])
    assert config.cluster_secrets_label == "fleet.example.com/member=yes"
