"""kro.runtime.finalizers: clean up outside an object before Kubernetes lets it go.

ownerReferences clean up children in the same namespace. Anything else an object caused (copies
in other namespaces, an external resource, a DNS record) needs a finalizer: a name in
`metadata.finalizers` that keeps the object in the API, marked with a deletionTimestamp, until
the controller that put it there has cleaned up and removed it.

`Finalizer.handle` is the whole protocol in one call at the top of a reconcile:

    outcome = await finalizer.handle(SECRETS, secret)
    if outcome.deleting:
        return Result()          # cleaned up and released (or still being released)
    ... reconcile as usual; outcome.object carries the finalizer ...

* a live object without the finalizer gets it (before anything is created outside it, so no
  deletion can slip through unnoticed);
* an object being deleted that carries it has `cleanup(obj)` run, then the finalizer removed;
* cleanup runs once per object: if removing the finalizer fails (a conflict with a concurrent
  writer), the retry removes it without cleaning up again. A cleanup that raises is retried
  with backoff, like any reconcile failure, and must therefore be idempotent.

An object can also stop needing its finalizer while it lives (a Secret whose replication
annotation was removed must have its copies deleted and be let go): with `needed=fn`, an object
for which `fn(obj)` is false is handled like one being deleted (cleanup once, finalizer removed,
`deleting` true so the reconcile stops), and one without the finalizer is left alone. The
builder's `finalize(name, cleanup, needed=...)` calls `handle` before every reconcile, so an
operator writes no finalizer branch of its own.

Finalizer lists are written with a merge patch that carries the object's resourceVersion: an
optimistic lock, so a finalizer another controller added meanwhile is never dropped (the write
fails with Conflict and the reconcile is retried on fresh data).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from .client import Client
from .errors import Conflict, NotFound
from .gvk import GVR
from .reader import Kind, resolve_gvr

if TYPE_CHECKING:  # typed models are pydantic (8 MiB): loaded by the code that defines one
    from pydantic import BaseModel

    from .managerclient import ManagerClient

__all__ = [
    "Cleanup",
    "Finalizer",
    "FinalizerOutcome",
    "Needed",
    "add_finalizer",
    "has_finalizer",
    "is_being_deleted",
    "remove_finalizer",
]

ObjT = TypeVar("ObjT", bound="Mapping[str, Any] | BaseModel")
AnyT = TypeVar("AnyT")
Obj = dict[str, Any]
Cleanup = Callable[[AnyT], Awaitable[None]]
Needed = Callable[[AnyT], bool]


def _meta(obj: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    meta = as_dict(obj).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def has_finalizer(obj: Mapping[str, Any] | BaseModel, name: str) -> bool:
    return name in (_meta(obj).get("finalizers") or ())


def is_being_deleted(obj: Mapping[str, Any] | BaseModel) -> bool:
    """Deletion was requested; the object stays until its finalizers are gone."""
    return bool(_meta(obj).get("deletionTimestamp"))


async def _gvr(client: Client | ManagerClient, kind: Kind) -> GVR:
    """The kind's resource; a GVR needs no discovery (nor a client that has it)."""
    return kind if isinstance(kind, GVR) else await resolve_gvr(kind, client.mapper)


async def _write_finalizers(
    client: Client | ManagerClient,
    kind: Kind,
    obj: Mapping[str, Any] | BaseModel,
    finalizers: list[str],
) -> Obj:
    meta = _meta(obj)
    patch: dict[str, Any] = {"metadata": {"finalizers": finalizers or None}}
    if meta.get("resourceVersion"):
        patch["metadata"]["resourceVersion"] = meta["resourceVersion"]
    return await client.patch(
        await _gvr(client, kind),
        str(meta.get("name")),
        patch,
        namespace=meta.get("namespace") or None,
    )


async def add_finalizer(
    client: Client | ManagerClient, kind: Kind, obj: Mapping[str, Any] | BaseModel, name: str
) -> Mapping[str, Any]:
    """Add `name` to the object's finalizers; returns the object as written (or as given,
    when it was already there)."""
    if has_finalizer(obj, name):
        return as_dict(obj)
    finalizers = [*(_meta(obj).get("finalizers") or ()), name]
    return await _write_finalizers(client, kind, obj, finalizers)


async def remove_finalizer(
    client: Client | ManagerClient,
    kind: Kind,
    obj: Mapping[str, Any] | BaseModel,
    name: str,
    *,
    attempts: int = 1,
) -> Mapping[str, Any] | None:
    """Remove `name` from the object's finalizers; returns the object as written, or None
    when that released it (the server deleted it) or it was gone already.

    `attempts`: how many writes to try; after a Conflict (someone wrote the object since it
    was read) the object is read again and, if it still carries `name`, written again. The
    last Conflict is raised."""
    current: Mapping[str, Any] | BaseModel = obj
    for attempt in range(1, max(attempts, 1) + 1):
        if not has_finalizer(current, name):
            return as_dict(current)
        finalizers = [f for f in _meta(current).get("finalizers") or () if f != name]
        try:
            written = await _write_finalizers(client, kind, current, finalizers)
        except NotFound:
            return None
        except Conflict:
            if attempt >= attempts:
                raise
            meta = _meta(current)
            try:
                current = await client.get(
                    await _gvr(client, kind),
                    str(meta.get("name")),
                    namespace=meta.get("namespace") or None,
                )
            except NotFound:
                return None
            continue
        # The reply to the last finalizer's removal may already be the deleted object.
        return None if is_being_deleted(written) and not finalizers else written
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class FinalizerOutcome:
    """What `Finalizer.handle` found and did.

    deleting: the object is being deleted, or no longer needs the finalizer (`needed`); the
        reconcile should stop here.
    object: the object as last written or read (with the finalizer, when not deleting);
        None once released.
    """

    deleting: bool
    object: Mapping[str, Any] | None


class Finalizer(Generic[ObjT]):
    """One finalizer name and the cleanup it guards (see the module docstring)."""

    def __init__(
        self,
        client: Client | ManagerClient,
        name: str,
        cleanup: Callable[[ObjT], Awaitable[None]],
        *,
        needed: Callable[[ObjT], bool] | None = None,
    ) -> None:
        if "/" not in name:
            raise ValueError(f"finalizer {name!r} should be domain-qualified (example.com/name)")
        self.client = client
        self.name = name
        self._cleanup = cleanup
        self._needed = needed
        self._cleaned: set[str] = set()  # uids cleaned up whose finalizer is not yet removed

    async def handle(self, kind: Kind | ObjT, obj: ObjT | None = None) -> FinalizerOutcome:
        """Add the finalizer to a live object that needs it, or clean up and release one being
        deleted or no longer needed. `handle(obj)` takes the kind from the object (its model
        class, or its apiVersion/kind); `handle(kind, obj)` names it."""
        if obj is None:
            obj = cast(ObjT, kind)
            from .managerclient import kind_of

            kind = kind_of(obj)
        kind = cast(Kind, kind)
        live = not is_being_deleted(obj)
        if live and (self._needed is None or self._needed(obj)):
            added = await add_finalizer(self.client, kind, obj, self.name)
            return FinalizerOutcome(False, added)
        if not has_finalizer(obj, self.name):
            return FinalizerOutcome(True, as_dict(obj))  # not ours (any more) to hold
        uid = str(_meta(obj).get("uid") or "")
        if uid not in self._cleaned:
            await self._cleanup(obj)
            self._cleaned.add(uid)
        released = await remove_finalizer(self.client, kind, obj, self.name)
        self._cleaned.discard(uid)
        return FinalizerOutcome(True, released)


def as_dict(obj: Any) -> Mapping[str, Any]:
    """A dict view of a dict or a typed model. A dict is taken as it is, so that code that never
    uses typed models never loads pydantic (8 MiB) through this module."""
    if isinstance(obj, Mapping):
        return obj
    from .typed import as_dict as typed_as_dict  # pydantic only once a typed model is here

    return typed_as_dict(obj)
