"""`kro explain` on the command line: registration on a parser, target parsing, exit codes, the
default namespace, and the handler end to end over a fake cluster (kro.cli.explain)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli import explain as explain_module
from kro.cli.explain import (
    EXIT_CANNOT_EXPLAIN,
    EXIT_OK,
    EXIT_USAGE,
    Request,
    UsageError,
    add_explain_command,
    context_namespace,
    parse_request,
)
from kro.cli.explain_format import SecretMask
from kro.cli.explain_report import InstanceReport, RGDReport
from kro.cli.explain_source import ExplainError


@pytest.fixture(autouse=True)
def process_logging_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command configures logging for its process; a test run must not inherit that."""
    monkeypatch.setattr(explain_module, "quiet_logs", lambda: None)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="kro")
    add_explain_command(root.add_subparsers(dest="command", required=True))
    return root


def run(argv: list[str]) -> int:
    args = parser().parse_args(["explain", *argv])
    code: int = args.handler(args)
    return code


@pytest.mark.parametrize(
    ("target", "name", "expected"),
    [
        ("webapp/my-app", None, Request("my-app", "webapp")),
        ("webapps.kro.run/my-app", None, Request("my-app", "webapps.kro.run")),
        ("webapp", "my-app", Request("my-app", "webapp")),
        ("rgd", "web", Request("web")),
        ("RGD/web", None, Request("web")),
        ("resourcegraphdefinition", "web", Request("web")),
    ],
    ids=["kind-slash-name", "plural-group", "kind-space-name", "rgd", "rgd-slash", "rgd-long"],
)
def test_targets(target: str, name: str | None, expected: Request) -> None:
    assert parse_request(target, name) == expected


@pytest.mark.parametrize(
    ("target", "name"),
    [("webapp", None), ("webapp/", None), ("/x", None), ("a/b/c", None), ("a/b", "c")],
    ids=["no-name", "empty-name", "empty-kind", "two-slashes", "name-twice"],
)
def test_bad_targets_are_usage_errors(target: str, name: str | None) -> None:
    with pytest.raises(UsageError):
        parse_request(target, name)


def test_a_bad_target_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["webapp"]) == EXIT_USAGE
    assert "KIND/NAME" in capsys.readouterr().err


def test_an_unknown_output_format_is_argparses_usage_error() -> None:
    with pytest.raises(SystemExit) as exited:
        run(["webapp/x", "-o", "xml"])
    assert exited.value.code == 2


def test_help_names_the_view_role(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run(["--help"])
    assert "view role" in capsys.readouterr().out


def test_a_missing_kubeconfig_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["webapp/x", "--kubeconfig", str(tmp_path / "none")]) == EXIT_CANNOT_EXPLAIN
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("error: cannot read from the cluster: ")


def kubeconfig(tmp_path: Path, namespace: str | None) -> Path:
    context: dict[str, Any] = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "current-context": "main",
        "contexts": [{"name": "main", "context": context},
                     {"name": "other", "context": {"cluster": "c", "namespace": "elsewhere"}}],
    }))
    return path


def test_the_namespace_defaults_to_the_contexts(tmp_path: Path) -> None:
    assert context_namespace(str(kubeconfig(tmp_path, "team")), None) == "team"
    assert context_namespace(str(kubeconfig(tmp_path, "team")), "other") == "elsewhere"
    assert context_namespace(str(kubeconfig(tmp_path, None)), None) == "default"
    assert context_namespace(str(tmp_path / "missing"), None) == "default"


REPORT = InstanceReport(
    root_cause="no problem found: the instance is ACTIVE and every resource is ready",
    api_version="kro.run/v1alpha1", kind="Demo", namespace="team", name="d", state="ACTIVE",
    generation=1, source=None,
)


@pytest.fixture
def fake_explain(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Request, str | None]]:
    """The handler over a stand-in for the cluster reads; records what it was asked."""
    calls: list[tuple[Request, str | None]] = []

    async def explain(
        request: Request, args: argparse.Namespace, mask: SecretMask
    ) -> InstanceReport | RGDReport:
        calls.append((request, args.namespace))
        if request.name == "gone":
            raise ExplainError('Demo "gone" not found in namespace "team"')
        return REPORT

    monkeypatch.setattr(explain_module, "explain", explain)
    return calls


def test_an_explained_instance_exits_0_whatever_its_state(
    fake_explain: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["demo/d", "-n", "team"]) == EXIT_OK
    assert capsys.readouterr().out.startswith(f"Root cause: {REPORT.root_cause}\n")
    assert fake_explain == [(Request("d", "demo"), "team")]


def test_json_output(fake_explain: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["demo/d", "-o", "json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["rootCause"] == REPORT.root_cause


def test_what_cannot_be_explained_exits_1(
    fake_explain: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["demo/gone"]) == EXIT_CANNOT_EXPLAIN
    captured = capsys.readouterr()
    assert captured.err == 'error: Demo "gone" not found in namespace "team"\n'
    assert captured.out == ""
