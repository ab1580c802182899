"""charts/kro/crds/ ships byte-identical copies of kro/api/crds/, so the two never drift.

kro/api/crds/*.yaml is the single source of truth (kro.api.crds). Helm installs a chart's crds/
directory verbatim, so after editing a CRD copy it over:  cp kro/api/crds/*.yaml charts/kro/crds/
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from kro.api.crds import CRD_FILES

CHART_CRDS = Path(__file__).resolve().parents[2] / "charts" / "kro" / "crds"


def test_chart_ships_exactly_the_api_crds() -> None:
    assert sorted(p.name for p in CHART_CRDS.iterdir()) == sorted(CRD_FILES)


@pytest.mark.parametrize("file_name", CRD_FILES, ids=str)
def test_chart_crd_is_a_byte_identical_copy(file_name: str) -> None:
    shipped = resources.files("kro.api").joinpath("crds", file_name).read_bytes()
    assert (CHART_CRDS / file_name).read_bytes() == shipped, (
        f"charts/kro/crds/{file_name} differs from kro/api/crds/{file_name}; "
        "run: cp kro/api/crds/*.yaml charts/kro/crds/")
