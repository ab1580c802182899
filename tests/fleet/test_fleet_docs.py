"""docs/fleet.md and examples/fleet say what a user can write and what kro does with it: every
RGD and Graph on the page and in the examples compiles with the MultiCluster gate on (and is
refused, naming the gate, with it off), and the page's tables of flags, refusals, names and
log lines agree with the code (M-02, M-03, M-10..M-16, M-20, M-21). When one side changes,
these tests fail until the other says so."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.api import names
from kro.cli.flags import ControllerConfig, controller_parser
from kro.cli.offline import build_rgds
from kro.fleet.credentials import REASONS
from kro.graph.errors import GraphError
from kro.graph.graph_kind import compile_graph
from kro.graph.model import Graph
from kro.graph.options import BuildOptions
from kro.graph.resolver import OfflineSchemaResolver, builtin_bundle

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "fleet.md").read_text()
EXAMPLES = ROOT / "examples" / "fleet"
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.DOTALL | re.MULTILINE)
GATE_ON = BuildOptions(multi_cluster=True, cluster_secrets_namespace="kro-system")
GATE_MESSAGE = "requires the MultiCluster feature gate"


def _page_documents() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for block in YAML_BLOCK.findall(DOC):
        found.extend(d for d in yaml.safe_load_all(block) if isinstance(d, dict))
    return found


def _example_files() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.yaml"))


def _example_documents() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in _example_files():
        found.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return found


def _of_kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in documents if d.get("kind") == kind]


def _targets(obj: Any) -> Iterator[Any]:
    """Every `target` block in an RGD or Graph, nested ones included."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "target":
                yield value
            yield from _targets(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from _targets(item)


def _build(rgds: list[dict[str, Any]], options: BuildOptions) -> dict[str, Any]:
    """{rgd name: Graph or its error}, the RGDs built together (one may use another's kind)."""
    results = build_rgds(rgds, OfflineSchemaResolver.from_files(), options)
    return {r.name: r.graph if r.error is None else r.error for r in results}


def _page_rgds() -> list[dict[str, Any]]:
    return _of_kind(SOURCES["docs/fleet.md"], "ResourceGraphDefinition")


SOURCES = {
    "docs/fleet.md": _page_documents(),
    "examples/fleet": _example_documents(),
}


def test_the_page_and_the_examples_have_what_they_describe() -> None:
    page = SOURCES["docs/fleet.md"]
    assert [r["metadata"]["name"] for r in _of_kind(page, "ResourceGraphDefinition")] == [
        "regional-caches",
        "audit-records",
    ]
    assert [g["metadata"]["name"] for g in _of_kind(page, "Graph")] == ["baseline"]
    examples = SOURCES["examples/fleet"]
    assert {r["metadata"]["name"] for r in _of_kind(examples, "ResourceGraphDefinition")} == {
        "placed-configs",
        "team-spaces",
        "audit-records",
        "audited-team-spaces",
    }
    assert [g["metadata"]["name"] for g in _of_kind(examples, "Graph")] == ["fleet-bundle"]


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_rgd_compiles_with_the_gate_on(source: str) -> None:
    rgds = _of_kind(SOURCES[source], "ResourceGraphDefinition")
    built = _build(rgds, GATE_ON)
    failures = {name: str(found) for name, found in built.items() if not isinstance(found, Graph)}
    assert failures == {}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_graph_compiles_with_the_gate_on(source: str) -> None:
    for graph in _of_kind(SOURCES[source], "Graph"):
        compiled = compile_graph(graph, OfflineSchemaResolver(builtin_bundle()), options=GATE_ON)
        assert set(compiled.topological_order) == {n["id"] for n in graph["spec"]["nodes"]}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_with_the_gate_off_a_target_is_a_build_error_naming_the_gate(source: str) -> None:
    """'With the gate off ... a `target` anywhere is a build error naming the gate.'"""
    documents = SOURCES[source]
    built = _build(_of_kind(documents, "ResourceGraphDefinition"), BuildOptions())
    for rgd in _of_kind(documents, "ResourceGraphDefinition"):
        found = built[rgd["metadata"]["name"]]
        if any(True for _ in _targets(rgd["spec"])):
            assert GATE_MESSAGE in str(found), rgd["metadata"]["name"]
    for graph in _of_kind(documents, "Graph"):
        with pytest.raises(GraphError, match="MultiCluster feature gate"):
            compile_graph(graph, OfflineSchemaResolver(builtin_bundle()))


def test_a_distributed_rgd_without_targets_needs_no_gate() -> None:
    """Hub and spokes is a flag, not an API: an RGD without targets builds as it always did."""
    rgds = _of_kind(SOURCES["examples/fleet"], "ResourceGraphDefinition")
    built = _build([r for r in rgds if r["metadata"]["name"] == "team-spaces"], BuildOptions())
    assert isinstance(built["team-spaces"], Graph)


def test_the_rgd_wide_target_may_read_schema_only() -> None:
    """'Reading anything else is a build error'."""
    (rgd,) = (r for r in _page_rgds() if r["metadata"]["name"] == "regional-caches")
    reading = yaml.safe_load(yaml.safe_dump(rgd))
    reading["spec"]["target"]["cluster"]["kubeconfigSecretName"] = "${config.metadata.name}"
    found = _build([reading], GATE_ON)["regional-caches"]
    assert 'spec.target: the target cluster "${config.metadata.name}" may only read schema' in str(
        found
    )


def test_a_target_names_the_registry_namespace_only() -> None:
    (rgd,) = (r for r in _page_rgds() if r["metadata"]["name"] == "regional-caches")
    elsewhere = yaml.safe_load(yaml.safe_dump(rgd))
    elsewhere["spec"]["target"]["cluster"]["kubeconfigSecretNamespace"] = "team-a"
    assert "registry's namespace" in str(_build([elsewhere], GATE_ON)["regional-caches"])


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_file_says_what_it_is_for(path: Path) -> None:
    """Each file opens with a comment; the files that define something list what to observe."""
    text = path.read_text()
    assert text.startswith("# ")
    documents = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    if _of_kind(documents, "ResourceGraphDefinition") or _of_kind(documents, "Graph"):
        header = text[: text.index("\napiVersion:")]
        assert "What you should observe:" in header


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table after `heading`, cells stripped."""
    section = DOC[DOC.index(heading) :]
    section = section[section.index("\n| ") + 1 :]
    rows = []
    for line in section.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_registry_flags_and_defaults_are_the_controllers() -> None:
    flags = {
        action.option_strings[0] for action in controller_parser()._actions if action.option_strings
    }
    defaults = ControllerConfig()
    rows = {row[0].strip("`"): row[1] for row in _table("## The registry: a member is a Secret")}
    assert set(rows) == {
        "--cluster-secrets-namespace",
        "--cluster-secrets-label",
        "--cluster-secrets-key",
        "--local-cluster-name",
    }
    assert set(rows) <= flags
    assert f"`{defaults.cluster_secrets_label}`" == rows["--cluster-secrets-label"]
    assert f"`{defaults.cluster_secrets_key}`" == rows["--cluster-secrets-key"]
    assert f"`{defaults.local_cluster_name}`" == rows["--local-cluster-name"]
    assert defaults.cluster_secrets_label == names.CLUSTER_SECRETS_LABEL_DEFAULT
    assert defaults.local_cluster_name == names.LOCAL_CLUSTER_NAME_DEFAULT


def test_every_flag_the_mapping_names_exists() -> None:
    flags = {
        action.option_strings[0] for action in controller_parser()._actions if action.option_strings
    }
    """Upstream's flags (first column) are kro-py's too, and so is every flag kro-py adds."""
    rows = _table("### KREP-013: hub and spokes on multicluster-runtime")
    named = {flag for row in rows for flag in re.findall(r"`(--[a-z-]+)`", row[0] + row[1])}
    assert {"--enable-multicluster", "--cluster-secrets-key", "--local-cluster-name"} <= named
    assert named <= flags


def test_the_refusal_table_lists_every_reason_the_registry_gives() -> None:
    rows = _table("### Only inline credentials")
    listed = {code for row in rows for code in re.findall(r"`([A-Za-z]+)`", row[1])}
    assert listed == set(REASONS)


def test_the_names_on_the_page_are_the_ones_kro_writes() -> None:
    for name in (
        names.LABEL_HUB,
        names.ANNOTATION_ABANDON_CLUSTER,
        names.ANNOTATION_APPLYSET_CLUSTERS,
        names.ANNOTATION_ORIGINATING_CLUSTER,
        names.ANNOTATION_TARGET_CLUSTER,
        names.LABEL_DISTRIBUTE,
        names.REASON_CLUSTER_NOT_FOUND,
        names.REASON_CLUSTER_FORBIDDEN,
        names.FEATURE_MULTI_CLUSTER,
    ):
        assert f"`{name}" in DOC, name


def test_the_log_lines_on_the_page_are_logged() -> None:
    line = next(x for x in DOC.splitlines() if x.startswith("- Log lines:"))
    start = DOC.index(line)
    listed = re.findall(r"`([a-z_]+\.[a-z_]+)`", DOC[start : DOC.index("\n- ", start + 1)])
    assert len(listed) >= 8
    source = "\n".join(p.read_text() for p in (ROOT / "kro").rglob("*.py"))
    for event in listed:
        assert f'"{event}"' in source, event
