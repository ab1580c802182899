"""Server-side apply and finalizers through the client, on the fake's approximation of SSA
(the real semantics are proven in e2e; these pin what the fake promises other tests)."""

from __future__ import annotations

from typing import Any

import pytest

from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVK, GVR
from kro.testing.fakeapi import FakeApiServer

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
CRD = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
WIDGETS = GVR("example.com", "v1", "widgets")


def cm(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "default", **meta},
    }


async def test_finalizers_merge_as_a_set_across_managers(client: Client) -> None:
    await client.apply(CM, cm(finalizers=["one.example/f"]), field_manager="one")
    both = await client.apply(CM, cm(finalizers=["two.example/f"]), field_manager="two")
    assert sorted(both["metadata"]["finalizers"]) == ["one.example/f", "two.example/f"]
    left = await client.apply(CM, cm(), field_manager="two")
    assert left["metadata"]["finalizers"] == ["one.example/f"]


async def test_fields_a_manager_stops_applying_are_removed(client: Client) -> None:
    await client.apply(CM, {**cm(), "data": {"x": "1", "y": "2"}}, field_manager="kro")
    result = await client.apply(CM, {**cm(), "data": {"x": "1"}}, field_manager="kro")
    assert result["data"] == {"x": "1"}


async def test_same_value_from_two_managers_is_shared_not_a_conflict(client: Client) -> None:
    await client.apply(CM, {**cm(), "data": {"x": "1"}}, field_manager="one")
    result = await client.apply(CM, {**cm(), "data": {"x": "1"}}, field_manager="two")
    managers = {m["manager"] for m in result["metadata"]["managedFields"]}
    assert managers == {"one", "two"}


async def test_finalizer_removal_completes_a_pending_delete(
    client: Client, fake_api: FakeApiServer
) -> None:
    await client.create(CM, cm(finalizers=["example.com/hold"]))
    await client.delete(CM, "a", namespace="default")
    current = await client.get(CM, "a", namespace="default")
    patch = {
        "metadata": {
            "finalizers": None,
            "resourceVersion": current["metadata"]["resourceVersion"],
        }
    }
    await client.patch(CM, "a", patch, namespace="default")
    with pytest.raises(NotFound):
        await client.get(CM, "a", namespace="default")


async def test_a_crd_makes_its_kind_discoverable_and_servable(client: Client) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}
            ],
        },
    }
    created = await client.create(CRD, crd)
    conditions = {c["type"]: c["status"] for c in created["status"]["conditions"]}
    assert conditions["Established"] == "True"
    client.mapper.invalidate()
    info = await client.mapper.resource_for(GVK("example.com", "v1", "Widget"))
    assert info.gvr == WIDGETS
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"size": 1},
    }
    await client.apply(WIDGETS, widget, field_manager="kro")
    status = {**widget, "status": {"ready": True}}
    result = await client.apply(WIDGETS, status, field_manager="kro", subresource="status")
    assert result["status"] == {"ready": True}
    assert result["metadata"]["generation"] == 1
    await client.delete(CRD, "widgets.example.com")
    with pytest.raises(NotFound):
        await client.get(WIDGETS, "w", namespace="default")
