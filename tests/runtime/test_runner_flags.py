"""The runner's flags as an operator's user meets them: `--help` names each one's environment
variable and default, and the probe and metrics servers listen by default in a pod only."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from kro.runtime.runflags import FLAGS
from kro.runtime.runner import options_from

POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
RUNNER_VARIABLES = [flag.env for flag in FLAGS if flag.env] + list(POD)


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for variable in RUNNER_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def help_text(environ: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in RUNNER_VARIABLES} | environ
    done = subprocess.run(
        [sys.executable, "-m", "kro.runtime", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    return done.stdout


def entries(text: str) -> dict[str, str]:
    """`--flag` -> its help paragraph, whitespace folded (argparse wraps at the terminal)."""
    found: dict[str, str] = {}
    for block in re.split(r"\n(?=  -)", text.split("options:", 1)[1]):
        names = re.findall(r"--[\w-]+", block.split("  ", 2)[1] if "  " in block else block)
        if names:
            found[names[-1]] = " ".join(block.split())
    return found


def test_help_lists_every_flag_with_a_description_its_variable_and_default() -> None:
    listed = entries(help_text({}))
    for flag in FLAGS:
        text = listed[flag.names[-1]]
        assert flag.help.split()[0] in text, f"{flag.names[-1]} has no description"
        assert "default: " in text
        if flag.env:
            assert f"env {flag.env};" in text
    assert (
        "(env METRICS_BIND_ADDRESS; default: :8080 in a pod, else 0)"
        in listed["--metrics-bind-address"]
    )
    assert "default: 30.0" in listed["--graceful-shutdown-timeout"]


def test_help_shows_what_the_environment_sets() -> None:
    listed = entries(help_text({"WATCH_NAMESPACE": "prod"}))
    assert "now: WATCH_NAMESPACE=prod" in listed["--namespace"]


def test_probes_and_metrics_listen_by_default_in_a_pod_only(
    clean_environment: pytest.MonkeyPatch,
) -> None:
    outside = options_from([], name="op")[0].manager_options()
    assert (outside.health_probe_bind_address, outside.metrics_bind_address) == ("0", "0")
    for variable, value in POD.items():
        clean_environment.setenv(variable, value)
    inside = options_from([], name="op")[0].manager_options()
    assert (inside.health_probe_bind_address, inside.metrics_bind_address) == (":8081", ":8080")
    clean_environment.setenv("METRICS_BIND_ADDRESS", "0")
    chosen = options_from(["--health-probe-bind-address", "127.0.0.1:9000"], name="op")[0]
    assert (chosen.health_probe_bind_address, chosen.metrics_bind_address) == (
        "127.0.0.1:9000",
        "0",
    )


def test_variables_fill_in_for_flags_of_every_type(clean_environment: pytest.MonkeyPatch) -> None:
    for variable, value in {
        "LEADER_ELECT": "yes",
        "GRACEFUL_SHUTDOWN_TIMEOUT": "5.5",
        "KUBE_BURST": "7",
        "OPERATOR_NAME": "from-env",
    }.items():
        clean_environment.setenv(variable, value)
    options, _ = options_from([], name="op")
    assert options.leader_elect is True
    assert options.graceful_shutdown_timeout_s == 5.5
    assert options.burst == 7
    assert options.name == "from-env"
    assert options_from(["--name", "flag"], name="op")[0].name == "flag"
