"""kro.applyset against a real API server: SSA managers and ApplySet metadata as the server
stores them, zero writes at steady state, pruning, deletion waves observed through watches, and
two ApplySets contending for one object.

The ApplySet parent here is a plain ConfigMap: any object can parent an ApplySet, and this
keeps the test free of CRDs (the instance controller's e2e covers real kro instances).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kro.api.names import (
    ANNOTATION_APPLY_ORDER,
    ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES,
    ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
    ANNOTATION_APPLYSET_INVENTORY_HASH,
    ANNOTATION_APPLYSET_TOOLING,
    FIELD_MANAGER_APPLYSET,
    FIELD_MANAGER_APPLYSET_PARENT,
    FINALIZER,
    LABEL_APPLYSET_ID,
    LABEL_APPLYSET_PART_OF,
    LABEL_NODE_ID,
)
from kro.applyset import (
    Applier,
    ApplierOptions,
    Desired,
    GroupKind,
    OwnershipConflict,
    applyset_id,
    delete_next_wave,
    inventory_hash,
    prune,
    tooling_for,
)
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.finalizers import remove_finalizer
from kro.runtime.gvk import GVK, GVR
from kro.testing.pytest_plugin import ClusterHandle

CONFIGMAPS = GVR("", "v1", "configmaps")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
TOOLING = tooling_for("v0.9.3-e2e")
HOLD = "e2e.kro.run/hold"
TIMEOUT_S = 60.0


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


async def _parent(client: Client, namespace: str, name: str = "parent") -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    return await client.create(CONFIGMAPS, body, namespace=namespace)


def _configmap(namespace: str, name: str, order: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {LABEL_NODE_ID: name}}
    if order is not None:
        meta["annotations"] = {ANNOTATION_APPLY_ORDER: str(order)}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"name": name}}


def _deployment(namespace: str, name: str, order: int | None = None) -> dict[str, Any]:
    obj = _configmap(namespace, name, order)
    del obj["data"]
    labels = {"app": name}
    return obj | {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


async def _desired(client: Client, obj: dict[str, Any], resource_id: str = "") -> Desired:
    """As the instance controller does it: RESTMapper lookup, then GET the live object."""
    info = await client.mapper.resource_for(GVK.from_object(obj))
    meta = obj["metadata"]
    try:
        observed = await client.get(info.gvr, meta["name"], namespace=meta.get("namespace"))
    except NotFound:
        observed = None
    return Desired(resource_id or meta["name"], obj, info.gvr, info.namespaced, observed)


async def _applyset_versions(client: Client, namespace: str, set_id: str) -> dict[str, str]:
    """resourceVersion by name of the ApplySet's parent and of every ConfigMap labelled as its
    member: what the applier owns, not what the cluster adds to a namespace on its own
    (kube-controller-manager publishes `kube-root-ca.crt` whenever it gets to it)."""
    members, _ = await client.list_all(
        CONFIGMAPS, namespace=namespace, label_selector=f"{LABEL_APPLYSET_PART_OF}={set_id}"
    )
    parent = await client.get(CONFIGMAPS, "parent", namespace=namespace)
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in [parent, *members]}


def _managers(obj: dict[str, Any]) -> dict[str, str]:
    return {m["manager"]: m["operation"] for m in obj["metadata"].get("managedFields", [])}


async def test_apply_records_inventory_labels_and_field_managers(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    applier = Applier(client, ApplierOptions(tooling=TOOLING))
    parent = await _parent(client, ns)
    objs = [_configmap(ns, "a"), _configmap(ns, "b"), _deployment(ns, "web")]
    result = await applier.apply(parent, CONFIGMAPS, [await _desired(client, o) for o in objs])
    assert not result.has_errors
    assert all(r.changed for r in result.resources)

    set_id = applyset_id(name="parent", namespace=ns, kind="ConfigMap", group="")
    stored = await client.get(CONFIGMAPS, "parent", namespace=ns)
    assert stored["metadata"]["labels"][LABEL_APPLYSET_ID] == set_id
    gks = [GroupKind("", "ConfigMap"), GroupKind("apps", "Deployment")]
    assert stored["metadata"]["annotations"] == {
        ANNOTATION_APPLYSET_TOOLING: TOOLING,
        ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS: "ConfigMap,Deployment.apps",
        ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES: "",
        ANNOTATION_APPLYSET_INVENTORY_HASH: inventory_hash(set_id, gks, []),
    }
    assert _managers(stored).get(FIELD_MANAGER_APPLYSET_PARENT) == "Apply"

    for gvr, name in [(CONFIGMAPS, "a"), (CONFIGMAPS, "b"), (DEPLOYMENTS, "web")]:
        child = await client.get(gvr, name, namespace=ns)
        assert child["metadata"]["labels"][LABEL_APPLYSET_PART_OF] == set_id
        assert _managers(child).get(FIELD_MANAGER_APPLYSET) == "Apply"


async def test_steady_state_writes_nothing(client: Client, kube_namespace: str) -> None:
    ns = kube_namespace
    applier = Applier(client, ApplierOptions(tooling=TOOLING))
    parent = await _parent(client, ns)
    objs = [_configmap(ns, "a"), _configmap(ns, "b")]
    first = await applier.apply(parent, CONFIGMAPS, [await _desired(client, o) for o in objs])
    rv = first.parent_obj["metadata"]["resourceVersion"]
    assert rv != parent["metadata"]["resourceVersion"]  # the inventory was written
    parent_now = await client.get(CONFIGMAPS, "parent", namespace=ns)
    set_id = applyset_id(name="parent", namespace=ns, kind="ConfigMap", group="")
    before = await _applyset_versions(client, ns, set_id)
    assert sorted(before) == ["a", "b", "parent"]
    second = await applier.apply(parent_now, CONFIGMAPS, [await _desired(client, o) for o in objs])
    assert second.parent_obj["metadata"]["resourceVersion"] == rv  # not written again
    assert [r.skipped for r in second.resources] == [True, True]
    assert not any(r.changed for r in second.resources)
    assert await _applyset_versions(client, ns, set_id) == before  # nothing of it was written


async def test_prune_deletes_the_dropped_child_and_shrinks_the_inventory(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    applier = Applier(client, ApplierOptions(tooling=TOOLING))
    parent = await _parent(client, ns)
    objs = [_configmap(ns, "keep"), _configmap(ns, "drop"), _deployment(ns, "web")]
    full = await applier.apply(parent, CONFIGMAPS, [await _desired(client, o) for o in objs])
    positions = {"keep": 0, "drop": 1, "web": 2}
    shrunk = await applier.apply(
        full.parent_obj, CONFIGMAPS, [await _desired(client, _configmap(ns, "keep"))]
    )
    pruned = await prune(client, shrunk, positions=positions, all_resolved=True)
    assert (pruned.skipped, pruned.conflicts, pruned.failures) == (False, (), ())
    assert sorted(ref.name for ref in pruned.deleted) == ["drop", "web"]
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "drop", namespace=ns)
    await client.get(CONFIGMAPS, "keep", namespace=ns)
    assert pruned.inventory is not None
    written = await applier.ensure_inventory(shrunk.parent, shrunk.parent_obj, pruned.inventory)
    assert written is not None
    annotations = written["metadata"]["annotations"]
    assert annotations[ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS] == "ConfigMap"


async def _record_deletions(
    client: Client, gvr: GVR, *, namespace: str, since: str, seen: list[str], bump: asyncio.Event
) -> None:
    """Append the name of every deleted object to `seen`; set `bump` on every event."""
    async with contextlib.aclosing(
        client.watch(gvr, namespace=namespace, resource_version=since, timeout_s=int(TIMEOUT_S))
    ) as events:
        async for event in events:
            if event.type == "DELETED":
                seen.append(event.object["metadata"]["name"])
            bump.set()


async def test_deletion_goes_wave_by_wave(client: Client, kube_namespace: str) -> None:
    ns = kube_namespace
    applier = Applier(client, ApplierOptions(tooling=TOOLING))
    parent = await _parent(client, ns)
    objs = [
        _configmap(ns, "base", order=1),
        _configmap(ns, "middle", order=2),
        _configmap(ns, "top", order=3),
        _deployment(ns, "web", order=3),
    ]
    result = await applier.apply(parent, CONFIGMAPS, [await _desired(client, o) for o in objs])
    assert not result.has_errors
    # someone else's finalizer holds wave 2: wave 1 must wait for it
    await client.patch(CONFIGMAPS, "middle", {"metadata": {"finalizers": [HOLD]}}, namespace=ns)
    await client.patch(
        CONFIGMAPS, "parent", {"metadata": {"finalizers": [FINALIZER]}}, namespace=ns
    )
    await client.delete(CONFIGMAPS, "parent", namespace=ns)
    parent = await client.get(CONFIGMAPS, "parent", namespace=ns)
    assert parent["metadata"].get("deletionTimestamp")

    seen: list[str] = []
    bump = asyncio.Event()
    _, since = await client.list_all(CONFIGMAPS, namespace=ns)
    watches = [
        asyncio.create_task(
            _record_deletions(client, gvr, namespace=ns, since=since, seen=seen, bump=bump),
            name=f"e2e.watch:{gvr}",
        )
        for gvr in (CONFIGMAPS, DEPLOYMENTS)
    ]
    waves: list[int] = []
    released = False
    try:
        async with asyncio.timeout(TIMEOUT_S):
            while True:
                bump.clear()  # before acting, so no event caused by this pass is missed
                progress = await delete_next_wave(client, parent, CONFIGMAPS)
                if progress.done:
                    break
                assert progress.wave is not None
                waves.append(progress.wave)
                if progress.wave == 2 and progress.waiting:
                    assert "base" not in seen  # the lower wave is untouched meanwhile
                    released = True
                    await client.patch(
                        CONFIGMAPS, "middle", {"metadata": {"finalizers": None}}, namespace=ns
                    )
                await bump.wait()  # the caller's requeue: driven by the next watch event
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)

    assert released  # wave 2 really was held up by the foreign finalizer
    assert seen.index("top") < seen.index("middle") < seen.index("base")
    assert seen.index("web") < seen.index("middle")
    assert sorted(set(waves), reverse=True) == [3, 2, 1]
    assert waves == sorted(waves, reverse=True)
    # The last finalizer of an object being deleted: removing it releases it (None).
    assert await remove_finalizer(client, CONFIGMAPS, parent, FINALIZER) is None
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "parent", namespace=ns)


async def test_an_object_of_another_applyset_is_not_taken_over(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    applier = Applier(client, ApplierOptions(tooling=TOOLING))
    first_parent = await _parent(client, ns, "first")
    second_parent = await _parent(client, ns, "second")
    first = await applier.apply(
        first_parent, CONFIGMAPS, [await _desired(client, _configmap(ns, "shared"))]
    )
    owned = first.resources[0].obj
    assert owned is not None

    contested = _configmap(ns, "shared") | {"data": {"name": "second wants this"}}
    second = await applier.apply(
        second_parent,
        CONFIGMAPS,
        [await _desired(client, contested), await _desired(client, _configmap(ns, "own"))],
    )
    shared, own = second.resources
    assert isinstance(shared.error, OwnershipConflict)
    first_id = applyset_id(name="first", namespace=ns, kind="ConfigMap", group="")
    second_id = applyset_id(name="second", namespace=ns, kind="ConfigMap", group="")
    assert str(shared.error) == (
        f"resource belongs to a different ApplySet: {ns}/shared (v1, Kind=ConfigMap) belongs to "
        f'ApplySet "{first_id}", cannot reassign to "{second_id}"'
    )
    assert own.error is None
    live = await client.get(CONFIGMAPS, "shared", namespace=ns)
    assert live["metadata"]["resourceVersion"] == owned["metadata"]["resourceVersion"]
    assert live["data"] == {"name": "shared"}
    skipped = await prune(client, second, positions={}, all_resolved=True)
    assert skipped.skipped  # an apply error: nothing may be pruned
    alone = await applier.apply(
        second.parent_obj, CONFIGMAPS, [await _desired(client, _configmap(ns, "own"))]
    )
    pruned = await prune(client, alone, positions={}, all_resolved=True)
    assert (pruned.skipped, pruned.conflicts, pruned.failures) == (False, (), ())
    assert pruned.deleted == ()  # the first ApplySet's object is not a member of the second
