"""A Graph deletes only what it can prove it created, and proves what a crash left unproven.

`status.managedResources` is written ahead of each apply, without UIDs; kro killed after an
apply reached the server and before the UID was recorded leaves an entry with no UID for an
object that exists. Forgetting such an entry when the object is no longer rendered (the Graph
shrank meanwhile) would orphan the object. kro reads it instead: when the Graph's own template
field manager holds fields of it, the Graph applied it, and it is deleted by its UID; an object
without that manager, or none at all, is never deleted and the entry is forgotten.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, cast

from kro.api.graph import template_field_manager
from kro.controllers.graph.inventory import StatusInventory
from kro.engine.ownership import PruneScope
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR

UID = "5e0c7a1d-graph"
MANAGER = template_field_manager(UID)
CONFIGMAPS = GVR("", "v1", "configmaps")


def entry(name: str, uid: str = "") -> dict[str, str]:
    found = {"nodeID": "maps", "apiVersion": "v1", "kind": "ConfigMap", "namespace": "team"}
    return {**found, "name": name, **({"uid": uid} if uid else {})}


GRAPH: dict[str, Any] = {
    "metadata": {"name": "g", "namespace": "team", "uid": UID},
    "status": {
        "managedResources": [
            entry("recorded", "r-uid"),
            entry("crashed"),  # applied by this Graph, UID never recorded
            entry("foreign"),  # written ahead, never applied; someone else made one since
            entry("never"),  # written ahead, never applied
        ]
    },
}


def live(name: str, manager: str) -> dict[str, Any]:
    fields = {"manager": manager, "operation": "Apply", "fieldsType": "FieldsV1"}
    metadata = {"name": name, "namespace": "team", "uid": f"{name}-live-uid"}
    return {"metadata": {**metadata, "managedFields": [fields]}}


class Server:
    def __init__(self) -> None:
        self.objects = {"crashed": live("crashed", MANAGER), "foreign": live("foreign", "kubectl")}
        self.objects["recorded"] = live("recorded", MANAGER)
        self.deleted: list[tuple[str, str]] = []
        self.status: Mapping[str, Any] = {}
        self.mapper = SimpleNamespace(resource_for=self._resource_for)

    async def _resource_for(self, gvk: Any) -> Any:
        return SimpleNamespace(gvr=CONFIGMAPS)

    async def get(self, gvr: GVR, name: str, **options: Any) -> dict[str, Any]:
        if name not in self.objects:
            raise NotFound(status=404, reason="NotFound", message=f"{name} not found")
        return self.objects[name]

    async def delete(self, gvr: GVR, name: str, **options: Any) -> None:
        self.deleted.append((name, options["preconditions"]["uid"]))

    async def patch(self, gvr: GVR, name: str, body: Any, **options: Any) -> Any:
        """The status write: a JSON patch that sets `/status` whole."""
        assert options["patch_type"] == "json"
        assert options["subresource"] == "status"
        (operation,) = body
        assert operation["path"] == "/status"
        self.status = operation["value"]
        return {**GRAPH, "status": self.status}


async def test_prune_deletes_what_it_proves_and_forgets_the_rest() -> None:
    server = Server()
    inventory = StatusInventory(
        kro_client=cast(Client, server),
        client=cast(Client, server),
        graph=GRAPH,
        field_manager=MANAGER,
        concurrency=1,
    )
    scope = PruneScope(failed=False, pending=frozenset(), positions={})
    _, outcome = await inventory.prune(dict(GRAPH), scope)
    assert outcome.deleted
    assert sorted(server.deleted) == [("crashed", "crashed-live-uid"), ("recorded", "r-uid")]
    assert server.status["managedResources"] == []
