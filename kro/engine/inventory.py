"""kro.engine.inventory: an owner that keeps the record of what it applied itself.

An RGD instance records its children as an ApplySet (kro.applyset: labels on the children, an
inventory on the instance) and the pass drives that directly. A `Graph` has no ApplySet: its
objects carry no ApplySet labels and it records them in its own status (`managedResources`),
written ahead of each apply so that a crash between an apply and the status write leaves the
teardown a superset, never less (V-57). Such an owner hands the pass an `OwnedInventory`: the
pass still resolves, reads, decides readiness and says when a prune is safe; the inventory
applies the batch and prunes what the pass no longer renders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from kro.applyset import AppliedResource, Desired

__all__ = ["OwnedInventory"]


class OwnedInventory(Protocol):
    async def apply(
        self, owner_obj: dict[str, Any], batch: Sequence[Desired]
    ) -> tuple[dict[str, Any], Sequence[AppliedResource]]:
        """Record the batch ahead, apply it; the owner as it now stands, and each outcome."""

    async def prune(
        self, owner_obj: dict[str, Any], keep_nodes: frozenset[str]
    ) -> tuple[dict[str, Any], bool]:
        """Delete what was recorded and not applied by this pass, except objects of
        `keep_nodes` (nodes this pass could not resolve: they may still render them).
        Returns the owner and whether anything was deleted."""
