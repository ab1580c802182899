"""The chart's documentation names every value and flag the chart has, and its example is real.

docs/configuration.md is the flag <-> value table and docs/rbac.md quotes
examples/nginxapp/rbac.yaml; both would silently rot without these checks. docs/cli.md's
`kro clusters` is checked here too: its options mirror the MultiCluster values.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import yaml
from chartrender import CHART, FLAGS, GATED_FLAGS, OPTIONAL_FLAGS, REPO

from kro.api.names import LABEL_AGGREGATE_TO_CONTROLLER
from kro.cli.clusters import add_clusters_command

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


def _value_at(tree: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        tree = tree[part]
    return tree


def test_configuration_documents_the_multicluster_values_and_their_rbac() -> None:
    """M-02: each gated value with its flag and its values.yaml default, and the gate's own
    section says what RBAC it adds and what credentials it refuses."""
    text = (DOCS / "configuration.md").read_text()
    rows = {row.split("|")[1].strip(): row for row in text.splitlines()
            if row.startswith("| `")}
    config = yaml.safe_load((CHART / "values.yaml").read_text())["config"]
    for value, (flag, _) in GATED_FLAGS.items():
        row = rows.get(f"`{value}`")
        assert row is not None, f"config.{value} is missing from docs/configuration.md"
        assert f"`{flag}`" in row, f"{value}: flag {flag} not named"
        default = _value_at(config, value)
        shown = '""' if default == "" else str(default).lower() if isinstance(
            default, bool) else str(default)
        assert f"`{shown}`" in row, f"{value}: default {shown} not given"
    section = text.split("### The `MultiCluster` gate", 1)[1].split("\n#", 1)[0]
    for fragment in ("`<fullname>-cluster-secrets`", "`get`, `list` and `watch`",
                     "`exec` plugin", "`insecure-skip-tls-verify`", "`kro clusters"):
        assert fragment in section, fragment


def test_cli_guide_documents_every_option_of_kro_clusters() -> None:
    guide = (DOCS / "cli.md").read_text()
    section = guide.split("## `kro clusters`", 1)[1].split("\n## ", 1)[0]
    commands = argparse.ArgumentParser().add_subparsers()
    add_clusters_command(commands)
    parser = commands.choices["clusters"]
    options = {o for a in parser._actions for o in a.option_strings} - {"-h", "--help"}
    assert options == {"--kubeconfig", "--context", "-n", "--namespace", "--label", "--key",
                       "--local-cluster-name", "--timeout", "-o", "--output"}
    for option in options - {"--output"}:
        assert f"`{option}`" in section, option
    assert "`text`, `wide`, `json` or `yaml`" in section
    assert "kro clusters [-n NAMESPACE]" in guide  # the synopsis


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
