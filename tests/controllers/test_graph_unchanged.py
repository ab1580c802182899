"""A Graph's pass does not re-apply what provably holds its content already.

The proof is the one RGD children and `kro explain` use (kro.applyset.cache): the live object's
managedFields entry of the Graph's field manager lists exactly the fields of the body, and every
value already is the body's. A changed value, a field someone else took, a first apply, or a
Graph that now applies as another ServiceAccount than the one that applied last: applied as
before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from kro.api.graph import patch_field_manager, template_field_manager
from kro.applyset import Applier, ApplierOptions, Desired
from kro.controllers.graph.inventory import StatusInventory
from kro.engine.ownership import PruneScope
from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.runtime.memory import ObjectMemory

UID = "7d1f3e0a-graph"
MANAGER = template_field_manager(UID)
CONFIGMAPS = GVR("", "v1", "configmaps")
BODY: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "team", "labels": {"kro.run/node-id": "cm"}},
    "data": {"colour": "blue"},
}
GRAPH: dict[str, Any] = {
    "metadata": {"name": "g", "namespace": "team", "uid": UID},
    "status": {
        "managedResources": [
            {
                "nodeID": "cm",
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "namespace": "team",
                "name": "settings",
                "uid": "cm-uid",
            }
        ]
    },
}


def _fields(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    return {f"f:{k}": _fields(v) for k, v in value.items()}


def live(body: Mapping[str, Any], manager: str, **changes: Any) -> dict[str, Any]:
    """`body` as the API server holds it after `manager` applied it, then `changes`."""
    metadata = dict(body["metadata"])
    owned = {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "metadata")}
    fields = {**_fields(owned), "f:metadata": {"f:labels": _fields(metadata["labels"])}}
    entry = {"manager": manager, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields}
    found = {**body, "metadata": {**metadata, "uid": "cm-uid", "resourceVersion": "5",
                                  "managedFields": [entry]}}  # fmt: skip
    found.update(changes)
    return found


class Server:
    """Answers every apply with the body plus a new resourceVersion, and counts them."""

    def __init__(self) -> None:
        self.applies: list[tuple[str, str]] = []

    async def apply(self, gvr: GVR, body: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        self.applies.append((str(body["metadata"]["name"]), str(options["field_manager"])))
        return {**body, "metadata": {**body["metadata"], "uid": "cm-uid", "resourceVersion": "6"}}

    async def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(GRAPH)


def inventory(
    server: Server,
    *,
    skip: bool = True,
    patches: Mapping[str, str] = {},
    memory: ObjectMemory | None = None,
) -> Any:
    return StatusInventory(
        kro_client=cast(Client, server),
        client=cast(Client, server),
        graph=GRAPH,
        field_manager=MANAGER,
        concurrency=4,
        patches=patches,
        skip_unchanged=skip,
        memory=memory,
    )


async def test_an_object_holding_the_body_is_not_applied_again() -> None:
    server = Server()
    desired = Desired("cm", BODY, CONFIGMAPS, True, observed=live(BODY, MANAGER))
    _, (result,) = await inventory(server).apply(dict(GRAPH), [desired])
    assert server.applies == []
    assert result.error is None
    assert result.uid == "cm-uid"
    assert not result.changed


async def test_anything_short_of_proof_is_applied() -> None:
    drifted = live(BODY, MANAGER, data={"colour": "red"})
    taken = live(BODY, "kubectl")
    for observed in (None, drifted, taken):
        server = Server()
        desired = Desired("cm", BODY, CONFIGMAPS, True, observed=observed)
        await inventory(server).apply(dict(GRAPH), [desired])
        assert server.applies == [("settings", MANAGER)], observed


async def test_without_the_skip_every_object_is_applied() -> None:
    """`--skip-unchanged=false`, or a Graph whose ServiceAccount changed since its last apply."""
    server = Server()
    desired = Desired("cm", BODY, CONFIGMAPS, True, observed=live(BODY, MANAGER))
    await inventory(server, skip=False).apply(dict(GRAPH), [desired])
    assert server.applies == [("settings", MANAGER)]


async def test_a_contribution_already_made_is_not_patched_again() -> None:
    patch = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "team", "labels": {"team": "a"}},
    }
    manager = patch_field_manager(UID, "stamp")
    holds = live(patch, manager)
    server = Server()
    desired = Desired("stamp", patch, CONFIGMAPS, True, observed=holds)
    await inventory(server, patches={"stamp": ""}).apply(dict(GRAPH), [desired])
    assert server.applies == []
    changed = {**patch, "metadata": {**patch["metadata"], "labels": {"team": "b"}}}
    desired = Desired("stamp", changed, CONFIGMAPS, True, observed=holds)
    await inventory(server, patches={"stamp": ""}).apply(dict(GRAPH), [desired])
    assert server.applies == [("settings", manager)]


async def test_the_skip_memory_remembers_what_an_apply_left_and_vouches_for_it() -> None:
    """After an apply, the Graph's ownership vouches for the object at the version the apply
    left (so a metadata cache may answer the next read) and skips the next apply on the
    remembered digest alone, even with no managedFields to prove it; a newer version is not
    vouched for; a memory switched off vouches for nothing."""
    memory = ObjectMemory()
    server = Server()
    first = inventory(server, memory=memory)
    await first.apply(dict(GRAPH), [Desired("cm", BODY, CONFIGMAPS, True, observed=None)])
    assert server.applies == [("settings", MANAGER)]
    metadata_only = {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": {"name": "settings", "namespace": "team", "uid": "cm-uid",
                     "resourceVersion": "6"},
    }  # fmt: skip
    again = inventory(server, memory=memory)
    assert again.vouches_for(metadata_only)
    assert not again.vouches_for({"metadata": {"uid": "cm-uid", "resourceVersion": "7"}})
    desired = Desired("cm", BODY, CONFIGMAPS, True, observed=metadata_only)
    _, (result,) = await again.apply(dict(GRAPH), [desired])
    assert server.applies == [("settings", MANAGER)]  # not applied a second time
    assert result.error is None
    assert not result.changed
    # What is recorded as applied is named as rendered, not as the metadata-only copy: the
    # prune that follows keeps it.
    scope = PruneScope(failed=False, pending=frozenset(), positions={})
    _, outcome = await again.prune(dict(GRAPH), scope)
    assert not outcome.deleted
    assert [e.kind for e in again.entries] == ["ConfigMap"]
    off = inventory(server, memory=ObjectMemory(enabled=False))
    assert not off.remembers
    assert not off.vouches_for(metadata_only)


async def test_an_applyset_never_vouches_for_what_a_graph_applied() -> None:
    """The process has one skip memory; what a Graph applied must not pass for what an RGD
    instance applied (V-18: the instance would take the Graph's object as its own)."""
    memory = ObjectMemory()
    server = Server()
    graph = inventory(server, memory=memory)
    await graph.apply(dict(GRAPH), [Desired("cm", BODY, CONFIGMAPS, True, observed=None)])
    applied = {"metadata": {"uid": "cm-uid", "resourceVersion": "6"}}
    assert graph.vouches_for(applied)
    applier = Applier(cast(Client, server), ApplierOptions(tooling="kro/test"), memory=memory)
    assert not applier.vouches_for(applied)
