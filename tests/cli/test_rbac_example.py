"""examples/nginxapp/rbac.yaml is exactly what `kro generate rbac` prints for the example RGD
(after its comment header), so the shipped role can never drift from the computed one."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kro.cli.rbac import add_rbac_command

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nginxapp"


def test_example_role_is_the_generated_role(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="kro")
    generate = parser.add_subparsers(dest="artifact", required=True)
    add_rbac_command(generate)
    args = parser.parse_args(["rbac", "-f", str(EXAMPLE / "rgd.yaml"), "--mode", "aggregation"])
    assert args.handler(args) == 0
    generated = capsys.readouterr().out
    shipped = (EXAMPLE / "rbac.yaml").read_text()
    header = "".join(line for line in shipped.splitlines(keepends=True) if line.startswith("#"))
    assert shipped == header + generated
