"""kro.engine.owner: what the engine needs to know of the object that owns a graph's objects.

The engine knows nothing of what the owner is (an RGD instance, a `Graph`): its adapter says
how applied objects are marked (labels, which also find a collection's items), which key its
watches route back to, and as whom it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kro.dynamic import ObjectRef
from kro.runtime.gvk import GVR

__all__ = ["OwnerBinding"]


class OwnerBinding(Protocol):
    """The adapter's side of a pass: who owns it, and how its children are marked."""

    @property
    def gvr(self) -> GVR:
        """The owner's resource."""

    @property
    def ref(self) -> ObjectRef:
        """The owner as its watches know it (changes are routed back to it)."""

    def child_labels(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        """Labels of every object applied for `node_id` (merged over the template's)."""

    def child_annotations(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        """Annotations of every object applied for `node_id` (merged over the template's)."""

    @property
    def foreign_managers(self) -> tuple[str, ...]:
        """Field-manager prefixes of engines whose objects this owner never takes over."""

    def collection_selector(self, owner: Mapping[str, Any], node_id: str) -> str:
        """The label selector that finds the existing items of collection `node_id`."""

    @property
    def reads_in_namespace(self) -> bool:
        """The owner reads as a namespace's identity (a `Graph`'s ServiceAccount): a
        collection whose items share one namespace is listed there."""
