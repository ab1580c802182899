"""Owner references are written as controllerutil writes them, and owned objects map back to the
owners that are primaries of the controller (and only to those)."""

from __future__ import annotations

from typing import Any

import pytest

from kro.runtime.gvk import GVK, GVR
from kro.runtime.handlers import EnqueueForObject, EnqueueForOwner, EnqueueFromMap
from kro.runtime.owners import (
    AlreadyOwned,
    controller_of,
    is_controlled_by,
    owner_reference,
    owner_references,
    set_controller_reference,
    set_owner_reference,
)
from kro.runtime.predicates import labels_changed
from kro.runtime.reconcile import Request
from kro.runtime.store import Store
from kro.runtime.typed import KubeModel, WireModel
from kro.runtime.workqueue import WorkQueue


def website(name: str = "site", uid: str = "u-1", namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Website",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
    }


def deployment(namespace: str = "ns", refs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "site", "namespace": namespace}
    if refs is not None:
        meta["ownerReferences"] = refs
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta}


class Spec(WireModel):
    image: str


class Website(KubeModel):
    gvk = GVK("example.com", "v1", "Website")
    gvr = GVR("example.com", "v1", "websites")
    spec: Spec


def test_set_controller_reference_writes_the_upstream_shape() -> None:
    child = set_controller_reference(website(), deployment())
    assert child["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "example.com/v1",
            "kind": "Website",
            "name": "site",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert is_controlled_by(child, website())
    assert not is_controlled_by(child, website(uid="u-2"))  # a recreated namesake


def test_setting_the_same_controller_again_refreshes_its_uid() -> None:
    child = set_controller_reference(website(uid="old"), deployment())
    set_controller_reference(website(uid="new"), child)
    assert [r["uid"] for r in child["metadata"]["ownerReferences"]] == ["new"]


def test_a_second_controller_is_refused() -> None:
    child = set_controller_reference(website(), deployment())
    with pytest.raises(AlreadyOwned, match="already controlled by Website site"):
        set_controller_reference(website(name="other", uid="u-9"), child)


def test_an_owner_in_another_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot own namespace 'elsewhere'"):
        set_controller_reference(website(), deployment(namespace="elsewhere"))
    cluster_owner = {**website(), "metadata": {"name": "n", "uid": "u"}}
    set_controller_reference(cluster_owner, deployment())  # cluster-scoped owners may own


def test_owner_needs_a_uid() -> None:
    with pytest.raises(ValueError, match=r"metadata\.uid"):
        owner_reference({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})


def test_typed_owners_are_accepted() -> None:
    owner = Website.from_object({**website(), "spec": {"image": "nginx"}})
    child = set_controller_reference(owner, deployment())
    assert controller_of(child) == owner_reference(website())


def test_set_owner_reference_adds_a_plain_reference_and_keeps_a_controller_flag() -> None:
    child = set_owner_reference(website(), deployment())
    assert owner_references(child) == [
        owner_reference(website(), controller=False, block_owner_deletion=False)
    ]
    assert controller_of(child) is None
    controlled = set_controller_reference(website(), deployment())
    set_owner_reference(website(), controlled)
    assert controller_of(controlled) is not None


def test_owner_references_filter_by_group_kind_and_controller() -> None:
    refs = [
        owner_reference(website(), controller=False),
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "r",
            "uid": "r",
            "controller": True,
        },
    ]
    child = deployment(refs=refs)
    assert [r["kind"] for r in owner_references(child, group="example.com")] == ["Website"]
    assert [r["kind"] for r in owner_references(child, kind="ReplicaSet")] == ["ReplicaSet"]
    assert [r["kind"] for r in owner_references(child, only_controller=True)] == ["ReplicaSet"]


# -- handlers: events -> keys ----------------------------------------------------------------------


def owners_store(*objs: dict[str, Any]) -> Store:
    store = Store()
    for o in objs:
        store.add(o)
    return store


def drain(queue: WorkQueue[Request]) -> list[Request]:
    return [queue.get_nowait() for _ in range(len(queue))]


async def test_a_child_change_queues_its_controller_owner() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueForOwner(queue, owners_store(website()), owner_group="example.com")
    child = set_controller_reference(website(), deployment())
    handler.on_delete(child)
    assert drain(queue) == [Request("ns", "site")]


async def test_owner_mapping_ignores_other_groups_kinds_uids_and_plain_owners() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    owners = owners_store(website())
    handler = EnqueueForOwner(queue, owners, owner_group="example.com", owner_kind="Website")
    stale = set_controller_reference(website(uid="deleted-one"), deployment())
    other_kind = deployment(refs=[{**owner_reference(website()), "kind": "Blog"}])
    other_group = deployment(refs=[{**owner_reference(website()), "apiVersion": "other.io/v1"}])
    plain = set_owner_reference(website(), deployment())
    for child in (stale, other_kind, other_group, plain):
        handler.on_add(child)
    assert drain(queue) == []
    any_owner = EnqueueForOwner(queue, owners, owner_group="example.com", only_controller=False)
    any_owner.on_add(plain)
    assert drain(queue) == [Request("ns", "site")]


async def test_a_cluster_scoped_owner_is_found_for_a_namespaced_child() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    tenant = {
        "apiVersion": "example.com/v1",
        "kind": "Tenant",
        "metadata": {"name": "t", "uid": "t"},
    }
    handler = EnqueueForOwner(queue, owners_store(tenant), owner_group="example.com")
    handler.on_add(set_controller_reference(tenant, deployment()))
    assert drain(queue) == [Request("", "t")]


async def test_updates_map_both_the_old_and_the_new_object() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    a, b = website("a", "ua"), website("b", "ub")
    handler = EnqueueForOwner(queue, owners_store(a, b), owner_group="example.com")
    moved_from = set_controller_reference(a, deployment())
    moved_to = set_controller_reference(b, deployment(refs=[]))
    handler.on_update(moved_from, moved_to)
    assert drain(queue) == [Request("ns", "a"), Request("ns", "b")]


async def test_predicates_filter_before_mapping() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    seen: list[str] = []

    def to_request(o: dict[str, Any]) -> list[Request]:
        seen.append(o["metadata"]["name"])
        return [Request("x", "y")]

    handler = EnqueueFromMap(queue, to_request, labels_changed())
    same = {"metadata": {"name": "a", "labels": {"k": "v"}}}
    handler.on_update(same, same)
    assert seen == []
    assert drain(queue) == []
    handler.on_update(same, {"metadata": {"name": "a", "labels": {"k": "w"}}})
    assert drain(queue) == [Request("x", "y")]

    direct = EnqueueForObject(queue, labels_changed())
    direct.on_update(same, {"metadata": {"name": "a", "namespace": "n", "labels": {}}})
    assert drain(queue) == [Request("n", "a")]
