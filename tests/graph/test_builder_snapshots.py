"""Regression snapshots: every example RGD in examples/ compiles, and its CRD, topological
order, apply-order waves and `status.resources` match the files in tests/graph/snapshots/.

The snapshots are written by kro-py's own builder (`KRO_UPDATE_GOLDEN=1 .venv/bin/pytest
tests/graph/test_builder_snapshots.py`, then the diff reviewed): they show what a change moved,
not that kro-py generates what upstream kro generates. Files under `examples_upstream_*` are named
after the example directory (RGDs taken from upstream's repository), not after upstream's output.
RGDs of one directory are built together, so an RGD whose resources are instances of another RGD
there (saas-multi-tenant's `Tenant`) resolves that RGD's CRD.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cli.offline import build_rgds
from kro.graph.builder import BuildOptions
from kro.graph.model import Graph
from kro.graph.resolver import OfflineSchemaResolver

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("KRO_UPDATE_GOLDEN") == "1"
EXAMPLES: Path | None = REPO / "examples" if (REPO / "examples").is_dir() else None


def _directories() -> list[Path]:
    if EXAMPLES is None:
        return []
    # examples/fleet names member clusters (`target`, the MultiCluster gate): its own test
    # compiles it with the gate on (tests/fleet/test_fleet_docs.py).
    fleet = EXAMPLES / "fleet"
    found = {p.parent for p in EXAMPLES.rglob("*.yaml") if _rgds(p) and not p.is_relative_to(fleet)}
    return sorted(found)


def _rgds(path: Path) -> list[dict[str, Any]]:
    documents = yaml.safe_load_all(path.read_text(encoding="utf-8"))
    return [
        d for d in documents if isinstance(d, dict) and d.get("kind") == "ResourceGraphDefinition"
    ]


def _snapshot_name(directory: Path, rgd_name: str) -> str:
    assert EXAMPLES is not None
    prefix = str(directory.relative_to(EXAMPLES)).replace("/", "_")
    return f"examples_{prefix}__{rgd_name}.yaml"


def _summary(graph: Graph, source: str) -> dict[str, Any]:
    waves: dict[int, list[str]] = {}
    for node_id in graph.topological_order:
        waves.setdefault(graph.nodes[node_id].apply_order, []).append(node_id)
    return {
        "source": source,
        "rgd": graph.rgd_name,
        "topologicalOrder": list(graph.topological_order),
        "waves": dict(sorted(waves.items())),
        "resources": graph.resources_status(),
        "crd": graph.instance.crd,
    }


HEADER = (
    "# A regression snapshot written by kro-py's own builder "
    "(tests/graph/test_builder_snapshots.py, KRO_UPDATE_GOLDEN=1); reviewed.\n"
)
DIRECTORIES = _directories()


@pytest.mark.skipif(EXAMPLES is None, reason="example RGDs not present")
@pytest.mark.parametrize(
    "directory",
    DIRECTORIES,
    ids=[str(d.relative_to(EXAMPLES)) for d in DIRECTORIES] if EXAMPLES else [],
)
def test_example_rgds_match_their_snapshots(directory: Path) -> None:
    assert EXAMPLES is not None
    sources: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(directory.glob("*.yaml")):
        sources += [(str(path.relative_to(EXAMPLES)), rgd) for rgd in _rgds(path)]
    results = build_rgds(
        [rgd for _, rgd in sources], OfflineSchemaResolver.from_files(), BuildOptions()
    )
    for (source, _), result in zip(sources, results, strict=True):
        assert result.error is None, f"{source}: {result.error}"
        assert result.graph is not None
        actual = _summary(result.graph, source)
        snapshot = SNAPSHOTS / _snapshot_name(directory, result.name)
        if UPDATE:
            SNAPSHOTS.mkdir(exist_ok=True)
            snapshot.write_text(HEADER + yaml.safe_dump(actual, sort_keys=False), encoding="utf-8")
            continue
        assert snapshot.exists(), f"missing {snapshot.name}; run with KRO_UPDATE_GOLDEN=1"
        assert yaml.safe_load(snapshot.read_text(encoding="utf-8")) == actual, snapshot.name


@pytest.mark.skipif(EXAMPLES is None or UPDATE, reason="example RGDs not present")
def test_every_snapshot_has_an_example() -> None:
    expected = {
        _snapshot_name(d, str(rgd["metadata"]["name"]))
        for d in DIRECTORIES
        for path in d.glob("*.yaml")
        for rgd in _rgds(path)
    }
    assert {p.name for p in SNAPSHOTS.glob("*.yaml")} == expected
    assert len(expected) >= 7
