"""kro.runtime.status: write an object's status only when it changed, even from a stale cache.

Every status write is an update of the object: a new resourceVersion, a watch event to every
watcher, and (for a controller that watches its own kind) another reconcile. A reconciler that
writes its status on every pass therefore reconciles forever. `StatusWriter.update` compares the
status it is given with the object's and skips the write when they are equal.

The comparison must survive the cache's lag (kro.runtime.reader): right after a write, the
cache still holds the object as it was *before* it, so comparing against it would write the
same status again, and worse, a status that changed back to the cached one would be skipped
although the server holds the newer one. The writer remembers, per object uid, the status it
last wrote and the resourceVersion it wrote over: while the cache still shows that old version,
the comparison is made against what was written instead.

A typed object's status is compared as it was read (`KubeModel.loaded_status`), so a reconciler
may change the model's status in place and hand the model over (`ManagerClient.update_status`).

Writes go to the status subresource as a JSON patch that replaces `/status` whole, so fields the
new status no longer has are removed (a merge patch would keep them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .client import Client
from .reader import Kind, resolve_gvr
from .typed import KubeModel, as_dict

__all__ = ["StatusWriter"]

MEMORY = 10_000
"""Writes remembered at most: an object deleted right after our write is never seen again, so
its entry would otherwise stay forever. Dropping the oldest costs at most one redundant write."""


@dataclass(frozen=True, slots=True)
class _Written:
    before: str  # the resourceVersion the write replaced
    after: str  # the resourceVersion the write produced
    status: Mapping[str, Any]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _identity_and_status(obj: Mapping[str, Any] | BaseModel) -> tuple[str, str, Mapping[str, Any]]:
    """uid, resourceVersion and status of either form of an object; a typed object's status is
    serialised alone (the skip path runs on every reconcile: no full dump of the object)."""
    if isinstance(obj, KubeModel):
        raw = obj.loaded_status
        if raw is None:  # not read from the API: the model's own status is all there is
            raw = getattr(obj, "status", None)
        status: Any = as_dict(raw) if isinstance(raw, BaseModel) else raw
        meta = obj.metadata
        uid, rv = meta.uid or "", meta.resource_version or ""
    else:
        o = as_dict(obj)
        m = _meta(o)
        uid, rv, status = (
            str(m.get("uid") or ""),
            str(m.get("resourceVersion") or ""),
            o.get("status"),
        )
    return uid, rv, status if isinstance(status, Mapping) else {}


class StatusWriter:
    """Status writes that are skipped when they would change nothing (see the module doc)."""

    def __init__(self, client: Client, *, field_manager: str | None = None) -> None:
        self.client = client
        self.field_manager = field_manager
        self._written: dict[str, _Written] = {}
        self.writes = 0
        self.skipped = 0

    def current_status(self, obj: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
        """The status the server holds as far as we know: the object's, unless the object is
        older than our last write to it."""
        uid, rv, status = _identity_and_status(obj)
        written = self._written.get(uid)
        if written is not None:
            if rv == written.before:
                return written.status  # the cache has not seen our write yet
            # The cache has seen our write (rv == after), or someone wrote after us: either
            # way the object is authoritative again.
            del self._written[uid]
        return status

    async def update(
        self,
        kind: Kind,
        obj: Mapping[str, Any] | BaseModel,
        status: Mapping[str, Any] | BaseModel,
    ) -> bool:
        """Write `status` to `obj`'s status subresource unless it holds that already.

        Returns whether a write was made. Typed statuses are serialised as they are applied
        (camelCase, fields that were set).
        """
        desired = dict(as_dict(status))
        if self.current_status(obj) == desired:
            self.skipped += 1
            return False
        meta = _meta(as_dict(obj))
        written = await self.client.patch(
            await resolve_gvr(kind, self.client.mapper),
            str(meta.get("name") or ""),
            [{"op": "add", "path": "/status", "value": desired}],
            namespace=meta.get("namespace") or None,
            patch_type="json",
            subresource="status",
            field_manager=self.field_manager,
        )
        self.writes += 1
        uid = str(meta.get("uid") or "")
        if uid:
            self._written.pop(uid, None)
            if len(self._written) >= MEMORY:
                del self._written[next(iter(self._written))]
            self._written[uid] = _Written(
                before=str(meta.get("resourceVersion") or ""),
                after=str(_meta(written).get("resourceVersion") or ""),
                status=desired,
            )
        return True

    def forget(self, uid: str) -> None:
        """Drop what is remembered of an object (it was deleted)."""
        self._written.pop(uid, None)
