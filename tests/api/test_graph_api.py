"""kro.api.graph: the Graph CRD's shape and the Graph API's names, against upstream kro v0.10.

Expected values are upstream's documented ones (the CRD shape, the field-manager and node-id
label rules); hashes are recomputed here with hashlib from the documented rule, not copied from
kro's output.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from kro.api import graph, names
from kro.api.crds import CRD_FILES, GRAPH_CRD_FILE, crd_by_name, kro_crds


def _version() -> dict[str, Any]:
    (version,) = graph.graph_crd()["spec"]["versions"]
    assert isinstance(version, dict)
    return version


def _root() -> dict[str, Any]:
    root: dict[str, Any] = _version()["schema"]["openAPIV3Schema"]
    return root


def _node() -> dict[str, Any]:
    node: dict[str, Any] = _root()["properties"]["spec"]["properties"]["nodes"]["items"]
    return node


def test_crd_names_scope_and_version() -> None:
    crd = graph.graph_crd()
    assert crd["metadata"]["name"] == "graphs.kro.run" == graph.GRAPH_CRD_NAME
    assert crd["spec"]["group"] == "kro.run" == graph.GRAPH_GROUP
    assert crd["spec"]["names"] == {
        "kind": "Graph",
        "listKind": "GraphList",
        "plural": "graphs",
        "singular": "graph",
    }
    assert crd["spec"]["scope"] == "Namespaced"
    version = _version()
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    assert graph.GRAPH_API_VERSION == "kro.run/v1alpha1"
    assert (graph.GRAPH_KIND, graph.GRAPH_PLURAL) == ("Graph", "graphs")


def test_printer_columns_are_ready_and_age() -> None:
    assert _version()["additionalPrinterColumns"] == [
        {"jsonPath": '.status.conditions[?(@.type=="Ready")].status', "name": "READY",
         "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "AGE", "type": "date"},
    ]


def test_spec_and_nodes_are_required_and_nodes_are_a_map_keyed_on_id() -> None:
    root = _root()
    assert root["required"] == ["spec"]
    spec = root["properties"]["spec"]
    assert spec["required"] == ["nodes"]
    nodes = spec["properties"]["nodes"]
    assert nodes["minItems"] == 1
    assert nodes["x-kubernetes-list-type"] == "map"
    assert nodes["x-kubernetes-list-map-keys"] == ["id"]


def test_node_fields_and_the_one_kind_rule() -> None:
    node = _node()
    assert node["required"] == ["id"]
    props = node["properties"]
    assert props["id"] == {
        "description": props["id"]["description"],
        "type": "string",
        "pattern": "^[A-Za-z][A-Za-z0-9]*$",
    }
    assert props["id"]["pattern"] == graph.NODE_ID_PATTERN
    for kind in ("template", "def", "patch", "graph"):
        assert props[kind]["type"] == "object"
        assert props[kind]["x-kubernetes-preserve-unknown-fields"] is True
    assert "watch" not in props  # early CRDs had it; 0.10 does not
    ref = props["ref"]
    assert ref["required"] == ["apiVersion", "kind", "metadata"]
    meta = ref["properties"]["metadata"]["properties"]
    assert meta["name"]["minLength"] == 1
    assert meta["namespace"]["type"] == "string"
    assert "type" not in meta["selector"]  # schemaless: a LabelSelector or one ${...}
    assert meta["selector"]["x-kubernetes-preserve-unknown-fields"] is True
    for modifier in ("includeWhen", "readyWhen"):
        assert props[modifier]["type"] == "array"
        assert props[modifier]["items"] == {"type": "string"}
    for_each = props["forEach"]["items"]
    assert (for_each["minProperties"], for_each["maxProperties"]) == (1, 1)
    assert for_each["additionalProperties"] == {"type": "string"}
    (rule,) = node["x-kubernetes-validations"]
    assert rule["message"] == "exactly one of template, ref, def, graph, patch must be set"
    for kind in ("template", "ref", "def", "graph", "patch"):
        assert f"has(self.{kind})" in rule["rule"]


def test_service_account_name_is_a_dns_subdomain() -> None:
    sa = _root()["properties"]["spec"]["properties"]["serviceAccountName"]
    assert sa["type"] == "string"
    assert sa["maxLength"] == 253
    assert sa["pattern"] == (
        r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    )


def test_status_inventory_ledger_and_identity() -> None:
    status = _root()["properties"]["status"]["properties"]
    conditions = status["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    managed = status["managedResources"]
    assert managed["maxItems"] == 5000 == graph.MANAGED_RESOURCES_CAP
    assert managed["items"]["required"] == ["nodeID", "apiVersion", "kind", "name"]
    assert set(managed["items"]["properties"]) == {
        "nodeID", "apiVersion", "kind", "namespace", "name", "uid",
        "cluster"}  # M-15: kro-py's, the member cluster an object lives in
    contributions = status["contributions"]["items"]
    assert contributions["required"] == ["apiVersion", "kind", "name", "fieldManager"]
    assert set(contributions["properties"]) == {
        "apiVersion", "kind", "namespace", "name", "subresource", "fieldManager",
        "cluster"}
    assert status["appliedServiceAccount"]["type"] == "string"


def test_the_graph_crd_is_one_of_kros_crds() -> None:
    assert GRAPH_CRD_FILE == "kro.run_graphs.yaml"
    assert GRAPH_CRD_FILE in CRD_FILES
    assert graph.graph_crd() in kro_crds()
    assert crd_by_name("graphs.kro.run") == graph.graph_crd()
    first = graph.graph_crd()
    first["spec"]["group"] = "changed"
    assert graph.graph_crd()["spec"]["group"] == "kro.run"


def test_condition_and_reason_names() -> None:
    assert graph.GRAPH_FINALIZER == "kro.run/graph-finalizer"
    assert (graph.CONDITION_ACCEPTED, graph.CONDITION_RESOURCES_CONVERGED,
            graph.CONDITION_READY, graph.CONDITION_WATCHES_HEALTHY) == (
        "Accepted", "ResourcesConverged", "Ready", "WatchesHealthy")
    assert graph.GRAPH_DEPENDENT_CONDITIONS == ("Accepted", "ResourcesConverged")
    reasons = [graph.REASON_COMPILED, graph.REASON_INVALID_GRAPH, graph.REASON_APPLIED,
               graph.REASON_WAITING_FOR_READINESS, graph.REASON_DATA_PENDING,
               graph.REASON_FIELD_MANAGER_CONFLICT, graph.REASON_APPLY_FAILED,
               graph.REASON_PRUNE_FAILED, graph.REASON_RELEASE_FAILED,
               graph.REASON_DELETE_FAILED, graph.REASON_READY]
    assert reasons == ["Compiled", "InvalidGraph", "Applied", "WaitingForReadiness",
                       "DataPending", "FieldManagerConflict", "ApplyFailed", "PruneFailed",
                       "ReleaseFailed", "DeleteFailed", "Ready"]
    assert graph.compiled_message(3) == "compiled 3 nodes"
    assert graph.MESSAGE_APPLIED == "all nodes applied and ready"
    assert graph.FEATURE_GRAPH_KIND == "GraphKind"
    assert names.FEATURE_GATE_DEFAULTS["GraphKind"] is False


def test_metadata_names() -> None:
    assert graph.ANNOTATION_NODE_PATH == "internal.kro.run/node-path"
    assert graph.ANNOTATION_APPLY_ORDER == "internal.kro.run/apply-order"
    assert graph.LABEL_NODE_ID == "kro.run/node-id"
    assert graph.EVENT_NODE_ID_ENCODED == "NodeIDEncoded"


def _hex12(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@pytest.mark.parametrize("uid", ["0b6e1c9e-8a8f-4d0c-9d6e-2f1b5c7a9e31", "x"], ids=str)
def test_template_field_manager_is_one_per_graph(uid: str) -> None:
    manager = graph.template_field_manager(uid)
    assert manager == f"kro-graphengine.tmpl.{_hex12(uid)}"
    assert manager.startswith(graph.FIELD_MANAGER_TEMPLATE_PREFIX)
    assert graph.template_field_manager(uid + "0") != manager


@pytest.mark.parametrize("path", ["patchNode", "backend/statusPatch"], ids=str)
def test_patch_field_manager_names_the_graph_and_the_node(path: str) -> None:
    uid = "5f0c2a8e-1111-4222-8333-944455556666"
    manager = graph.patch_field_manager(uid, path)
    assert manager == f"kro-graphengine.patch.{_hex12(uid)}.{_hex12(uid + '/' + path)}"
    assert manager.startswith(graph.FIELD_MANAGER_PATCH_PREFIX + graph.graph_hash(uid) + ".")
    assert graph.patch_field_manager(uid, path + "x") != manager


def test_node_id_label_is_the_dotted_path_when_it_fits() -> None:
    assert graph.node_id_label_value("deployment") == "deployment"
    assert graph.node_id_label_value("backend/service") == "backend.service"
    assert graph.node_id_label_value(("backend", "service")) == "backend.service"
    fits = "a" * 30 + "/" + "b" * 32  # 63 characters once dotted
    assert graph.node_id_label_value(fits) == "a" * 30 + "." + "b" * 32


def test_node_id_label_is_a_hash_of_the_slash_path_when_too_long() -> None:
    path = "a" * 30 + "/" + "b" * 33  # 64 characters once dotted
    expected = "h-" + hashlib.sha256(path.encode()).hexdigest()[:40]
    assert graph.node_id_label_value(path) == expected
    assert graph.node_id_label_value(path.split("/")) == expected
    assert len(expected) == 42
    assert graph.node_id_label_value("c" * 64) == (
        "h-" + hashlib.sha256(("c" * 64).encode()).hexdigest()[:40])


def test_node_id_encoded_event_names_the_path_the_label_and_the_annotation() -> None:
    """V-61: the Warning Event says which path was hashed, the label value to select on and
    the annotation holding the full path; a path that fits raises no Event."""
    assert graph.node_id_encoded_message("backend/service") is None
    assert graph.node_id_encoded_message("a" * 30 + "/" + "b" * 32) is None
    path = "a" * 30 + "/" + "b" * 33
    message = graph.node_id_encoded_message(path)
    assert message is not None
    label = "h-" + hashlib.sha256(path.encode()).hexdigest()[:40]
    assert f'"{path}"' in message
    assert f"kro.run/node-id={label}" in message
    assert "internal.kro.run/node-path" in message


@pytest.mark.parametrize(
    ("node_id", "problem"),
    [
        ("deployment", None),
        ("db2", None),
        ("Web", None),
        ("2db", 'id "2db" must match ^[A-Za-z][A-Za-z0-9]*$'),
        ("my-node", 'id "my-node" must match ^[A-Za-z][A-Za-z0-9]*$'),
        ("my_node", 'id "my_node" must match ^[A-Za-z][A-Za-z0-9]*$'),
        ("", 'id "" must match ^[A-Za-z][A-Za-z0-9]*$'),
    ],
    ids=repr,
)
def test_node_id_pattern(node_id: str, problem: str | None) -> None:
    assert graph.node_id_problem(node_id) == problem


RESERVED = [
    *("apiVersion", "kind", "metadata", "namespace", "spec", "status", "graph", "graphengine"),
    *("kro", "each", "item", "items", "object", "self", "this", "context", "true", "false"),
    *("null", "in", "as", "break", "const", "continue", "else", "for", "function", "if"),
    *("import", "let", "loop", "package", "return", "var", "void", "while"),
]


@pytest.mark.parametrize("node_id", RESERVED, ids=str)
def test_reserved_ids_are_refused(node_id: str) -> None:
    assert graph.node_id_problem(node_id) == f'id "{node_id}" is reserved'


def test_reserved_lists_are_exactly_upstreams() -> None:
    assert frozenset(RESERVED) == graph.RESERVED_NODE_IDS
    assert frozenset(RESERVED) - {"each"} == graph.RESERVED_ITERATOR_NAMES


def test_identity_names() -> None:
    assert graph.service_account_username("team-a") == "system:serviceaccount:team-a:default"
    assert graph.service_account_username("team-a", "deployer") == (
        "system:serviceaccount:team-a:deployer")
    username = "system:serviceaccount:kro-system:kro"
    assert graph.own_identity_refusal(username) == (
        "refusing to apply: Graph would impersonate the kro controller's own ServiceAccount "
        '("system:serviceaccount:kro-system:kro"); choose a different serviceAccountName or '
        "move the Graph out of the controller's namespace"
    )
