"""kro.runtime.adapters: reconcilers made from plain async functions.

The `Reconciler` protocol (kro.runtime.reconcile) is a class with `reconcile(request)`, which
suits reconcilers with state. Many need none, so two adapters turn functions into reconcilers:

* `FunctionReconciler(fn)`: `async def fn(request) -> Result | None`; None means `Result()`.
* `ObjectReconciler(reader, kind, fn)`: controller-runtime's `reconcile.AsReconciler`. It reads
  the object a request names (from the cache when it is cached), skips requests for objects
  that no longer exist (their children go with them through ownerReferences; anything else
  needs a finalizer, which keeps the object readable until it is released), and calls
  `async def fn(obj) -> Result | None` with the dict, or with the typed model when `kind` is a
  KubeModel class (validated: a malformed object fails once, as a TerminalError).
  With `finalizer=` (kro.runtime.finalizers) the finalizer is handled first, and `fn` sees only
  live objects that need it. With `informer=` (the builder passes the primary's) the object is
  read from that informer: a primary watched through a selector is served from its filtered
  cache, and an object that left the selector is as gone as a deleted one (controller-runtime's
  cache with a label selector behaves so).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from .errors import NotFound
from .finalizers import Finalizer
from .informer import Informer
from .reader import CachedReader, Kind
from .reconcile import Request, Result

__all__ = ["FunctionReconciler", "ObjectReconciler"]

ObjT = TypeVar("ObjT")
ReconcileFn = Callable[[Request], Awaitable[Result | None]]
ObjectFn = Callable[[ObjT], Awaitable[Result | None]]


class FunctionReconciler:
    """A Reconciler[Request] around `async def fn(request) -> Result | None`."""

    def __init__(self, fn: ReconcileFn) -> None:
        self.fn = fn

    async def reconcile(self, request: Request) -> Result:
        return await self.fn(request) or Result()

    def __repr__(self) -> str:
        return f"FunctionReconciler({getattr(self.fn, '__qualname__', self.fn)!r})"


class ObjectReconciler(Generic[ObjT]):
    """A Reconciler[Request] that hands `fn` the object, not its name (see the module doc)."""

    def __init__(
        self,
        reader: CachedReader,
        kind: Kind,
        fn: ObjectFn[ObjT],
        *,
        finalizer: Finalizer[Any] | None = None,
        informer: Informer | None = None,
    ) -> None:
        self.reader = reader
        self.kind = kind
        self.fn = fn
        self.finalizer = finalizer
        self.informer = informer

    async def reconcile(self, request: Request) -> Result:
        namespace = request.namespace or None
        informer = self.informer
        if (
            informer is not None
            and informer.has_synced()
            and informer.namespace in (None, namespace)
        ):
            cached = informer.store.get_by(namespace, request.name)
            if cached is None:
                return Result()
            self.reader.cache_reads += 1
            obj: Any = self.kind.from_object(cached) if isinstance(self.kind, type) else cached
        else:
            try:
                obj = await self.reader.get(self.kind, request.name, namespace=namespace)
            except NotFound:
                return Result()
        if self.finalizer is not None and (await self.finalizer.handle(self.kind, obj)).deleting:
            return Result()
        return await self.fn(obj) or Result()
