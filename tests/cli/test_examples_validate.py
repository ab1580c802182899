"""Every RGD under examples/ (but examples/fleet, below) validates, strictly, as `kro validate
-f examples -R` in CI would: the examples are upstream's published RGDs and ours, valid
upstream, so they must stay valid here (RGDs of one run may use each other's kinds, as
saas-multi-tenant's `Tenant` does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kro.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FLEET = EXAMPLES / "fleet"
"""Left out here: its RGDs and Graph name member clusters (`target`), which needs the
MultiCluster gate (docs/fleet.md), and these checks run without gates;
tests/fleet/test_fleet_docs.py compiles them with the gate on instead."""


def _inputs() -> list[str]:
    """`-f DIR` for every example directory but the fleet's, as `-f examples -R` would read."""
    found: list[str] = []
    for path in sorted(EXAMPLES.iterdir()):
        if path.is_dir() and path != FLEET:
            found += ["-f", str(path)]
    return found


def test_every_example_rgd_validates(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", *_inputs(), "-R", "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    failures = {r["file"]: r["errors"] for r in report["results"] if not r["valid"]}
    assert (code, failures) == (0, {})
    files = {Path(r["file"]).relative_to(EXAMPLES).as_posix() for r in report["results"]}
    assert {"nginxapp/rgd.yaml", "application/rgd.yaml", "upstream/webapp/rg.yaml"} <= files
    assert len(report["results"]) >= 7


@pytest.mark.parametrize(
    "instance",
    sorted(
        str(p.relative_to(EXAMPLES))
        for p in EXAMPLES.rglob("*instance.yaml")
        if not p.is_relative_to(FLEET)
    ),
    ids=str,
)
def test_every_example_instance_passes_its_crd(
    instance: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["render", *_inputs(), "-R", "-i", str(EXAMPLES / instance)])
    assert (code, capsys.readouterr().err) == (0, "")
