"""A Graph's pass does not re-apply what provably holds its content already.

The proof is the one RGD children and `kro explain` use (kro.applyset.noop): the live object's
managedFields entry of the Graph's field manager lists exactly the fields of the body, and every
value already is the body's. A changed value, a field someone else took, a first apply, or a
Graph that now applies as another ServiceAccount than the one that applied last: applied as
before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from kro.api.graph import patch_field_manager, template_field_manager
from kro.applyset import Desired
from kro.controllers.graph.inventory import StatusInventory
from kro.runtime.client import Client
from kro.runtime.gvk import GVR

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


def inventory(server: Server, *, skip: bool = True, patches: Mapping[str, str] = {}) -> Any:
    return StatusInventory(
        kro_client=cast(Client, server),
        client=cast(Client, server),
        graph=GRAPH,
        field_manager=MANAGER,
        concurrency=4,
        patches=patches,
        skip_unchanged=skip,
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
