"""The parent's ApplySet metadata: rendering, projection and the D-02 validation rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kro.api.names import (
    ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES,
    ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
    ANNOTATION_APPLYSET_INVENTORY_HASH,
    ANNOTATION_APPLYSET_TOOLING,
    LABEL_APPLYSET_ID,
)
from kro.applyset import (
    GroupKind,
    InvalidInventory,
    Inventory,
    Parent,
    empty_inventory_metadata,
    has_inventory_metadata,
    is_rendered,
    project,
    read_inventory,
    render,
    tooling_for,
)
from kro.runtime.gvk import GVK, GVR

PARENT = Parent(GVR("kro.run", "v1alpha1", "apps"), GVK("kro.run", "v1alpha1", "App"), "a", "ns")
TOOLING = tooling_for("v0.9.3")
CM = GroupKind("", "ConfigMap")
DEPLOY = GroupKind("apps", "Deployment")


def _parent_obj(metadata: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": "a", "namespace": "ns", **copy.deepcopy(metadata)}
    return {"apiVersion": "kro.run/v1alpha1", "kind": "App", "metadata": meta}


def test_render_writes_id_label_and_sorted_annotations() -> None:
    inv = Inventory(PARENT.id, frozenset({DEPLOY, CM}), frozenset({"z", "b"}))
    assert render(inv, TOOLING) == {
        "labels": {LABEL_APPLYSET_ID: PARENT.id},
        "annotations": {
            ANNOTATION_APPLYSET_TOOLING: "kro/v0.9.3",
            ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS: "ConfigMap,Deployment.apps",
            ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES: "b,z",
            ANNOTATION_APPLYSET_INVENTORY_HASH: inv.hash,
        },
    }


def test_empty_inventory_metadata_has_empty_lists_and_a_hash() -> None:
    meta = empty_inventory_metadata(PARENT, TOOLING)
    assert meta["labels"] == {LABEL_APPLYSET_ID: PARENT.id}
    assert meta["annotations"][ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS] == ""
    assert meta["annotations"][ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES] == ""
    assert meta["annotations"][ANNOTATION_APPLYSET_INVENTORY_HASH].startswith("sha256:")
    assert read_inventory(_parent_obj(meta), PARENT) == Inventory(PARENT.id)


def test_rendered_inventory_reads_back() -> None:
    inv = Inventory(PARENT.id, frozenset({DEPLOY, CM}), frozenset({"other"}))
    obj = _parent_obj(render(inv, TOOLING))
    assert read_inventory(obj, PARENT) == inv
    assert is_rendered(obj, inv, TOOLING)
    assert not is_rendered(obj, Inventory(PARENT.id, frozenset({CM})), TOOLING)
    assert not is_rendered(obj, inv, tooling_for("v0.10.0"))


def test_of_members_leaves_out_the_parents_namespace_and_cluster_scope() -> None:
    inv = Inventory.of(PARENT, [(CM, "ns"), (CM, "other"), (GroupKind("", "Namespace"), "")])
    assert inv.group_kinds == {CM, GroupKind("", "Namespace")}
    assert inv.additional_namespaces == {"other"}
    assert inv.namespaces(PARENT) == ["ns", "other"]


def test_project_is_the_union_of_recorded_and_batch() -> None:
    recorded = Inventory(PARENT.id, frozenset({DEPLOY}), frozenset({"old"}))
    batch = Inventory(PARENT.id, frozenset({CM}), frozenset({"new"}))
    assert project(recorded, batch) == Inventory(
        PARENT.id, frozenset({DEPLOY, CM}), frozenset({"old", "new"})
    )
    assert project(None, batch) == batch


def test_union_refuses_another_applyset() -> None:
    with pytest.raises(ValueError, match="cannot merge"):
        Inventory(PARENT.id).union(Inventory("applyset-other-v1"))


def test_no_metadata_reads_as_none() -> None:
    obj = _parent_obj({"labels": {"x": "y"}})
    assert not has_inventory_metadata(obj)
    assert read_inventory(obj, PARENT) is None


def test_hash_is_optional_for_metadata_written_by_other_tools() -> None:
    meta = render(Inventory(PARENT.id, frozenset({CM})), TOOLING)
    del meta["annotations"][ANNOTATION_APPLYSET_INVENTORY_HASH]
    assert read_inventory(_parent_obj(meta), PARENT) == Inventory(PARENT.id, frozenset({CM}))


def _broken(key: str, value: str | None, *, label: bool = False) -> dict[str, Any]:
    meta = render(Inventory(PARENT.id, frozenset({CM}), frozenset({"other"})), TOOLING)
    section = meta["labels"] if label else meta["annotations"]
    if value is None:
        del section[key]
    else:
        section[key] = value
    return _parent_obj(meta)


@pytest.mark.parametrize(
    ("obj", "key", "reason"),
    [
        (_broken(LABEL_APPLYSET_ID, None, label=True), LABEL_APPLYSET_ID, "missing label"),
        (_broken(LABEL_APPLYSET_ID, "applyset-x-v1", label=True), LABEL_APPLYSET_ID, "expected"),
        (_broken(ANNOTATION_APPLYSET_TOOLING, None), ANNOTATION_APPLYSET_TOOLING, "missing"),
        (
            _broken(ANNOTATION_APPLYSET_TOOLING, "kubectl/v1.35"),
            ANNOTATION_APPLYSET_TOOLING,
            'expected a "kro/" prefix',
        ),
        (
            _broken(ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS, None),
            ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
            "missing annotation",
        ),
        (
            _broken(ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS, "ConfigMap,,Secret"),
            ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
            "not parsable",
        ),
        (
            _broken(ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS, ".apps"),
            ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
            "not parsable",
        ),
        (
            _broken(ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES, None),
            ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES,
            "missing annotation",
        ),
        (
            _broken(ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES, "a, b"),
            ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES,
            "not parsable",
        ),
        (
            _broken(ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS, "ConfigMap,Secret"),
            ANNOTATION_APPLYSET_INVENTORY_HASH,
            "does not match",
        ),
        (
            _parent_obj({"annotations": {ANNOTATION_APPLYSET_TOOLING: "kro/v1"}}),
            LABEL_APPLYSET_ID,
            "missing label",
        ),
    ],
    ids=[
        "id-missing",
        "id-mismatch",
        "tooling-missing",
        "tooling-foreign",
        "gks-missing",
        "gks-empty-entry",
        "gks-empty-kind",
        "namespaces-missing",
        "namespaces-whitespace",
        "hash-mismatch",
        "partial-metadata",
    ],
)
def test_invalid_metadata_is_refused(obj: dict[str, Any], key: str, reason: str) -> None:
    with pytest.raises(InvalidInventory, match=reason) as caught:
        read_inventory(obj, PARENT)
    assert caught.value.key == key


def test_invalid_inventory_can_be_reported_in_context() -> None:
    err = InvalidInventory(key=LABEL_APPLYSET_ID, reason="missing label x")
    assert str(err) == "missing label x"
    within = InvalidInventory(key=err.key, reason=err.reason, context="validate deletion inventory")
    assert str(within) == "validate deletion inventory: missing label x"
