"""The chart's documentation names every value and flag the chart has, and its example is real.

docs/configuration.md is the flag <-> value table and docs/rbac.md quotes
examples/nginxapp/rbac.yaml; both would silently rot without these checks.
"""

from __future__ import annotations

import re

import yaml
from chartrender import FLAGS, OPTIONAL_FLAGS, REPO

from kro.api.names import LABEL_AGGREGATE_TO_CONTROLLER

DOCS = REPO / "docs"


def test_configuration_table_lists_every_value_with_its_flag_and_default() -> None:
    text = (DOCS / "configuration.md").read_text()
    rows = {row.split("|")[1].strip(): row for row in text.splitlines()
            if row.startswith("| `")}
    for value, (flag, default) in FLAGS.items():
        row = rows.get(f"`{value}`")
        assert row is not None, f"config.{value} is missing from docs/configuration.md"
        assert f"`{flag}`" in row, f"{value}: flag {flag} not named"
        assert f"`{default}`" in row, f"{value}: default {default} not given"
    for value in OPTIONAL_FLAGS:
        assert f"`{value}`" in rows, value
    assert "`--pprof-bind-address`" in text


def test_rbac_guide_quotes_the_example_role_verbatim() -> None:
    guide = (DOCS / "rbac.md").read_text()
    (quoted,) = [block for block in re.findall(r"```yaml\n(.*?)```", guide, re.S)
                 if "kind: ClusterRole" in block]
    example = yaml.safe_load((REPO / "examples" / "nginxapp" / "rbac.yaml").read_text())
    assert yaml.safe_load(quoted) == example
    assert example["metadata"]["labels"] == {LABEL_AGGREGATE_TO_CONTROLLER: "true"}


def test_install_guide_documents_raw_manifests_rendered_from_the_chart() -> None:
    install = (DOCS / "install.md").read_text()
    assert "helm template kro ./charts/kro" in install
    assert "> kro.yaml" in install
    for flag in ("--include-crds", "metadata.includeHelmChart=false",
                 "metadata.includeManagedBy=false", "rbac.mode=aggregation"):
        assert flag in install, flag
