"""kro.api.crds: kro's own CRD manifests, and their agreement with the pydantic models."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kro.api import names, v1alpha1
from kro.api.crds import (
    CRD_FILES,
    crd_by_name,
    crd_manifest_text,
    graph_revision_crd,
    kro_crds,
    resource_graph_definition_crd,
)


def root_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def rgd_schema_props() -> dict[str, Any]:
    props: dict[str, Any] = root_schema(resource_graph_definition_crd())["properties"]["spec"][
        "properties"
    ]["schema"]["properties"]
    return props


def resource_item() -> dict[str, Any]:
    item: dict[str, Any] = root_schema(resource_graph_definition_crd())["properties"]["spec"][
        "properties"
    ]["resources"]["items"]
    return item


def walk(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from walk(schema[key], f"{path}[{key}]")


def test_names_match_the_names_module() -> None:
    rgd, gr, graph = kro_crds()
    assert graph["metadata"]["name"] == "graphs.kro.run"  # tests/api/test_graph_api.py
    assert rgd["metadata"]["name"] == names.RGD_CRD_NAME
    assert rgd["spec"]["names"] == {
        "kind": names.RGD_KIND,
        "listKind": names.RGD_LIST_KIND,
        "plural": names.RGD_PLURAL,
        "singular": names.RGD_SINGULAR,
        "shortNames": [names.RGD_SHORT_NAME],
    }
    assert gr["metadata"]["name"] == names.GRAPH_REVISION_CRD_NAME
    assert gr["spec"]["group"] == names.INTERNAL_DOMAIN
    assert gr["spec"]["names"]["shortNames"] == [names.GRAPH_REVISION_SHORT_NAME]
    for crd in (rgd, gr):
        assert crd["spec"]["scope"] == "Cluster"
        (version,) = crd["spec"]["versions"]
        assert version["name"] == names.V1ALPHA1
        assert version["served"] is True
        assert version["storage"] is True
        assert version["subresources"] == {"status": {}}


def test_rgd_printer_columns_follow_a01() -> None:
    columns = resource_graph_definition_crd()["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(c["name"], c["jsonPath"], c.get("priority", 0)) for c in columns] == [
        ("APIVERSION", ".spec.schema.apiVersion", 0),
        ("KIND", ".spec.schema.kind", 0),
        ("STATE", ".status.state", 0),
        ("READY", '.status.conditions[?(@.type=="Ready")].status', 0),
        ("TOPOLOGICALORDER", ".status.topologicalOrder", 1),
        ("AGE", ".metadata.creationTimestamp", 0),
    ]


def test_graph_revision_columns_and_selectable_field_follow_b01() -> None:
    version = graph_revision_crd()["spec"]["versions"][0]
    assert version["selectableFields"] == [
        {"jsonPath": "." + names.GRAPH_REVISION_SNAPSHOT_NAME_FIELD}
    ]
    assert [(c["name"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]] == [
        ("RGD", 1),
        ("REVISION", 0),
        ("HASH", 1),
        ("READY", 0),
        ("AGE", 0),
    ]
    hash_column = version["additionalPrinterColumns"][2]
    assert hash_column["jsonPath"] == ".metadata.labels.kro\\.run/graph-revision-hash"


def test_admission_patterns_equal_the_model_patterns() -> None:
    props = rgd_schema_props()
    assert props["kind"]["pattern"] == v1alpha1.KIND_PATTERN
    assert props["apiVersion"]["pattern"] == v1alpha1.API_VERSION_PATTERN
    for field in ("shortNames", "categories"):
        assert props[field]["items"]["pattern"] == v1alpha1.SHORT_NAME_PATTERN
        assert props[field]["items"]["maxLength"] == v1alpha1.SHORT_NAME_MAX_LENGTH
        assert props[field]["maxItems"] == v1alpha1.SHORT_NAMES_MAX_ITEMS
        assert props[field]["x-kubernetes-list-type"] == "set"


@pytest.mark.parametrize("field", ["kind", "apiVersion", "group", "scope"])
def test_schema_identity_fields_are_immutable(field: str) -> None:
    assert rgd_schema_props()[field]["x-kubernetes-validations"] == [
        {"message": f"{field} is immutable", "rule": "self == oldSelf"}
    ]


def test_defaults_and_enum_follow_a05_a06() -> None:
    props = rgd_schema_props()
    assert props["group"]["default"] == names.KRO_DOMAIN
    assert props["scope"]["default"] == names.SCOPE_NAMESPACED
    assert props["scope"]["enum"] == [names.SCOPE_NAMESPACED, names.SCOPE_CLUSTER]


def test_exactly_one_rules_carry_the_model_messages() -> None:
    item = resource_item()
    assert item["x-kubernetes-validations"] == [
        {
            "message": v1alpha1.MSG_TEMPLATE_XOR_EXTERNAL_REF,
            "rule": "has(self.template) != has(self.externalRef)",
        },
        {
            "message": names.MSG_DELETION_POLICY_TEMPLATE_ONLY,
            "rule": "!has(self.deletionPolicy) || has(self.template)",
        },
    ]
    metadata = item["properties"]["externalRef"]["properties"]["metadata"]
    # V-12: "exactly one of name or selector" moved from admission into the graph build.
    assert "x-kubernetes-validations" not in metadata
    assert metadata["properties"]["name"]["minLength"] == 1


def test_deletion_policy_is_delete_or_orphaned_only() -> None:
    """V-30/OQ-1: exactly the two values of v0.10; earlier drafts' `Detach`/`Orphan` are not
    accepted, and the message admission gives for an externalRef is V-31's."""
    policy = resource_item()["properties"]["deletionPolicy"]
    assert policy["type"] == "string"
    assert policy["enum"] == ["Delete", "Orphaned"]
    assert "default" not in policy  # omitted means Delete; no default is written into RGDs
    assert names.MSG_DELETION_POLICY_TEMPLATE_ONLY == (
        "deletionPolicy is only supported on template resources"
    )


def test_external_ref_selector_is_schemaless() -> None:
    """V-12: a literal selector or one `${...}` expression; the build checks the shape."""
    metadata = resource_item()["properties"]["externalRef"]["properties"]["metadata"]
    selector = metadata["properties"]["selector"]
    assert selector["x-kubernetes-preserve-unknown-fields"] is True
    assert "type" not in selector
    assert "properties" not in selector


def test_for_each_items_hold_exactly_one_iterator() -> None:
    for_each = resource_item()["properties"]["forEach"]["items"]
    assert (for_each["minProperties"], for_each["maxProperties"]) == (1, 1)
    assert for_each["additionalProperties"] == {"type": "string"}


def test_free_form_fields_preserve_unknown_fields() -> None:
    props = rgd_schema_props()
    for field in ("spec", "types", "status"):
        assert props[field]["x-kubernetes-preserve-unknown-fields"] is True
    assert resource_item()["properties"]["template"]["x-kubernetes-preserve-unknown-fields"]


def test_graph_revision_spec_is_immutable_and_snapshots_the_rgd_spec() -> None:
    spec = root_schema(graph_revision_crd())["properties"]["spec"]
    assert spec["x-kubernetes-validations"] == [
        {"message": "spec is immutable", "rule": "self == oldSelf"}
    ]
    assert spec["properties"]["revision"]["minimum"] == 1
    snapshot_spec = dict(spec["properties"]["snapshot"]["properties"]["spec"])
    rgd_spec = dict(root_schema(resource_graph_definition_crd())["properties"]["spec"])
    snapshot_spec.pop("description")
    rgd_spec.pop("description")
    assert snapshot_spec == rgd_spec


def test_status_condition_schema_matches_a23() -> None:
    for crd in kro_crds():
        item = root_schema(crd)["properties"]["status"]["properties"]["conditions"]["items"]
        assert set(item["properties"]) == {
            "type",
            "status",
            "reason",
            "message",
            "lastTransitionTime",
            "observedGeneration",
        }
        assert item["properties"]["observedGeneration"]["minimum"] == 0
        assert sorted(item["required"]) == ["status", "type"]


def test_status_conditions_are_a_list_map_keyed_on_type() -> None:
    """V-05: server-side apply merges conditions by `type`; two of one type are refused."""
    for crd in kro_crds():
        conditions = root_schema(crd)["properties"]["status"]["properties"]["conditions"]
        assert conditions["x-kubernetes-list-type"] == "map"
        assert conditions["x-kubernetes-list-map-keys"] == ["type"]
        assert "type" in conditions["items"]["required"]


@pytest.mark.parametrize("crd", kro_crds(), ids=lambda c: c["metadata"]["name"])
def test_schemas_are_structural(crd: dict[str, Any]) -> None:
    """Every node states its type (or is free-form), as the apiserver requires."""
    for path, node in walk(root_schema(crd)):
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), path
        if node.get("type") == "object" and "properties" in node:
            for required in node.get("required", []):
                assert required in node["properties"], f"{path}: required {required} unknown"


def test_every_call_returns_an_independent_copy() -> None:
    first = resource_graph_definition_crd()
    first["spec"]["group"] = "changed"
    assert resource_graph_definition_crd()["spec"]["group"] == "kro.run"
    assert crd_by_name(names.GRAPH_REVISION_CRD_NAME) == graph_revision_crd()
    with pytest.raises(KeyError):
        crd_by_name("other.kro.run")


def test_manifest_text_is_the_shipped_yaml() -> None:
    for file_name in CRD_FILES:
        assert "kind: CustomResourceDefinition" in crd_manifest_text(file_name)
    with pytest.raises(KeyError):
        crd_manifest_text("other.yaml")
