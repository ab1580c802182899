"""kro.runtime.objectref: one object of one resource, as queues, watches and results name it.

A controller of a single kind keys its queue by `Request(namespace, name)`; a controller that
hosts many kinds on one queue (kro's dynamic controller) needs the resource as well, and so do
reports about the objects of a set (an ApplySet's pruned or conflicting members). `ObjectRef`
is that identity, once for all of them. It satisfies `ObjectKey`, so kro.runtime.Controller
takes it as a queue key, and it adds the resource to the controller's log fields.

`uid` is carried for reports (which incarnation was deleted) and left out of equality and
hashing: a queue key or a watch is about a name, whichever object holds it now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .gvk import GVR
from .reconcile import Request


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """An object: its resource, namespace ("" when cluster-scoped), name and, if known, uid."""

    gvr: GVR
    namespace: str
    name: str
    uid: str = field(default="", compare=False)

    @classmethod
    def of(cls, gvr: GVR, obj: Mapping[str, Any]) -> ObjectRef:
        """The reference of `obj` (a full object or an informer's metadata) of resource `gvr`."""
        meta = obj.get("metadata") or {}
        return cls(
            gvr,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
        )

    @property
    def request(self) -> Request:
        """The object without its resource: what a reconciler of one kind is called with."""
        return Request(self.namespace, self.name)

    def log_fields(self) -> dict[str, str]:
        """Bound to every log line of this key's reconcile by kro.runtime.Controller."""
        return {"gvr": self.gvr.label}

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.gvr}:{where}"
