"""kro.dynamic.objectref: the identity of a parent object across all registered kinds.

One queue serves every registered parent GVR, so a queue item must say which kind it belongs to
as well as which object: `ObjectRef(gvr, namespace, name)`, the Python form of upstream kro's
`ObjectIdentifier`. The watch coordinator (kro.dynamic.watches) files child watches under the
same key, so a routed child event enqueues exactly the item the controller reconciles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A parent object: its resource, namespace ("" when cluster-scoped) and name."""

    gvr: GVR
    namespace: str
    name: str

    @classmethod
    def of(cls, gvr: GVR, obj: Mapping[str, Any]) -> ObjectRef:
        """The reference of an object (as an informer delivers it) of resource `gvr`."""
        meta = obj.get("metadata") or {}
        return cls(gvr, str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    @property
    def request(self) -> Request:
        """What the handler of `gvr` is called with: the kind is implied by the registration."""
        return Request(self.namespace, self.name)

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.gvr}:{where}"
