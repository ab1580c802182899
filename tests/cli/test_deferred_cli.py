"""The CLI and deferred nodes (DeferredSchemaResolution): `kro validate` warns about each,
naming the kind and why it may wait (an error with the gate off, as the controller builds);
`kro render` shows it waiting for its kind; `kro explain` reports it `SchemaPending`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kro.cli.explain_dryrun import report
from kro.cli.explain_report import NodeStatus
from kro.cli.main import main
from kro.engine.results import NodeReason, NodeResult
from kro.graph.builder import build_graph
from kro.graph.options import BuildOptions
from kro.graph.resolver import OfflineSchemaResolver

DATA = Path(__file__).resolve().parent / "data" / "deferred"
RGD = str(DATA / "installer-rgd.yaml")
GRAPH = str(DATA / "claims-graph.yaml")
GATE = ["--feature-gates", "DeferredSchemaResolution=true"]


def test_validate_warns_about_each_deferred_node(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", RGD, *GATE]) == 0
    out, err = capsys.readouterr()
    assert "is valid" in out
    assert err.strip() == (
        'warning: rgd "installer" resource "widget": kind Widget of deferred.example.com/v1 is '
        'not served (no schema found): deferred, because its includeWhen reads "crd"; it waits '
        "for its CRD when applied and is not type-checked until then (DeferredSchemaResolution)"
    )
    assert main(["validate", "-f", GRAPH, *GATE, "-o", "json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    deferred = [w for w in result["warnings"] if "DeferredSchemaResolution" in w]
    assert [w.split(":")[0] for w in deferred] == [
        'graph "claims" node "claimants"',
        'graph "claims" node "mark"',
    ]
    assert 'because its includeWhen reads "crd"' in deferred[0]
    assert "because it is marked optional: true" in deferred[1]


def test_validate_with_the_gate_off_fails_as_the_controller_would(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["validate", "-f", RGD]) == 1
    err = capsys.readouterr().err
    assert 'failed to build resource "widget"' in err
    assert "schema not found for kind Widget" in err
    assert main(["validate", "-f", GRAPH]) == 1
    assert "optional requires the DeferredSchemaResolution feature gate" in (
        capsys.readouterr().err
    )


def test_render_shows_a_deferred_node_waiting_for_its_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    instance = str(DATA / "installer-instance.yaml")
    base = ["render", "-f", RGD, "-i", instance, *GATE]
    assert main(base) == 0
    assert "# widget: waiting: includeWhen" in capsys.readouterr().out  # no CRD status yet
    assert main([*base, "--observed", str(DATA / "established-crd.yaml"), "-o", "json"]) == 0
    (rendering,) = json.loads(capsys.readouterr().out)["instances"]
    nodes = {n["id"]: n for n in rendering["resources"]}
    widget = nodes["widget"]
    assert widget["state"] == "waiting"
    assert widget["reason"].startswith(
        "SchemaPending: kind Widget of deferred.example.com/v1 is not served"
    )
    assert widget["objects"][0]["spec"] == {"size": "big"}  # what it will apply, untyped


def test_explain_reports_a_waiting_deferred_node_as_schema_pending() -> None:
    resolver = OfflineSchemaResolver.from_files()
    graph = build_graph(
        json.loads(json.dumps(_load(RGD))),
        resolver,
        options=BuildOptions(deferred_schema_resolution=True),
    )
    found = NodeResult(
        id="widget",
        state="IN_PROGRESS",
        reason=NodeReason.SCHEMA_PENDING,
        message="kind Widget of deferred.example.com/v1 is not served yet (waiting for its CRD)",
    )
    node = report(graph.node("widget"), found)
    assert node.status is NodeStatus.WAITING
    assert node.reason.startswith("SchemaPending: kind Widget of deferred.example.com/v1")
    assert (node.api_version, node.kind) == ("deferred.example.com/v1", "Widget")


def _load(path: str) -> dict[str, object]:
    import yaml

    loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_graph_and_rbac_name_a_deferred_kind(capsys: pytest.CaptureFixture[str]) -> None:
    """A deferred kind is literal: `kro graph` names it (marked deferred) and `kro generate
    rbac` grants it, unlike a kind computed per object."""
    assert main(["graph", "-f", GRAPH, *GATE]) == 0
    out = capsys.readouterr().out
    assert "claimants: ExternalCollection, deferred.example.com/v1alpha1/Claim (deferred" in out
    assert main(["graph", "-f", GRAPH, *GATE, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    nodes = {n["id"]: n for n in data["graphs"][0]["nodes"]}
    assert (nodes["mark"]["kind"], nodes["mark"]["deferred"]) == ("Claim", True)
    assert "deferred" not in nodes["crd"]
    assert main(["generate", "rbac", "-f", GRAPH, *GATE]) == 0
    rbac = capsys.readouterr().out
    assert "resources: [claims/status]" in rbac
    assert "resources: [claims]" in rbac
