"""bench/bench_controller.py --scenario spokes (issue 35) without a cluster: its command line,
how it splits the controller's requests between the hub and the members (each member request
is in both families and must be counted once), its result names and its goal figures."""

from __future__ import annotations

from typing import Any

import pytest

from bench.controller import cli
from bench.controller.harness import SETTINGS
from bench.controller.scenarios import SCENARIOS, spokes
from bench.controller.scenarios.spokes_measure import HUB, Requests
from bench.controller.scenarios.spokes_table import compare, print_table

HUB_HOST = "127.0.0.1:6443"
METRICS = f"""# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{{code="200",host="{HUB_HOST}",method="GET"}} 10.0
rest_client_requests_total{{code="201",host="{HUB_HOST}",method="PATCH"}} 2.0
rest_client_requests_total{{code="200",host="127.0.0.1:7001",method="PATCH"}} 30.0
rest_client_requests_total{{code="201",host="127.0.0.1:7002",method="PATCH"}} 20.0
kro_cluster_requests_total{{cluster="member-1",code="200",method="PATCH"}} 30.0
kro_cluster_requests_total{{cluster="member-2",code="201",method="PATCH"}} 20.0
kro_cluster_ready{{cluster="member-1"}} 1.0
"""


def test_member_requests_are_counted_once_and_the_hub_gets_the_rest() -> None:
    found = Requests.parse(METRICS)
    assert found.total() == 62.0
    assert found.per_cluster() == {HUB: 12.0, "member-1": 30.0, "member-2": 20.0}
    assert found.by_method(HUB_HOST) == {
        HUB: {"GET 200": 10.0, "PATCH 201": 2.0},
        "member-1": {"PATCH 200": 30.0},
        "member-2": {"PATCH 201": 20.0},
    }


def test_since_keeps_only_what_moved() -> None:
    before = Requests.parse(METRICS)
    # member-1 sends 3 more PATCHes: both families move by 3, the hub's does not
    after = Requests.parse(METRICS.replace('method="PATCH"} 30.0', 'method="PATCH"} 33.0'))
    moved = after.since(before)
    assert moved.total() == 3.0
    assert moved.per_cluster() == {HUB: 0.0, "member-1": 3.0}


def test_the_issue_command_line_parses_with_its_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    args = cli.parse(["--scenario", "spokes", "--instances-per-member", "300"])
    assert SCENARIOS[args.scenario] is spokes.SCENARIO
    assert (args.instances_per_member, args.members, args.steady_seconds) == (300, 2, 60.0)
    assert (args.member_credentials, args.no_baseline) == ("token", False)


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["--pin"], "--pin"),
        (["--restart"], "--restart"),
        (["--floor"], "--floor"),
        (["--members", "0"], "at least one member"),
    ],
)
def test_spokes_refuses_what_it_cannot_run(
    argv: list[str], refused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.parse(["--scenario", "spokes", *argv])
    assert exited.value.code == 2
    assert refused in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "qps", "name"),
    [
        ([], 500.0, "controller-spokes-2x300-w16.json"),
        ([], 5000.0, "controller-spokes-2x300-w16-qps5000.json"),
        (
            ["--member-credentials", "certificate", "--no-baseline"],
            500.0,
            "controller-spokes-2x300-w16-certificate-fleet-only.json",
        ),
    ],
)
def test_runs_that_differ_keep_their_result_files_apart(
    argv: list[str], qps: float, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SETTINGS, "client_qps", qps)
    args = cli.parse(["--scenario", "spokes", "--instances-per-member", "300", *argv])
    assert spokes.result_name(args) == name


def _phase(**figures: Any) -> dict[str, Any]:
    base = {
        "load_average_at_start": [1.0, 1.0, 1.0],
        "all_active_s": 10.0,
        "p50_create_to_active_s": 5.0,
        "p99_create_to_active_s": 9.0,
        "controller_requests_per_instance": 7.0,
        "controller_requests_per_instance_by_cluster": {HUB: 7.0},
        "controller_requests_per_instance_by_method": {HUB: {"PATCH 200": 7.0}},
        "controller_peak_rss_mib": 80.0,
        "quiet_window_s": 60.0,
        "quiet_requests": 0.0,
        "quiet_requests_by_method": {},
        "quiet_requests_at_s": {},
        "quiet_apiserver_requests": {},
    }
    return {**base, **figures}


def test_the_goal_figures_and_their_table(capsys: pytest.CaptureFixture[str]) -> None:
    spread = _phase(
        all_active_s=11.0,
        controller_peak_rss_mib=85.0,
        rss_before_members_mib=70.0,
        rss_members_idle_mib=71.0,
        members_serving_s=0.4,
        quiet_requests=6.0,
        quiet_requests_at_s={"14": {"member-1": 3.0, "member-2": 3.0}},
    )
    one = _phase()
    found = compare(spread, one, members=2)
    assert found["time_to_active_ratio"] == pytest.approx(1.1)
    assert found["rss_growth_per_member_idle_mib"] == pytest.approx(0.5)
    assert found["rss_growth_per_member_at_size_mib"] == pytest.approx(2.5)
    assert (found["quiet_requests_fleet"], found["quiet_requests_one_cluster"]) == (6.0, 0.0)
    result = {
        "members": 2,
        "instances_per_member": 300,
        "workers": 16,
        "client_qps": 500.0,
        "fleet": spread,
        "one_cluster": one,
        "comparison": found,
    }
    print_table(result)
    out = capsys.readouterr().out
    assert "against 600 on one cluster" in out
    assert "time to all ACTIVE, ratio: 1.10 (goal <= 1.2)" in out
    assert "sent at (s into the window): {'14': {'member-1': 3.0, 'member-2': 3.0}}" in out


def test_a_fleet_only_run_has_no_comparison_to_make() -> None:
    spread = _phase(rss_before_members_mib=70.0, rss_members_idle_mib=70.4)
    found = compare(spread, None, members=2)
    assert set(found) == {"rss_growth_per_member_idle_mib", "quiet_requests_fleet"}
