"""Every RGD under examples/ validates, strictly, as `kro validate -f examples -R` in CI would:
the examples are upstream's published RGDs and ours, valid upstream, so they must stay valid
here (RGDs of one run may use each other's kinds, as saas-multi-tenant's `Tenant` does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kro.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_every_example_rgd_validates(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", "-f", str(EXAMPLES), "-R", "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    failures = {r["file"]: r["errors"] for r in report["results"] if not r["valid"]}
    assert (code, failures) == (0, {})
    files = {Path(r["file"]).relative_to(EXAMPLES).as_posix() for r in report["results"]}
    assert {"nginxapp/rgd.yaml", "application/rgd.yaml", "upstream/webapp/rg.yaml"} <= files
    assert len(report["results"]) >= 7


@pytest.mark.parametrize(
    "instance",
    sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*instance.yaml")),
    ids=str,
)
def test_every_example_instance_passes_its_crd(
    instance: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["render", "-f", str(EXAMPLES), "-R", "-i", str(EXAMPLES / instance)])
    assert (code, capsys.readouterr().err) == (0, "")
