"""bench/bench_controller.py's command line as the docs quote it, over the per-scenario modules
of bench/controller: every documented invocation still parses to its scenario, each scenario
refuses the options it cannot run, and the Graph decorator's restart figure is printed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from bench.controller import cli
from bench.controller.harness import SETTINGS
from bench.controller.scenarios import SCENARIOS, graph_decorator

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED_IN = ("docs/performance.md", "docs/sharding.md", "docs/metrics.md", "README.md")
SPAN = re.compile(r"`(?:python )?(?:bench/)?bench_controller\.py([^`]*)`")
EXAMPLE = re.compile(r"^\s*python bench/bench_controller\.py(.*)$", re.MULTILINE)
OPTIONAL = re.compile(r"\[([^\]]*)\]")


def _variants(arguments: str) -> list[list[str]]:
    """The argument list with every `[optional]` part left out, and with all of them in."""
    arguments = arguments.split("#", 1)[0].replace("\n", " ")
    without = OPTIONAL.sub(" ", arguments)
    with_all = OPTIONAL.sub(lambda m: f" {m.group(1)} ", arguments)
    return [
        ["3" if word == "N" else word for word in shlex.split(text)]
        for text in dict.fromkeys((without, with_all))
    ]


def documented_command_lines() -> list[list[str]]:
    found: list[list[str]] = []
    for name in DOCUMENTED_IN:
        for match in SPAN.finditer((ROOT / name).read_text()):
            found += _variants(match.group(1))
    script = (ROOT / "bench" / "bench_controller.py").read_text()
    for match in EXAMPLE.finditer(script):
        found += _variants(match.group(1))
    return [list(argv) for argv in dict.fromkeys(map(tuple, found))]


def test_docs_quote_many_command_lines() -> None:
    """The extraction below finds the docs' invocations (a broken pattern would find none)."""
    lines = documented_command_lines()
    assert len(lines) >= 20
    assert ["--scenario", "graph-decorator", "--namespaces", "500"] in lines
    assert [
        "--scenario",
        "configmaps",
        "--instances",
        "1000",
        "--restart",
        "--steady-seconds",
        "10",
    ] in lines


@pytest.mark.parametrize("argv", documented_command_lines(), ids=" ".join)
def test_every_documented_command_line_parses(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    args = cli.parse(argv)
    assert args.scenario in SCENARIOS
    if "--scenario" in argv:
        assert args.scenario == argv[argv.index("--scenario") + 1]


def test_no_arguments_run_three_as_make_bench_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    args = cli.parse([])
    assert (args.scenario, args.instances, args.workers, args.steady_seconds) == (
        "three",
        200,
        16,
        60.0,
    )


def test_the_graph_decorator_takes_restart_and_its_own_flag() -> None:
    args = cli.parse(["--scenario", "graph-decorator", "--namespaces", "20", "--restart"])
    assert (args.namespaces, args.more_namespaces, args.restart) == (20, 50, True)


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["--scenario", "graph-decorator", "--floor"], "--floor"),
        (["--scenario", "graph-decorator", "--replicas", "2"], "--replicas"),
        (["--scenario", "graph-decorator", "--scaling", "5"], "--scaling"),
        (["--scenario", "configmaps", "--fight"], "--fight"),
        (["--scenario", "configmaps", "--replicas", "3", "--restart"], "--replicas runs alone"),
    ],
)
def test_a_scenario_refuses_what_it_cannot_run(
    argv: list[str], refused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.parse(argv)
    assert exited.value.code == 2
    assert refused in capsys.readouterr().err


def test_policy_writes_counts_only_writes_to_networkpolicies() -> None:
    before = {"APPLY networkpolicies": 10.0, "LIST networkpolicies": 3.0, "APPLY graphs/status": 1}
    after = {
        "APPLY networkpolicies": 14.0,
        "PATCH networkpolicies": 1.0,
        "LIST networkpolicies": 9.0,
        "WATCH networkpolicies": 2.0,
        "APPLY graphs/status": 5.0,
        "APPLY configmaps": 7.0,
    }
    assert graph_decorator.policy_writes(before, after) == {"APPLY": 4.0, "PATCH": 1.0}


def _decorator_result(restart: dict[str, Any] | None) -> dict[str, Any]:
    phase = {"namespaces": 20, "policies_s": 1.5}
    result: dict[str, Any] = {"scenario": "graph-decorator", "namespaces": 20, "decorate": phase}
    if restart is not None:
        result["restart"] = restart
    return {**result, "label_more": phase, "policies_left_after_delete": 0}


def test_the_decorator_report_prints_the_restart_writes_and_keeps_its_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(SETTINGS, "results", tmp_path)
    graph_decorator.report(_decorator_result({"networkpolicy_writes": 20.0}))
    graph_decorator.report(_decorator_result(None))
    out = capsys.readouterr().out.splitlines()
    assert out[out.index("  restart:") + 1] == f"    {'networkpolicy_writes':36} 20.000"
    assert out.count("  decorate:") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "controller-graph-decorator-20ns-restart.json",
        "controller-graph-decorator-20ns.json",
    ]
