"""`kro --help` and `kro validate` load only what they run: the other subcommands' modules (the
cluster client of `explain`, the controller's) stay unimported, which is most of what a
CI job's `kro validate` used to pay at start-up. The one-line help `kro --help` shows for a
command it did not import is the command's own."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from kro.cli.main import COMMANDS, Command, build_parser

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("kro.cli.explain", "kro.cli.flags", "kro.cli.render", "kro.runtime.client")


def loaded_after(code: str) -> set[str]:
    """Which of HEAVY a fresh interpreter has imported after running `code`."""
    script = f"{code}\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return set(eval(done.stdout.strip().splitlines()[-1]))


def test_importing_the_command_imports_no_subcommand() -> None:
    assert loaded_after("import kro.cli.main") == set()


def test_help_imports_no_subcommand() -> None:
    code = "from kro.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    assert loaded_after(code) == set()


def test_validate_imports_neither_explain_nor_the_http_client() -> None:
    """(kro.cli.flags is shared: `--feature-gates` is parsed as the controller parses it.)"""
    rgd = ROOT / "examples" / "application" / "rgd.yaml"
    code = f"from kro.cli.main import main\nassert main(['validate', '-f', {str(rgd)!r}]) == 0"
    assert loaded_after(code) <= {"kro.cli.flags"}


def _help_of(parser: argparse.ArgumentParser, name: str) -> str | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return next(a.help for a in action._choices_actions if a.dest == name)
    return None


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_listed_help_is_the_commands_own(command: Command) -> None:
    listed = _help_of(build_parser(), command.name)
    own = _help_of(build_parser(command.name), command.name)
    assert listed == own
