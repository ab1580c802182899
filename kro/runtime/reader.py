"""kro.runtime.reader: reads that cost no request when an informer already holds the answer.

controller-runtime's manager client reads from the cache and writes to the API server; this is
the read half. `CachedReader.get` and `.list` answer from a synced informer of the manager's
cache (kro.runtime.cache) when one covers the kind and namespace, and fall back to the API
server for kinds nothing watches (a reconciler that looks at a Secret now and then should not
have to watch every Secret). An informer filtered by a selector (a primary built with
`with_selector()`) answers every `get` of an object it holds; only a miss asks the server, since
the object may exist outside the selector. Lists use it when their selector implies its own.

What that means for the caller, as in controller-runtime:

* a cached read can be stale by one watch event: an object the reconciler just wrote may still
  show its old state. Decide from what a write returned, or let the next event bring you back
  (the write itself causes one). `StatusWriter` (kro.runtime.status) accounts for this;
* a synced cache that lacks an object means NotFound without asking the server;
* cached objects are the informer's shared dicts: read-only. `copy=True` returns a deep copy
  for callers that want to edit and write back. Typed reads (`get(Website, ...)`) build a new
  model, validated (InvalidObject when the object does not fit the model).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

import orjson

from .cache import InformerCache
from .client import Client
from .discovery import RESTMapper
from .errors import NoKindMatch, NotFound
from .gvk import GVK, GVR
from .labels import parse_selector

if TYPE_CHECKING:  # typed models are pydantic: loaded by the code that defines one, not here
    from .typed import KubeModel

__all__ = ["CachedReader", "Kind", "gvr_of", "resolve_gvr"]

M = TypeVar("M", bound="KubeModel")
Kind: TypeAlias = "GVR | GVK | str | type[KubeModel]"
"""How operator code names a kind: a GVR, or anything the RESTMapper resolves (a GVK, a name
such as `"Deployment"` or `"deployments.apps"`, a typed model, which needs only its `gvk`)."""
Obj = dict[str, Any]


def gvr_of(kind: Kind, mapper: RESTMapper | None = None) -> GVR:
    """The resource of `kind`, from discovery as last read when it is not a GVR or a model
    with a `gvr` (NoKindMatch if unknown). A model's resolved resource is remembered on the
    class, so the lookup happens once per model."""
    if isinstance(kind, GVR):
        return kind
    if isinstance(kind, type) and "gvr" in _class_vars(kind):
        return kind.gvr
    name: str | GVK = kind.gvk if isinstance(kind, type) else kind
    info = mapper.find(name) if mapper is not None else None
    if info is None:
        loaded = mapper is not None and mapper.loaded
        raise NoKindMatch(
            f"no resource for {name}"
            + ("" if loaded else ": discovery not read yet (Manager.run reads it first)")
        )
    if isinstance(kind, type):
        kind.gvr, kind.namespaced = info.gvr, info.namespaced
    return info.gvr


async def resolve_gvr(kind: Kind, mapper: RESTMapper) -> GVR:
    """`gvr_of`, reading discovery when needed (a CRD created after the last read)."""
    if isinstance(kind, GVR) or (isinstance(kind, type) and "gvr" in _class_vars(kind)):
        return gvr_of(kind)
    await mapper.resolve(kind.gvk if isinstance(kind, type) else kind)
    return gvr_of(kind, mapper)


def _class_vars(model: type) -> set[str]:
    return {name for klass in model.__mro__ for name in vars(klass)}


def _copy(obj: Obj) -> Obj:
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


def _not_found(gvr: GVR, name: str, namespace: str | None) -> NotFound:
    resource = f"{gvr.resource}.{gvr.group}" if gvr.group else gvr.resource
    return NotFound(
        status=404,
        reason="NotFound",
        message=f'{resource} "{name}" not found',
        details={"name": name, "group": gvr.group, "kind": gvr.resource, "cached": True},
    )


class CachedReader:
    """get/list from the manager's informers, from the API server for anything not cached."""

    def __init__(self, cache: InformerCache | None, client: Client) -> None:
        self.cache = cache
        self.client = client
        self.cache_reads = 0
        self.api_reads = 0

    def is_cached(self, kind: Kind, namespace: str | None = None) -> bool:
        """Whether reads of `kind` in `namespace` (None: all) are answered from the cache."""
        gvr = gvr_of(kind, getattr(self.client, "mapper", None))
        return self.cache is not None and self.cache.covering(gvr, namespace) is not None

    @overload
    async def get(
        self, kind: type[M], name: str, *, namespace: str | None = None, copy: bool = False
    ) -> M: ...

    @overload
    async def get(
        self, kind: GVR, name: str, *, namespace: str | None = None, copy: bool = False
    ) -> Obj: ...

    @overload
    async def get(
        self, kind: Kind, name: str, *, namespace: str | None = None, copy: bool = False
    ) -> Obj | KubeModel: ...

    async def get(
        self, kind: Kind, name: str, *, namespace: str | None = None, copy: bool = False
    ) -> Obj | KubeModel:
        """The object, or NotFound; typed when `kind` is a KubeModel class."""
        gvr = await self._gvr(kind)
        informer, complete = (
            self.cache.holding(gvr, namespace) if self.cache is not None else (None, False)
        )
        cached = informer.store.get_by(namespace, name) if informer is not None else None
        if informer is None or (cached is None and not complete):
            # Nothing caches the kind, or only a filtered informer does and it lacks the object:
            # the object may exist outside its selector, so only the server can say.
            self.api_reads += 1
            obj = await self.client.get(gvr, name, namespace=namespace)
        else:
            self.cache_reads += 1
            if cached is None:
                raise _not_found(gvr, name, namespace)
            obj = _copy(cached) if copy else cached
        return _typed(kind, obj)

    async def _gvr(self, kind: Kind) -> GVR:
        return kind if isinstance(kind, GVR) else await resolve_gvr(kind, self.client.mapper)

    @overload
    async def list(
        self,
        kind: type[M],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        copy: bool = False,
    ) -> list[M]: ...

    @overload
    async def list(
        self,
        kind: GVR,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        copy: bool = False,
    ) -> list[Obj]: ...

    @overload
    async def list(
        self,
        kind: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        copy: bool = False,
    ) -> list[Obj] | list[KubeModel]: ...

    async def list(
        self,
        kind: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        copy: bool = False,
    ) -> builtins.list[Any]:
        """Objects of `kind` in `namespace` (None: all namespaces), optionally selected by
        labels; a selector the cache cannot evaluate is sent to the server."""
        gvr = await self._gvr(kind)
        items = self._from_cache(gvr, namespace, label_selector)
        if items is None:
            self.api_reads += 1
            items, _ = await self.client.list_all(
                gvr, namespace=namespace, label_selector=label_selector
            )
        else:
            self.cache_reads += 1
            if copy:
                items = [_copy(o) for o in items]
        if not isinstance(kind, type):
            return items
        return [kind.from_object(o) for o in items]

    def _from_cache(
        self, gvr: GVR, namespace: str | None, label_selector: str | None
    ) -> builtins.list[Obj] | None:
        if self.cache is None:
            return None
        informer = self.cache.covering(gvr, namespace, label_selector)
        if informer is None:
            return None
        try:
            wanted = parse_selector(label_selector or "")
        except ValueError:
            return None
        store = informer.store
        keys = store.index_keys("namespace", namespace) if namespace else store.keys()
        keys.sort()  # the server's order (namespace/name), not the order of the cache's sets
        objs = (store.get(k) for k in keys)
        return [o for o in objs if o is not None and wanted(_labels(o))]


def _typed(kind: Kind, obj: Obj) -> Obj | KubeModel:
    return kind.from_object(obj) if isinstance(kind, type) else obj


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}
