"""kro.testing.leases: an in-memory Lease API for unit tests of leases' users.

Leader election and shard membership (kro.runtime.leaderelection, kro.runtime.sharding) only
get, list, create, update and delete Leases, and their correctness rests on two server rules:
a create of an existing name fails (AlreadyExists) and an update with a stale resourceVersion
fails (Conflict). `FakeLeases` keeps exactly those rules, per namespace, with no clock of its
own (tests drive time through the members' FakeClock), and can partition a replica: updates
by a holder in `down` fail as a lost connection would.
"""

from __future__ import annotations

import builtins
import copy
from collections.abc import Mapping
from typing import Any

from kro.runtime.errors import AlreadyExists, Conflict, NotFound

Key = tuple[str, str]


class FakeLeases:
    """Leases by (namespace, name), with resourceVersions, AlreadyExists and Conflict."""

    def __init__(self) -> None:
        self.items: dict[Key, dict[str, Any]] = {}
        self.rv = 0
        self.down: set[str] = set()
        """Holder identities whose updates fail with Conflict (a partitioned replica)."""
        self.selectors: list[str | None] = []
        """The label selectors `list_all` was called with."""

    def _store(self, obj: Mapping[str, Any], namespace: str | None) -> dict[str, Any]:
        self.rv += 1
        new = copy.deepcopy(dict(obj))
        new["metadata"]["resourceVersion"] = str(self.rv)
        new["metadata"]["namespace"] = namespace or ""
        self.items[(namespace or "", new["metadata"]["name"])] = new
        return copy.deepcopy(new)

    async def get(self, gvr: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        found = self.items.get((namespace or "", name))
        if found is None:
            raise NotFound(status=404, reason="NotFound", message=name)
        return copy.deepcopy(found)

    async def list(
        self, gvr: Any, *, namespace: str | None = None, label_selector: str | None = None
    ) -> dict[str, Any]:
        items = [o for (ns, _), o in self.items.items() if namespace in (None, ns)]
        return {"items": copy.deepcopy(items)}

    async def list_all(
        self, gvr: Any, *, label_selector: str | None = None
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        self.selectors.append(label_selector)
        return (await self.list(gvr))["items"], str(self.rv)

    async def create(
        self, gvr: Any, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        if (namespace or "", obj["metadata"]["name"]) in self.items:
            raise AlreadyExists(status=409, reason="AlreadyExists", message="exists")
        return self._store(obj, namespace)

    async def update(
        self, gvr: Any, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        if (obj.get("spec") or {}).get("holderIdentity") in self.down:
            raise Conflict(status=409, reason="Conflict", message="partitioned")
        current = self.items.get((namespace or "", name))
        if current is None:
            raise NotFound(status=404, reason="NotFound", message=name)
        if current["metadata"]["resourceVersion"] != obj["metadata"].get("resourceVersion"):
            raise Conflict(status=409, reason="Conflict", message="stale")
        return self._store(obj, namespace)

    async def delete(
        self, gvr: Any, name: str, *, namespace: str | None = None
    ) -> dict[str, Any] | None:
        self.items.pop((namespace or "", name), None)
        return None

    def leases(self) -> builtins.list[dict[str, Any]]:
        """Every Lease, as stored."""
        return copy.deepcopy(list(self.items.values()))
