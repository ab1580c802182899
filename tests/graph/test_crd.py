"""kro.graph.crd: generated instance CRDs, laid out as upstream's SynthesizeCRD (§1.O, S-28)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kro.graph.crd import (
    CONDITIONS_SCHEMA,
    DEFAULT_PRINTER_COLUMNS,
    crd_name,
    crd_names,
    instance_schema,
    printer_columns,
    synthesize_crd,
)

SPEC = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "replicas": {"type": "integer", "default": 3}},
    "default": {},
}
STATUS = {"type": "object", "properties": {"availableReplicas": {"type": "integer"}}}

CONDITIONS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastTransitionTime": {"type": "string"},
            "observedGeneration": {"type": "integer"},
        },
    },
}


def test_golden_crd_for_a_namespaced_kind_in_the_default_group() -> None:
    crd = synthesize_crd({"apiVersion": "v1alpha1", "kind": "Application"}, SPEC, STATUS)
    assert crd == {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "applications.kro.run"},
        "spec": {
            "group": "kro.run",
            "names": {
                "kind": "Application",
                "listKind": "ApplicationList",
                "plural": "applications",
                "singular": "application",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": SPEC,
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "availableReplicas": {"type": "integer"},
                                        "state": {"type": "string"},
                                        "conditions": CONDITIONS,
                                    },
                                },
                            },
                        }
                    },
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {
                            "name": "State",
                            "type": "string",
                            "description": "The state of a ResourceGraphDefinition instance",
                            "jsonPath": ".status.state",
                        },
                        {
                            "name": "Ready",
                            "type": "string",
                            "description": "Whether a ResourceGraphDefinition instance is ready",
                            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                        },
                        {
                            "name": "Age",
                            "type": "date",
                            "description": "Age of the resource",
                            "jsonPath": ".metadata.creationTimestamp",
                        },
                    ],
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("kind", "group", "name"),
    [
        ("Application", "kro.run", "applications.kro.run"),
        ("Policy", "platform.example.com", "policies.platform.example.com"),
        ("NginxApp", "", "nginxapps.kro.run"),
        ("Person", "x.io", "people.x.io"),
    ],
    ids=["default-group", "y-to-ies", "empty-group", "irregular"],
)
def test_crd_name_is_plural_dot_group(kind: str, group: str, name: str) -> None:
    assert crd_name(kind, group) == name
    rgd_schema = {"apiVersion": "v1", "kind": kind, "group": group}
    crd = synthesize_crd(rgd_schema, SPEC)
    assert crd["metadata"]["name"] == name
    assert crd["spec"]["group"] == (group or "kro.run")


def test_names_are_derived_from_the_kind() -> None:
    assert crd_names("NetworkPolicy") == {
        "kind": "NetworkPolicy",
        "listKind": "NetworkPolicyList",
        "plural": "networkpolicies",
        "singular": "networkpolicy",
    }


def test_scope_short_names_and_categories_are_copied() -> None:
    rgd_schema = {
        "apiVersion": "v1",
        "kind": "Tenant",
        "scope": "Cluster",
        "shortNames": ["tn"],
        "categories": ["platform", "all"],
    }
    spec = synthesize_crd(rgd_schema, SPEC)["spec"]
    assert spec["scope"] == "Cluster"
    assert spec["names"]["shortNames"] == ["tn"]
    assert spec["names"]["categories"] == ["platform", "all"]


def test_empty_short_names_and_categories_are_omitted() -> None:
    rgd_schema: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Tenant",
        "shortNames": [],
        "categories": None,
    }
    names = synthesize_crd(rgd_schema, SPEC)["spec"]["names"]
    assert "shortNames" not in names
    assert "categories" not in names


def test_custom_printer_columns_replace_the_defaults() -> None:
    custom = [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 0},
        {
            "name": "Image",
            "type": "string",
            "jsonPath": ".spec.image",
            "priority": 1,
            "description": "",
            "format": "byte",
        },
    ]
    rgd_schema = {"apiVersion": "v1", "kind": "App", "additionalPrinterColumns": custom}
    columns = synthesize_crd(rgd_schema, SPEC)["spec"]["versions"][0]["additionalPrinterColumns"]
    assert columns == [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {
            "name": "Image",
            "type": "string",
            "format": "byte",
            "priority": 1,
            "jsonPath": ".spec.image",
        },
    ]
    assert printer_columns([]) == [dict(c) for c in DEFAULT_PRINTER_COLUMNS]


def test_author_state_field_is_kept_and_conditions_are_added() -> None:
    status = {"type": "object", "properties": {"state": {"type": "integer"}}}
    schema = instance_schema(SPEC, status)
    properties = schema["properties"]["status"]["properties"]
    assert properties["state"] == {"type": "integer"}
    assert properties["conditions"] == CONDITIONS_SCHEMA


def test_missing_status_schema_gets_only_the_defaults() -> None:
    status = instance_schema(SPEC, None)["properties"]["status"]
    assert status == {
        "type": "object",
        "properties": {"state": {"type": "string"}, "conditions": CONDITIONS},
    }


def test_spec_is_never_required_and_metadata_is_opaque() -> None:
    schema = instance_schema(SPEC, STATUS)
    assert "required" not in schema
    assert schema["properties"]["metadata"] == {"type": "object"}


def test_crd_metadata_merges_author_and_kro_labels_with_kro_winning() -> None:
    rgd_schema: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "App",
        "metadata": {
            "labels": {"team": "web", "kro.run/owned": "false"},
            "annotations": {"note": "x"},
        },
    }
    metadata = synthesize_crd(
        rgd_schema,
        SPEC,
        labels={"kro.run/owned": "true", "kro.run/resource-graph-definition-name": "app"},
        annotations={"kro.run/cli-version": "dev"},
    )["metadata"]
    assert metadata["labels"] == {
        "team": "web",
        "kro.run/owned": "true",
        "kro.run/resource-graph-definition-name": "app",
    }
    assert metadata["annotations"] == {"note": "x", "kro.run/cli-version": "dev"}


def test_inputs_are_not_mutated_and_outputs_are_not_shared() -> None:
    spec, status = copy.deepcopy(SPEC), copy.deepcopy(STATUS)
    crd = synthesize_crd({"apiVersion": "v1", "kind": "App"}, spec, status)
    assert spec == SPEC
    assert status == STATUS
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"][
        "conditions"
    ]["items"]["properties"]["type"]["type"] = "changed"
    assert CONDITIONS_SCHEMA == CONDITIONS
