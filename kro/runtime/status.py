"""kro.runtime.status: write an object's status only when it changed, even from a stale cache.

Every status write is an update of the object: a new resourceVersion, a watch event to every
watcher, and (for a controller that watches its own kind) another reconcile. A reconciler that
writes its status on every pass therefore reconciles forever. `StatusWriter.write` compares the
status it is given with the object's and skips the write when they are equal.

The comparison must survive the cache's lag (kro.runtime.reader): right after a write, the
cache still holds the object as it was *before* it, so comparing against it would write the
same status again, and worse, a status that changed back to the cached one would be skipped
although the server holds the newer one. The writer remembers, per object uid, the status it
last wrote and the resourceVersion it wrote over: while the cache still shows that old version,
the comparison is made against what was written instead.

A typed object's status is compared as it was read (`KubeModel.loaded_status`), so a reconciler
may change the model's status in place and hand the model over (`ManagerClient.update_status`).
pydantic is loaded only when such a model is handed over: a controller of plain dicts (kro's
own) never pays for it.

How the whole status is written (`method`), each replacing it so that fields the new status no
longer has are removed:
- `patch` (default): a JSON patch that sets `/status`; no precondition.
- `update`: an UpdateStatus (PUT) carrying the object's resourceVersion: a status computed
  from a stale read is refused with a Conflict instead of written over a newer one.
- `apply`: a server-side apply of `/status` by `field_manager`, forced, carrying the uid and
  resourceVersion as preconditions of the same kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .client import Client
from .gvk import GVR
from .reader import Kind, resolve_gvr

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["StatusWriter", "status_body"]

MEMORY = 10_000
"""Writes remembered at most: an object deleted right after our write is never seen again, so
its entry would otherwise stay forever. Dropping the oldest costs at most one redundant write."""

Method = Literal["patch", "update", "apply"]


@dataclass(frozen=True, slots=True)
class _Written:
    before: str  # the resourceVersion the write replaced
    after: str  # the resourceVersion the write produced
    status: Mapping[str, Any]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _plain(obj: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    if isinstance(obj, Mapping):
        return obj
    from .typed import as_dict  # a model was handed over: pydantic is loaded already

    return as_dict(obj)


def _identity_and_status(obj: Mapping[str, Any] | BaseModel) -> tuple[str, str, Mapping[str, Any]]:
    """uid, resourceVersion and status of either form of an object; a typed object's status is
    serialised alone (the skip path runs on every reconcile: no full dump of the object)."""
    if isinstance(obj, Mapping):
        m = _meta(obj)
        uid, rv, status = (
            str(m.get("uid") or ""),
            str(m.get("resourceVersion") or ""),
            obj.get("status"),
        )
        return uid, rv, status if isinstance(status, Mapping) else {}
    from pydantic import BaseModel

    from .typed import KubeModel, as_dict

    if isinstance(obj, KubeModel):
        raw = obj.loaded_status
        if raw is None:  # not read from the API: the model's own status is all there is
            raw = getattr(obj, "status", None)
        typed_status: Any = as_dict(raw) if isinstance(raw, BaseModel) else raw
        meta = obj.metadata
        return (
            meta.uid or "",
            meta.resource_version or "",
            typed_status if isinstance(typed_status, Mapping) else {},
        )
    return _identity_and_status(as_dict(obj))


def status_body(obj: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
    """The body of an UpdateStatus or a status apply that gives `obj` this `status`: the API
    server takes nothing but `status` from it (and the uid and resourceVersion as
    preconditions), so the rest of the object, its managedFields above all, is not sent."""
    meta = _meta(obj)
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if meta.get(k)
        },
        "status": status,
    }


class StatusWriter:
    """Status writes that are skipped when they would change nothing (see the module doc)."""

    def __init__(
        self, client: Client, *, field_manager: str | None = None, method: Method = "patch"
    ) -> None:
        if method == "apply" and not field_manager:
            raise ValueError("a status apply needs a field manager")
        self.client = client
        self.field_manager = field_manager
        self.method: Method = method
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

    def changed(self, obj: Mapping[str, Any] | BaseModel, status: Mapping[str, Any]) -> bool:
        """Whether writing `status` to `obj` would change it (compared as JSON values: 3 and
        3.0 are equal; any other difference is a change)."""
        return dict(self.current_status(obj)) != dict(status)

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
        return await self.write(kind, obj, status) is not None

    async def write(
        self,
        kind: Kind,
        obj: Mapping[str, Any] | BaseModel,
        status: Mapping[str, Any] | BaseModel,
    ) -> dict[str, Any] | None:
        """`update`, answering with the object as the server wrote it (None: nothing written)."""
        desired = dict(_plain(status))
        if not self.changed(obj, desired):
            self.skipped += 1
            return None
        plain = _plain(obj)
        gvr = kind if isinstance(kind, GVR) else await resolve_gvr(kind, self.client.mapper)
        written = await self._send(gvr, plain, desired)
        self.writes += 1
        meta = _meta(plain)
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
        return written

    async def _send(
        self, gvr: GVR, obj: Mapping[str, Any], status: dict[str, Any]
    ) -> dict[str, Any]:
        meta = _meta(obj)
        namespace = str(meta.get("namespace") or "") or None
        if self.method == "update":
            return await self.client.update_status(
                gvr, status_body(obj, status), namespace=namespace, field_manager=self.field_manager
            )
        if self.method == "apply":
            return await self.client.apply(
                gvr,
                status_body(obj, status),
                field_manager=str(self.field_manager),
                force=True,
                namespace=namespace,
                subresource="status",
            )
        return await self.client.patch(
            gvr,
            str(meta.get("name") or ""),
            [{"op": "add", "path": "/status", "value": status}],
            namespace=namespace,
            patch_type="json",
            subresource="status",
            field_manager=self.field_manager,
        )

    def forget(self, uid: str) -> None:
        """Drop what is remembered of an object (it was deleted)."""
        self._written.pop(uid, None)
