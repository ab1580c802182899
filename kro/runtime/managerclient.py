"""kro.runtime.managerclient: the manager's one client: cached reads, writes to the API server.

controller-runtime hands every reconciler `mgr.GetClient()`: reads come from the manager's
shared informers, writes go to the API server, and kinds are whatever the scheme knows. Without
it an operator carries three objects (a Client for writes, the manager's reader for reads, the
manager) and spells every plural in a GVR. `ManagerClient` is that one client:

    client = manager.client
    site = await client.get(Website, "shop", namespace="prod")     # from the cache when cached
    copies = await client.list("Secret", label_selector="app=x")    # a kind by name
    await client.apply(deployment)                 # the kind from apiVersion/kind; forced, as
                                                   # the manager's field manager
    await client.patch(cm, {"metadata": {"labels": {...}}})   # kind and name from cm
    await client.patch("ConfigMap", "settings", {...}, namespace="prod")   # or named
    await client.delete(copy, missing_ok=True)         # kind and name from the object
    site.status.ready_replicas = 3
    await client.update_status(site)               # typed: written only when it changed

A kind is a GVR, a GVK, a typed model class (kro.runtime.typed, which needs only its `gvk`), or
a name as kubectl takes it (`"Deployment"`, `"deployments.apps"`, `"deploy"`), resolved through
the RESTMapper (discovery) once and then from memory. Writes that take an object find its kind
in the object (`apiVersion`/`kind`, or the model's class): `apply`, `create`, `update`,
`update_status`, and `patch`/`delete` when given the object alone. Reads have the cache's semantics
(kro.runtime.reader): shared, read-only dicts that may lag a write by one watch event.

Every method also takes the plain client's form (`patch(gvr, name, body, namespace=...)`), so
helpers written for `Client` (finalizers, StatusWriter) accept a ManagerClient.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, cast, overload

from .client import Client
from .discovery import RESTMapper
from .errors import NotFound
from .gvk import GVK
from .reader import CachedReader, Kind, resolve_gvr

if TYPE_CHECKING:  # pydantic loads with the first typed model, not with every manager
    from pydantic import BaseModel

    from .status import StatusWriter

__all__ = ["ManagerClient", "Object", "ObjectOrName"]

Obj = dict[str, Any]
Object = Obj
"""An object as kro.runtime passes it around: a plain dict (controller-runtime's client.Object)."""
ObjectOrName: TypeAlias = "str | Mapping[str, Any] | BaseModel"
PatchType: TypeAlias = Literal["merge", "json", "strategic"]
_NO_BODY: Final = object()  # `patch(obj, body)`: no third argument


def _model_class(obj: object) -> type | None:
    """The typed model class of `obj`, if it is one. kro.runtime.typed (and pydantic, 8 MiB
    of a process) is imported only by code that uses models: before that, nothing is one."""
    typed = sys.modules.get("kro.runtime.typed")
    return type(obj) if typed is not None and isinstance(obj, typed.KubeModel) else None


def as_dict(obj: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    """The object's body: a dict as it is, a model dumped as the API server spells it."""
    if isinstance(obj, Mapping):
        return obj
    from .typed import as_dict as dump  # a model exists: pydantic is loaded

    return dump(obj)


def kind_of(obj: Mapping[str, Any] | BaseModel) -> Kind:
    """The kind an object says it is: its model class, or its apiVersion and kind."""
    model = _model_class(obj)
    if model is not None:
        return model
    body = as_dict(obj)
    if not body.get("apiVersion") or not body.get("kind"):
        raise TypeError(
            "the object has no apiVersion/kind (objects of built-in kinds listed from the API "
            "server have none): name the kind, e.g. client.patch('ConfigMap', obj, body)"
        )
    return GVK.from_object(dict(body))


def _as_object(value: object, verb: str) -> Mapping[str, Any] | BaseModel:
    """`value` if it is an object (a dict or a model); a kind alone names no object."""
    if isinstance(value, Mapping) or _model_class(value) is not None:
        return cast("Mapping[str, Any] | BaseModel", value)
    raise TypeError(
        f"{verb}({value!r}, ...) names a kind but no object: "
        f"{verb}(kind, name_or_object, ...) or {verb}(obj, ...)"
    )


def _name_and_namespace(target: ObjectOrName, namespace: str | None) -> tuple[str, str | None]:
    if isinstance(target, str):
        return target, namespace
    meta = as_dict(target).get("metadata") or {}
    return str(meta.get("name") or ""), namespace or meta.get("namespace") or None


class ManagerClient:
    """Cached reads, direct writes, kinds resolved through discovery (module docstring)."""

    def __init__(
        self, reader: CachedReader, client: Client, *, field_manager: str = "kro-runtime"
    ) -> None:
        self.reader = reader
        self.api = client
        self.field_manager = field_manager
        self._status_writer: StatusWriter | None = None

    @property
    def status_writer(self) -> StatusWriter:
        """Made on first use: kro.runtime.status loads pydantic."""
        if self._status_writer is None:
            from .status import StatusWriter

            self._status_writer = StatusWriter(self.api, field_manager=self.field_manager)
        return self._status_writer

    @property
    def mapper(self) -> RESTMapper:
        return self.api.mapper

    # -- reads: the cache ------------------------------------------------------------------------

    async def get(
        self, kind: Kind, name: str, *, namespace: str | None = None, copy: bool = False
    ) -> Any:
        """The object (a model for a model class), from the cache when cached; NotFound."""
        return await self.reader.get(kind, name, namespace=namespace, copy=copy)

    async def list(
        self,
        kind: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        copy: bool = False,
    ) -> builtins.list[Any]:
        """Objects of `kind` (models for a model class), from the cache when it can answer."""
        return await self.reader.list(
            kind, namespace=namespace, label_selector=label_selector, copy=copy
        )

    # -- writes: the API server ------------------------------------------------------------------

    async def apply(
        self,
        obj: Mapping[str, Any] | BaseModel,
        *,
        field_manager: str | None = None,
        force: bool = True,
        subresource: str | None = None,
    ) -> Obj:
        """Server-side apply of `obj` (a dict or a model), forced by default: an operator owns
        the fields it applies (controller-runtime's `client.ForceOwnership`)."""
        gvr = await resolve_gvr(kind_of(obj), self.mapper)
        return await self.api.apply(
            gvr,
            as_dict(obj),
            field_manager=field_manager or self.field_manager,
            force=force,
            subresource=subresource,
        )

    async def create(self, obj: Mapping[str, Any] | BaseModel, **options: Any) -> Obj:
        """POST `obj`; its kind from its apiVersion/kind."""
        gvr = await resolve_gvr(kind_of(obj), self.mapper)
        options.setdefault("field_manager", self.field_manager)
        return await self.api.create(gvr, as_dict(obj), **options)

    async def update(self, obj: Mapping[str, Any] | BaseModel, **options: Any) -> Obj:
        """PUT `obj` (conditional on its resourceVersion); its kind from its apiVersion/kind."""
        gvr = await resolve_gvr(kind_of(obj), self.mapper)
        options.setdefault("field_manager", self.field_manager)
        return await self.api.update(gvr, as_dict(obj), **options)

    @overload
    async def patch(
        self,
        obj: Mapping[str, Any] | BaseModel,
        patch: Any,
        /,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> Obj: ...

    @overload
    async def patch(
        self,
        kind: Kind,
        target: ObjectOrName,
        patch: Any,
        /,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> Obj: ...

    async def patch(
        self,
        first: Kind | Mapping[str, Any] | BaseModel,
        second: Any,
        third: Any = _NO_BODY,
        /,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """PATCH an object: `patch(obj, body)` (its kind from the object, as `apply` takes
        it), or `patch(kind, target, body)` with `target` a name or the object itself."""
        target: ObjectOrName
        if third is _NO_BODY:
            target = _as_object(first, "patch")
            kind, body = kind_of(target), second
        else:
            kind, target, body = cast(Kind, first), second, third
        name, ns = _name_and_namespace(target, namespace)
        return await self.api.patch(
            await resolve_gvr(kind, self.mapper),
            name,
            body,
            namespace=ns,
            patch_type=patch_type,
            subresource=subresource,
            field_manager=field_manager or self.field_manager,
            dry_run=dry_run,
        )

    @overload
    async def delete(
        self,
        obj: Mapping[str, Any] | BaseModel,
        /,
        *,
        namespace: str | None = None,
        missing_ok: bool = False,
        **options: Any,
    ) -> Obj | None: ...

    @overload
    async def delete(
        self,
        kind: Kind,
        target: ObjectOrName,
        /,
        *,
        namespace: str | None = None,
        missing_ok: bool = False,
        **options: Any,
    ) -> Obj | None: ...

    async def delete(
        self,
        first: Kind | Mapping[str, Any] | BaseModel,
        target: ObjectOrName | None = None,
        /,
        *,
        namespace: str | None = None,
        missing_ok: bool = False,
        **options: Any,
    ) -> Obj | None:
        """DELETE an object: `delete(obj)` (its kind from the object), or `delete(kind,
        target)` with `target` a name or the object; `missing_ok`: one already gone is no
        error (controller-runtime's `client.IgnoreNotFound`)."""
        if target is None:
            target = _as_object(first, "delete")
            kind: Kind = kind_of(target)
        else:
            kind = cast(Kind, first)
        name, ns = _name_and_namespace(target, namespace)
        try:
            return await self.api.delete(
                await resolve_gvr(kind, self.mapper), name, namespace=ns, **options
            )
        except NotFound:
            if not missing_ok:
                raise
            return None

    async def update_status(
        self,
        obj: Mapping[str, Any] | BaseModel,
        status: Mapping[str, Any] | BaseModel | None = None,
    ) -> bool:
        """Write the status of `obj` (a model: its `status` field, with the names the model
        declares) unless the server holds it already; returns whether a write was made.
        A dict object takes its new `status` as the second argument (StatusWriter)."""
        if status is None:
            if isinstance(obj, Mapping):
                raise TypeError("update_status(dict) needs the new status as a second argument")
            status = getattr(obj, "status", None) or {}
        return await self.status_writer.update(kind_of(obj), obj, status)
