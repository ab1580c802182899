"""Applying a batch: inventory first, force SSA with kro's managers, part-of label, per-resource
ownership conflicts, duplicate detection, and zero writes when nothing changed."""

from __future__ import annotations

from typing import Any

import pytest
from applyset_fakes import (
    CONFIGMAPS,
    NS,
    WEBAPPS,
    WIDGETS,
    configmap,
    desired,
    labelled,
    live,
    seed_parent,
    status_fault,
    widget,
    writes,
)

from kro.api.names import (
    ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES,
    ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
    FIELD_MANAGER_APPLYSET,
    FIELD_MANAGER_APPLYSET_PARENT,
    LABEL_APPLYSET_ID,
    LABEL_APPLYSET_PART_OF,
)
from kro.applyset import (
    Applier,
    ApplierOptions,
    Desired,
    DuplicateResources,
    GroupKind,
    Inventory,
    OwnershipConflict,
    applyset_id,
)
from kro.runtime.client import Client
from kro.runtime.errors import Invalid
from kro.runtime.gvk import GVK, GVR
from kro.testing.fakeapi import FakeApiServer

APP_ID = applyset_id(name="app", namespace=NS, kind="WebApp", group="example.kro.run")


def _managers(obj: dict[str, Any] | None) -> set[str]:
    return {m["manager"] for m in (obj or {})["metadata"].get("managedFields", [])}


async def test_first_apply_writes_inventory_then_children(
    api: FakeApiServer, applier: Applier
) -> None:
    parent = seed_parent(api)
    result = await applier.apply(
        parent,
        WEBAPPS,
        [
            desired(api, configmap("a")),
            desired(api, configmap("b", namespace="other")),
            desired(api, widget("w"), gvr=WIDGETS, namespaced=False),
        ],
    )
    assert not result.has_errors
    assert [r.changed for r in result.resources] == [True, True, True]
    first, *children = writes(api)
    assert first == f"PATCH /apis/example.kro.run/v1alpha1/namespaces/{NS}/webapps/app"
    assert len(children) == 3
    stored = live(api, WEBAPPS, "app", NS)
    assert stored is not None
    assert stored["metadata"]["labels"][LABEL_APPLYSET_ID] == APP_ID
    annotations = stored["metadata"]["annotations"]
    assert annotations[ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS] == (
        "ConfigMap,Widget.widgets.example.com"
    )
    assert annotations[ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES] == "other"
    assert FIELD_MANAGER_APPLYSET_PARENT in _managers(stored)
    assert result.parent_obj["metadata"]["resourceVersion"] != parent["metadata"]["resourceVersion"]
    assert (
        result.parent_obj["metadata"]["resourceVersion"] == (stored["metadata"]["resourceVersion"])
    )


async def test_children_carry_part_of_and_are_owned_by_the_applyset_manager(
    api: FakeApiServer, applier: Applier
) -> None:
    template = configmap("a")
    result = await applier.apply(seed_parent(api), WEBAPPS, [desired(api, template)])
    cm = live(api, CONFIGMAPS, "a", NS)
    assert cm is not None
    assert cm["metadata"]["labels"][LABEL_APPLYSET_PART_OF] == APP_ID
    assert _managers(cm) == {FIELD_MANAGER_APPLYSET}
    assert result.resources[0].obj is not None
    assert result.resources[0].obj["data"] == {"key": "a"}
    assert LABEL_APPLYSET_PART_OF not in template["metadata"]["labels"]  # input not mutated
    assert result.applied_uids == {cm["metadata"]["uid"]}


async def test_second_identical_pass_sends_no_write(api: FakeApiServer, applier: Applier) -> None:
    parent = seed_parent(api)
    first = await applier.apply(parent, WEBAPPS, [desired(api, configmap("a"))])
    before = len(api.requests)
    second = await applier.apply(first.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    assert [r.method for r in api.requests[before:]] == []
    assert second.resources[0].skipped
    assert not second.resources[0].changed
    assert second.parent_obj == first.parent_obj  # as given: the parent was not written
    assert second.applied_uids == first.applied_uids


async def test_drift_by_another_writer_is_reapplied(api: FakeApiServer, applier: Applier) -> None:
    parent = seed_parent(api)
    first = await applier.apply(parent, WEBAPPS, [desired(api, configmap("a"))])
    drifted = live(api, CONFIGMAPS, "a", NS)
    assert drifted is not None
    drifted["data"] = {"key": "edited"}
    api.modify(CONFIGMAPS, drifted, manager="kubectl-edit")
    second = await applier.apply(first.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    assert not second.resources[0].skipped
    assert second.resources[0].changed
    assert live(api, CONFIGMAPS, "a", NS)["data"] == {"key": "a"}  # type: ignore[index]


async def test_a_changed_desired_object_is_reapplied(api: FakeApiServer, applier: Applier) -> None:
    parent = seed_parent(api)
    first = await applier.apply(parent, WEBAPPS, [desired(api, configmap("a"))])
    second = await applier.apply(
        first.parent_obj, WEBAPPS, [desired(api, configmap("a", data={"key": "v2"}))]
    )
    assert second.resources[0].changed
    assert live(api, CONFIGMAPS, "a", NS)["data"] == {"key": "v2"}  # type: ignore[index]


async def test_a_fresh_applier_skips_what_the_live_object_proves_applied(
    api: FakeApiServer, client: Client
) -> None:
    """After a restart the cache is empty; our managedFields entry and the values prove it."""
    parent = seed_parent(api)
    first = await Applier(client, ApplierOptions(tooling="kro/v1")).apply(
        parent, WEBAPPS, [desired(api, configmap("a"))]
    )
    restarted = Applier(client, ApplierOptions(tooling="kro/v1"))
    again = await restarted.apply(first.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    assert again.resources[0].skipped
    assert not again.resources[0].changed
    other = Applier(client, ApplierOptions(tooling="kro/v1"))
    changed = await other.apply(
        first.parent_obj, WEBAPPS, [desired(api, configmap("a", data={"key": "new"}))]
    )
    assert not changed.resources[0].skipped
    assert changed.resources[0].changed


async def test_object_of_another_applyset_is_not_written(
    api: FakeApiServer, applier: Applier
) -> None:
    other = "applyset-someone-else-v1"
    api.seed(CONFIGMAPS, labelled(configmap("taken"), **{LABEL_APPLYSET_PART_OF: other}))
    result = await applier.apply(
        seed_parent(api), WEBAPPS, [desired(api, configmap("taken")), desired(api, configmap("b"))]
    )
    taken, b = result.resources
    assert isinstance(taken.error, OwnershipConflict)
    assert str(taken.error) == (
        f"resource belongs to a different ApplySet: {NS}/taken (v1, Kind=ConfigMap) belongs to "
        f'ApplySet "{other}", cannot reassign to "{APP_ID}"'
    )
    assert taken.obj is None
    assert not taken.changed
    assert b.error is None
    assert b.changed
    assert not any(w.endswith("/configmaps/taken") for w in writes(api))
    assert result.has_errors
    assert [r for r in result.resources if r.error is not None] == [taken]


async def test_unlabelled_existing_object_is_adopted(api: FakeApiServer, applier: Applier) -> None:
    api.seed(CONFIGMAPS, configmap("mine", data={"key": "old"}))
    result = await applier.apply(seed_parent(api), WEBAPPS, [desired(api, configmap("mine"))])
    assert result.resources[0].error is None
    assert result.resources[0].changed
    cm = live(api, CONFIGMAPS, "mine", NS)
    assert cm is not None
    assert cm["metadata"]["labels"][LABEL_APPLYSET_PART_OF] == APP_ID
    assert cm["data"] == {"key": "mine"}


async def test_duplicate_objects_fail_the_batch_before_any_write(
    api: FakeApiServer, applier: Applier
) -> None:
    parent = seed_parent(api)
    batch = [
        desired(api, configmap("same"), resource_id="a"),
        desired(api, configmap("other"), resource_id="x"),
        desired(api, configmap("same"), resource_id="b"),
    ]
    with pytest.raises(DuplicateResources) as caught:
        await applier.apply(parent, WEBAPPS, batch)
    assert (
        str(caught.value)
        == "found resources with conflicts: resourceID: b conflicts with resourceID: a"
    )
    assert caught.value.conflicts == (("b", "a"),)
    assert writes(api) == []


async def test_same_name_in_another_namespace_or_kind_is_no_duplicate(
    api: FakeApiServer, applier: Applier
) -> None:
    batch = [
        desired(api, configmap("same"), resource_id="a"),
        desired(api, configmap("same", namespace="other"), resource_id="b"),
        desired(api, widget("same"), resource_id="c", gvr=WIDGETS, namespaced=False),
    ]
    result = await applier.apply(seed_parent(api), WEBAPPS, batch)
    assert not result.has_errors


async def test_projection_keeps_kinds_recorded_earlier(
    api: FakeApiServer, applier: Applier
) -> None:
    parent = seed_parent(api)
    first = await applier.apply(
        parent, WEBAPPS, [desired(api, widget("w"), gvr=WIDGETS, namespaced=False)]
    )
    second = await applier.apply(first.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    widget_gk = GroupKind("widgets.example.com", "Widget")
    assert second.inventory.group_kinds == {widget_gk, GroupKind("", "ConfigMap")}
    assert second.batch_inventory == Inventory(APP_ID, frozenset({GroupKind("", "ConfigMap")}))
    stored = live(api, WEBAPPS, "app", NS)
    assert stored is not None
    assert stored["metadata"]["annotations"][ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS] == (
        "ConfigMap,Widget.widgets.example.com"
    )


async def test_api_errors_are_per_resource(api: FakeApiServer, applier: Applier) -> None:
    api.inject(
        status_fault("PATCH", "/configmaps/bad", 422, "Invalid", 'ConfigMap "bad" is invalid')
    )
    result = await applier.apply(
        seed_parent(api), WEBAPPS, [desired(api, configmap("bad")), desired(api, configmap("ok"))]
    )
    bad, ok = result.resources
    assert isinstance(bad.error, Invalid)
    assert ok.error is None
    assert live(api, CONFIGMAPS, "ok", NS) is not None
    assert [r.resource_id for r in result.resources] == ["bad", "ok"]


def test_desired_validates_its_identity() -> None:
    gvr = GVR("", "v1", "configmaps")
    with pytest.raises(ValueError, match=r"no metadata\.namespace"):
        Desired(
            "a", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, gvr, True
        )
    with pytest.raises(ValueError, match=r"no metadata\.name"):
        Desired("a", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, gvr, False)
    with pytest.raises(ValueError, match="no apiVersion/kind"):
        Desired("a", {"metadata": {"name": "a"}}, gvr, False)
    cluster = Desired(
        "w",
        {"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w", "namespace": "n"}},
        GVR("x", "v1", "ws"),
        False,
    )
    assert cluster.namespace == ""
    assert cluster.gvk == GVK("x", "v1", "W")
