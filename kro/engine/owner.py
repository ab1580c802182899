"""kro.engine.owner: what the engine needs to know of the object that owns a graph's objects.

The engine applies, reads and prunes on behalf of one owning object (an RGD instance, a `Graph`)
and knows nothing of what that object is. Its adapter says how the owner marks the objects it
applies (labels, which also find a collection's existing items), where the owner's reads are
routed from (`ref`, the key of its watches) and as whom it reads. How what it applies is kept
is the owner's ownership (kro.engine.ownership); the engine keeps the owner's latest copy as
the ownership writes its record.
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
        """The owner's resource (the ApplySet parent's)."""

    @property
    def ref(self) -> ObjectRef:
        """The owner as the watch coordinator knows it: changes of what a pass reads are
        routed back to it."""

    def child_labels(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        """Labels of every object applied for `node_id` (merged over the template's)."""

    def child_annotations(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        """Annotations of every object applied for `node_id` (merged over the template's)."""

    @property
    def foreign_managers(self) -> tuple[str, ...]:
        """Field-manager prefixes of engines whose objects this owner must never take over:
        a live object one of them manages holds the node back instead of being applied."""

    def collection_selector(self, owner: Mapping[str, Any], node_id: str) -> str:
        """The label selector that finds the existing items of collection `node_id`."""

    @property
    def reads_in_namespace(self) -> bool:
        """The owner reads as a namespace's identity (a `Graph`'s ServiceAccount), which may
        not list across namespaces: a collection whose items share one namespace is listed
        there."""
