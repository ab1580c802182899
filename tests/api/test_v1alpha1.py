"""kro.api.v1alpha1: RGD manifests parse like admission accepts them, and fail like it rejects."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.api.v1alpha1 import (
    InvalidObjectError,
    ResourceGraphDefinition,
    parse_resource_graph_definition,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example_rgds() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == "ResourceGraphDefinition":
                found.append((str(path.relative_to(EXAMPLES)), document))
    return found


EXAMPLE_RGDS = _example_rgds()


def base_rgd() -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "web.apps"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "WebApp", "spec": {"name": "string"}},
            "resources": [
                {
                    "id": "deployment",
                    "template": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}},
                },
                {
                    "id": "config",
                    "externalRef": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "cfg", "namespace": "ns"},
                    },
                },
            ],
        },
    }


@pytest.mark.skipif(not EXAMPLE_RGDS, reason="shared examples not present")
@pytest.mark.parametrize(("path", "document"), EXAMPLE_RGDS, ids=[p for p, _ in EXAMPLE_RGDS])
def test_every_shared_example_parses(path: str, document: dict[str, Any]) -> None:
    rgd = parse_resource_graph_definition(document)
    assert rgd.spec.schema_.kind == document["spec"]["schema"]["kind"]
    wire = rgd.to_dict()
    assert wire["spec"]["schema"]["spec"] == document["spec"]["schema"].get("spec")
    assert len(wire["spec"].get("resources", [])) == len(document["spec"].get("resources") or [])


def test_example_count_covers_the_shared_set() -> None:
    if not EXAMPLES.exists():
        pytest.skip("shared examples not present")
    assert len(EXAMPLE_RGDS) >= 6


def test_defaults_are_applied_like_the_crd() -> None:
    rgd = parse_resource_graph_definition(base_rgd())
    assert rgd.spec.schema_.group == "kro.run"
    assert rgd.spec.schema_.scope == "Namespaced"
    assert rgd.to_dict()["spec"]["schema"]["group"] == "kro.run"


def test_explicit_empty_group_still_means_kro_run() -> None:
    doc = base_rgd()
    doc["spec"]["schema"]["group"] = ""
    schema = parse_resource_graph_definition(doc).spec.schema_
    assert schema.group == ""
    assert schema.effective_group == "kro.run"


def test_unknown_fields_are_pruned_like_the_apiserver() -> None:
    doc = base_rgd()
    doc["spec"]["schema"]["validation"] = [{"expression": "true", "message": "x"}]
    doc["spec"]["bogus"] = 1
    wire = parse_resource_graph_definition(doc).to_dict()
    assert "validation" not in wire["spec"]["schema"]
    assert "bogus" not in wire["spec"]


def test_wire_form_round_trips() -> None:
    doc = base_rgd()
    doc["spec"]["resources"][0]["readyWhen"] = ["${deployment.status.ready}"]
    doc["spec"]["resources"][0]["forEach"] = [{"region": "${schema.spec.regions}"}]
    doc["spec"]["schema"]["additionalPrinterColumns"] = [
        {"name": "R", "type": "integer", "jsonPath": ".spec.r", "priority": 1}
    ]
    wire = parse_resource_graph_definition(doc).to_dict()
    again = parse_resource_graph_definition(wire).to_dict()
    assert wire == again
    assert wire["spec"]["resources"][0]["forEach"] == [{"region": "${schema.spec.regions}"}]
    assert wire["spec"]["schema"]["additionalPrinterColumns"][0]["jsonPath"] == ".spec.r"


def test_resources_may_be_empty_or_absent() -> None:
    doc = base_rgd()
    doc["spec"]["resources"] = []
    assert parse_resource_graph_definition(doc).spec.resources == []
    del doc["spec"]["resources"]
    assert parse_resource_graph_definition(doc).spec.resources is None


def test_status_parses() -> None:
    doc = base_rgd()
    doc["status"] = {
        "state": "Active",
        "topologicalOrder": ["deployment"],
        "lastIssuedRevision": 3,
        "resources": [{"id": "service", "dependencies": [{"id": "deployment"}]}],
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Ready", "observedGeneration": 2}
        ],
    }
    rgd = parse_resource_graph_definition(doc)
    assert rgd.status is not None
    assert rgd.status.last_issued_revision == 3
    assert rgd.status.resources is not None
    assert rgd.status.resources[0].dependencies is not None


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    target: Any = doc
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    last = parts[-1]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value


_DELETE = object()

INVALID = [
    ("kind-lowercase", "spec.schema.kind", "webApp", "spec.schema.kind", "should match"),
    ("kind-too-long", "spec.schema.kind", "A" * 64, "spec.schema.kind", "should match"),
    ("kind-missing", "spec.schema.kind", _DELETE, "spec.schema.kind", "Field required"),
    (
        "api-version-with-group",
        "spec.schema.apiVersion",
        "kro.run/v1",
        "spec.schema.apiVersion",
        "should match",
    ),
    (
        "api-version-v1gamma",
        "spec.schema.apiVersion",
        "v1gamma1",
        "spec.schema.apiVersion",
        "should match",
    ),
    ("scope-enum", "spec.schema.scope", "Global", "spec.schema.scope", "'Namespaced' or 'Cluster'"),
    (
        "short-name-pattern",
        "spec.schema.shortNames",
        ["Web"],
        "spec.schema.shortNames[0]",
        "should match",
    ),
    (
        "short-name-too-long",
        "spec.schema.shortNames",
        ["a" * 64],
        "spec.schema.shortNames[0]",
        "at most 63",
    ),
    (
        "short-names-duplicate",
        "spec.schema.shortNames",
        ["wa", "wa"],
        "spec.schema.shortNames",
        'duplicate short name "wa"',
    ),
    (
        "short-names-too-many",
        "spec.schema.shortNames",
        [f"s{i}" for i in range(33)],
        "spec.schema.shortNames",
        "at most 32",
    ),
    (
        "categories-duplicate",
        "spec.schema.categories",
        ["all", "all"],
        "spec.schema.categories",
        'duplicate category "all"',
    ),
    ("schema-missing", "spec.schema", _DELETE, "spec.schema", "Field required"),
    (
        "resource-id-missing",
        "spec.resources.0.id",
        _DELETE,
        "spec.resources[0].id",
        "Field required",
    ),
    (
        "template-and-external-ref",
        "spec.resources.1.template",
        {"kind": "X"},
        "spec.resources[1]",
        "exactly one of template or externalRef must be provided",
    ),
    (
        "neither-template-nor-external-ref",
        "spec.resources.0.template",
        _DELETE,
        "spec.resources[0]",
        "exactly one of template or externalRef must be provided",
    ),
    (
        "external-ref-empty-name",
        "spec.resources.1.externalRef.metadata.name",
        "",
        "spec.resources[1].externalRef.metadata.name",
        "at least 1 character",
    ),
    (
        "external-ref-kind-missing",
        "spec.resources.1.externalRef.kind",
        _DELETE,
        "spec.resources[1].externalRef.kind",
        "Field required",
    ),
    (
        "for-each-two-keys",
        "spec.resources.0.forEach",
        [{"a": "${x}", "b": "${y}"}],
        "spec.resources[0].forEach[0]",
        "at most 1 item",
    ),
    (
        "for-each-empty-entry",
        "spec.resources.0.forEach",
        [{}],
        "spec.resources[0].forEach[0]",
        "at least 1 item",
    ),
    (
        "ready-when-not-strings",
        "spec.resources.0.readyWhen",
        [{"x": 1}],
        "spec.resources[0].readyWhen[0]",
        "valid string",
    ),
    ("rgd-name-uppercase", "metadata.name", "WebApp", "metadata.name", "should match"),
    ("wrong-api-version", "apiVersion", "kro.run/v1", "apiVersion", "kro.run/v1alpha1"),
    (
        "column-without-json-path",
        "spec.schema.additionalPrinterColumns",
        [{"name": "x", "type": "string"}],
        "spec.schema.additionalPrinterColumns[0].jsonPath",
        "Field required",
    ),
]


@pytest.mark.parametrize(
    ("path", "value", "cause_path", "cause_message"),
    [case[1:] for case in INVALID],
    ids=[case[0] for case in INVALID],
)
def test_invalid_rgds_are_rejected_with_the_field_and_reason(
    path: str, value: Any, cause_path: str, cause_message: str
) -> None:
    doc = copy.deepcopy(base_rgd())
    _set(doc, path, value)
    with pytest.raises(InvalidObjectError) as caught:
        parse_resource_graph_definition(doc)
    causes = dict(caught.value.causes)
    assert cause_path in causes, caught.value.causes
    assert cause_message in causes[cause_path]
    assert str(caught.value).startswith(f'ResourceGraphDefinition "{doc["metadata"]["name"]}"')


def test_pattern_errors_quote_the_value_and_the_pattern() -> None:
    doc = base_rgd()
    doc["spec"]["schema"]["kind"] = "webApp"
    with pytest.raises(InvalidObjectError) as caught:
        parse_resource_graph_definition(doc)
    assert caught.value.causes == [
        ("spec.schema.kind", "Invalid value: \"webApp\": should match '^[A-Z][a-zA-Z0-9]{0,62}$'")
    ]


@pytest.mark.parametrize(
    "selector",
    [
        "${schema.spec.selector}",
        {"matchLabels": {"tier": "${schema.spec.tier}"}},
        {"matchLabel": {"tier": "db"}},
    ],
    ids=["expression", "literal", "misspelled"],
)
def test_external_ref_selector_is_schemaless_at_admission(selector: Any) -> None:
    """V-12: admission takes any selector (and name with selector); the graph build judges."""
    rgd = base_rgd()
    rgd["spec"]["resources"][1]["externalRef"]["metadata"] = {"selector": selector}
    parsed = parse_resource_graph_definition(rgd)
    ref = parsed.spec.resources[1].external_ref
    assert ref is not None
    assert ref.metadata.selector == selector
    rgd["spec"]["resources"][1]["externalRef"]["metadata"]["name"] = "cfg"
    parse_resource_graph_definition(rgd)


def test_models_are_frozen() -> None:
    rgd = ResourceGraphDefinition.model_validate(base_rgd())
    with pytest.raises(ValueError, match="frozen"):
        rgd.spec.schema_.kind = "Other"
