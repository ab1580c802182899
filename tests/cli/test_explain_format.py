"""`kro explain` output: text (golden files; KRO_UPDATE_GOLDEN=1 rewrites them), JSON and YAML
with the same findings, Secret values and credentials masked (kro.cli.explain_format)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
import yaml

from kro.cli.explain_format import SecretMask, render
from kro.cli.explain_report import (
    BuildFailure,
    ConditionReport,
    DeletionReport,
    EventReport,
    GraphNode,
    GraphSource,
    InstanceReport,
    MemberReport,
    MissingField,
    NodeReport,
    NodeStatus,
    ObjectId,
    RGDReport,
)

GOLDEN = Path(__file__).resolve().parent / "golden"
CONFIG = ObjectId("v1", "ConfigMap", "team", "d-config")
SOURCE = ObjectId("v1", "ConfigMap", "team", "d-source")


def node(node_id: str, status: NodeStatus, wave: int = 1, deps: tuple[str, ...] = (),
         objects: tuple[ObjectId, ...] = (), **details: object) -> NodeReport:
    return NodeReport(id=node_id, type="Resource", api_version="v1", kind="ConfigMap",
                      wave=wave, dependencies=deps, status=status, objects=objects,
                      **details)  # type: ignore[arg-type]


WAITING = InstanceReport(
    root_cause='node "config" (ConfigMap team/d-config) is not ready: readyWhen '
    "\"config.data.phase == 'done'\" is false",
    api_version="kro.run/v1alpha1", kind="Demo", namespace="team", name="d",
    state="IN_PROGRESS", generation=3,
    source=GraphSource("demo-rgd", "Active", 2, "demo-rgd-r00002", True),
    nodes=(
        node("config", NodeStatus.NOT_READY, objects=(CONFIG,),
             reason="readyWhen \"config.data.phase == 'done'\" is false",
             expression="config.data.phase == 'done'"),
        node("app", NodeStatus.WAITING, 2, ("config",),
             reason='waits for node "config", which is not ready', waiting_on="config"),
        node("source", NodeStatus.APPLIED, objects=(SOURCE,)),
        node("sink", NodeStatus.WAITING, 2, ("source",),
             reason='expression "source.data.token" reads field "data.token" of ConfigMap '
             'team/d-source (node "source"), which does not exist yet',
             expression="source.data.token", field_path="data.token",
             missing=MissingField("source", "data.token", SOURCE)),
        node("extra", NodeStatus.EXCLUDED, 2, ("source",),
             reason='includeWhen "schema.spec.extra" is false', expression="schema.spec.extra"),
    ),
    conditions=(
        ConditionReport("ResourcesReady", "False", "NotReady", "awaiting resource readiness"),
        ConditionReport("Ready", "False", "NotReady", "awaiting resource readiness"),
    ),
    events=(EventReport("ConfigMap team/d-config", "Stuck", "still stuck", 3),),
    notes=("cannot read CustomResourceDefinition demos.kro.run with your permissions",),
)

DELETING = InstanceReport(
    root_cause="deletion is blocked at wave 2: ConfigMap team/d-app (node \"app\") is "
    "terminating but held by finalizer(s) example.com/hold",
    api_version="kro.run/v1alpha1", kind="Demo", namespace="team", name="d",
    state="DELETING", generation=2, source=None,
    deletion=DeletionReport(
        wave=2,
        members=(
            MemberReport(ObjectId("v1", "ConfigMap", "team", "d-app"), "app", 2, True,
                         ("example.com/hold",)),
            MemberReport(CONFIG, "config", 1, False),
        ),
        blockers=('ConfigMap team/d-app (node "app") is terminating but held by finalizer(s) '
                  "example.com/hold",),
        instance_finalizers=("kro.run/finalizer",),
    ),
)

BROKEN_RGD = RGDReport(
    root_cause='the graph does not compile (resource "config"): failed to build resource '
    '"config": unknown field',
    name="demo-rgd", state="Inactive", generation=4, kind="Demo",
    conditions=(ConditionReport("GraphAccepted", "False", "InvalidResourceGraph", "failed"),),
    build=BuildFailure('failed to build resource "config": unknown field', "config",
                       "spec.extra", "schema.spec.x", "G-10"),
    revisions=("demo-rgd-r00001: GraphVerified=True (graph revision compiled and verified)",),
)

ACTIVE_RGD = RGDReport(
    root_cause="no problem found: the ResourceGraphDefinition is Active",
    name="demo-rgd", state="Active", generation=1, kind="Demo",
    graph=(GraphNode("config", "v1", "ConfigMap", 1),
           GraphNode("app", "v1", "ConfigMap", 2, ("config",), conditional=True)),
)

CASES = {"waiting": WAITING, "deleting": DELETING, "rgd-broken": BROKEN_RGD,
         "rgd-active": ACTIVE_RGD}


@pytest.mark.parametrize("name", sorted(CASES), ids=str)
def test_text_matches_golden(name: str) -> None:
    output = render(CASES[name], "text", SecretMask())
    golden = GOLDEN / f"explain-{name}.txt"
    if os.environ.get("KRO_UPDATE_GOLDEN"):
        golden.write_text(output)
    assert output == golden.read_text()


def test_the_root_cause_is_the_first_line() -> None:
    for report in CASES.values():
        first = render(report, "text", SecretMask()).splitlines()[0]
        assert first == f"Root cause: {report.root_cause}"


def test_json_carries_the_same_findings_with_camel_case_keys() -> None:
    data = json.loads(render(WAITING, "json", SecretMask()))
    assert data["explanation"] == "instance"
    assert data["kind"] == "Demo"
    assert data["rootCause"] == WAITING.root_cause
    sink = next(n for n in data["nodes"] if n["id"] == "sink")
    assert sink["status"] == "waiting"
    assert sink["fieldPath"] == "data.token"
    assert sink["missing"]["obj"]["name"] == "d-source"
    assert data["source"]["revisionName"] == "demo-rgd-r00002"
    assert data["deletion"] is None


def test_yaml_carries_the_same_findings() -> None:
    data = yaml.safe_load(render(DELETING, "yaml", SecretMask()))
    assert data["deletion"]["wave"] == 2
    assert data["deletion"]["members"][0]["finalizers"] == ["example.com/hold"]
    rgd = yaml.safe_load(render(BROKEN_RGD, "yaml", SecretMask()))
    assert rgd["explanation"] == "resourcegraphdefinition"
    assert rgd["build"]["resourceId"] == "config"


def test_secret_values_and_tokens_are_masked_in_every_format() -> None:
    mask = SecretMask()
    mask.add({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "data": {"pw": base64.b64encode(b"s3cr3t-value").decode()},
              "stringData": {"token": "plain-text-value"}})
    mask.add({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "not-a-secret"}})
    report = InstanceReport(
        root_cause="value s3cr3t-value, plain-text-value and not-a-secret; "
        "Authorization: Bearer abcdefghijklmnop",
        api_version="kro.run/v1alpha1", kind="Demo", namespace="team", name="d",
        state="ERROR", generation=1, source=None,
    )
    for output in ("text", "json", "yaml"):
        text = render(report, output, mask)
        assert "s3cr3t-value" not in text
        assert "plain-text-value" not in text
        assert "abcdefghijklmnop" not in text
        assert "not-a-secret" in text  # ConfigMaps are not Secrets


def test_very_short_secret_values_are_not_masked() -> None:
    mask = SecretMask()
    mask.add({"apiVersion": "v1", "kind": "Secret", "stringData": {"flag": "1"}})
    assert mask.apply("wave 1") == "wave 1"


def test_multi_line_messages_hang_under_their_first_line() -> None:
    message = "undefined field 'nmae'\n | schema.spec.nmae\n | ...........^"
    report = RGDReport(root_cause="the graph does not compile", name="r", state="Inactive",
                       generation=1, build=BuildFailure(message, "config"),
                       conditions=(ConditionReport("GraphAccepted", "False", "Invalid",
                                                   message),))
    text = render(report, "text", SecretMask())
    assert "  undefined field 'nmae'\n     | schema.spec.nmae\n     | ...........^\n" in text
    assert "\n | " not in text
