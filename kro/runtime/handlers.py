"""kro.runtime.handlers: informer events -> queue keys (controller-runtime's handler package).

A controller reconciles one primary kind, but it must hear about more than its primaries:

* `EnqueueForObject`: a change to a primary queues its own key;
* `EnqueueForOwner`: a change to a child the controller owns (a Deployment it created) queues
  the key of its owner, found through the child's ownerReferences: delete the Deployment and
  its Website is reconciled, which recreates it;
* `EnqueueFromMap`: a change to anything queues whatever keys a map function returns (a
  Namespace that appeared -> every source that should be copied into it).

Each applies a predicate (kro.runtime.predicates) before it maps, and on update maps both the
old and the new object, so a child moved from one owner to another, or a label that stopped
matching, reaches both sides. Handlers run on the informer's loop for every event: they only
compute keys and add them to the queue (de-duplicated there), never do I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .gvk import split_api_version
from .predicates import Predicate
from .reconcile import Request
from .store import Store
from .workqueue import WorkQueue

__all__ = ["EnqueueForObject", "EnqueueForOwner", "EnqueueFromMap", "MapFunc", "request_for"]

Obj = dict[str, Any]
MapFunc = Callable[[Obj], Iterable[Request]]

_ALL = Predicate(name="all")


def request_for(obj: Mapping[str, Any]) -> Request:
    """The key of an object: its namespace ("" if cluster-scoped) and name."""
    meta = obj.get("metadata") or {}
    return Request(str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class _Handler:
    """Predicate first, then map to keys and queue them."""

    def __init__(self, queue: WorkQueue[Request], predicate: Predicate | None) -> None:
        self.queue = queue
        self.predicate = predicate or _ALL

    def requests(self, obj: Obj) -> Iterable[Request]:
        raise NotImplementedError

    def _add(self, obj: Obj) -> None:
        for request in self.requests(obj):
            self.queue.add(request)

    def on_add(self, obj: Obj) -> None:
        if self.predicate.create(obj):
            self._add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.predicate.update(old, new):
            self._add(old)
            self._add(new)

    def on_delete(self, obj: Obj) -> None:
        if self.predicate.delete(obj):
            self._add(obj)


class EnqueueForObject(_Handler):
    """The object's own key."""

    def requests(self, obj: Obj) -> Iterable[Request]:
        return (request_for(obj),)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.predicate.update(old, new):
            self._add(new)  # same name and namespace: one key


class EnqueueForOwner(_Handler):
    """The key of each owner of the object that is a primary of this controller.

    An ownerReference names a group, kind, name and uid but no namespace (owners share their
    child's namespace, or are cluster-scoped). The owner's kind is matched against `owner_kind`
    when it is known; either way the owner must be in `owners`, the primary kind's informer
    store, with the same uid, so a reference to a namesake of another kind, or to a deleted
    and recreated owner, queues nothing. An owner not in the cache has nothing to reconcile:
    its own create event will queue it.
    """

    def __init__(
        self,
        queue: WorkQueue[Request],
        owners: Store,
        *,
        owner_group: str,
        owner_kind: str | None = None,
        only_controller: bool = True,
        predicate: Predicate | None = None,
    ) -> None:
        super().__init__(queue, predicate)
        self.owners = owners
        self.owner_group = owner_group
        self.owner_kind = owner_kind
        self.only_controller = only_controller

    def requests(self, obj: Obj) -> Iterable[Request]:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        found = []
        for ref in meta.get("ownerReferences") or ():
            if not isinstance(ref, Mapping):
                continue
            if self.only_controller and not ref.get("controller"):
                continue
            if self.owner_kind is not None and ref.get("kind") != self.owner_kind:
                continue
            if split_api_version(str(ref.get("apiVersion", "")))[0] != self.owner_group:
                continue
            name = str(ref.get("name") or "")
            for owner_ns in (namespace, "") if namespace else ("",):
                owner = self.owners.get_by(owner_ns, name)
                if owner is not None and (owner.get("metadata") or {}).get("uid") == ref.get("uid"):
                    found.append(Request(owner_ns, name))
                    break
        return found


class EnqueueFromMap(_Handler):
    """Whatever keys `map_fn(obj)` returns (it must be quick and must not change `obj`)."""

    def __init__(
        self, queue: WorkQueue[Request], map_fn: MapFunc, predicate: Predicate | None = None
    ) -> None:
        super().__init__(queue, predicate)
        self.map_fn = map_fn

    def requests(self, obj: Obj) -> Iterable[Request]:
        return self.map_fn(obj)
