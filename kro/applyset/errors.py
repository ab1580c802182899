"""kro.applyset.errors: what the ApplySet applier, pruner and deleter raise or report.

API failures stay `kro.runtime.errors.KubeError`s: reported per resource in results (apply,
prune, deletion), or raised when they make the whole pass meaningless (listing members,
writing the parent's inventory). Messages name objects, never their contents, so Secret data
cannot leak into conditions or logs.
"""

from __future__ import annotations

from collections.abc import Sequence

from kro.runtime.gvk import GVK

__all__ = [
    "ApplySetError",
    "DuplicateResources",
    "InvalidInventory",
    "OwnershipConflict",
    "ReleaseFailed",
]


class ApplySetError(Exception):
    """Base of the errors this package defines."""


class InvalidInventory(ApplySetError):
    """The parent's ApplySet metadata cannot be trusted. No retry helps until someone fixes the
    labels/annotations (or removes them all, for a parent that never applied anything).

    key: the label or annotation at fault; reason: what is wrong with it; context: the phase
    that refused to go on (deletion reports `validate deletion inventory: <reason>`, D-02).
    """

    def __init__(self, *, key: str, reason: str, context: str = "") -> None:
        self.key = key
        self.reason = reason
        self.context = context
        super().__init__(f"{context}: {reason}" if context else reason)


class DuplicateResources(ApplySetError):
    """Two resource IDs render the same group/version/kind/namespace/name (R-11).

    conflicts: (later resource ID, first resource ID) pairs, in batch order. Raised before
    anything is written; the graph or the data must change for a retry to help.
    """

    def __init__(self, conflicts: Sequence[tuple[str, str]]) -> None:
        self.conflicts = tuple(conflicts)
        joined = ", ".join(f"resourceID: {b} conflicts with resourceID: {a}" for b, a in conflicts)
        super().__init__(f"found resources with conflicts: {joined}")


class OwnershipConflict(ApplySetError):
    """The live object carries another ApplySet's `part-of` label, so applying would steal it
    (R-12, N-13). Reported for that resource only; nothing is written to it."""

    def __init__(self, namespace: str, name: str, gvk: GVK, owner: str, applyset_id: str) -> None:
        super().__init__(
            f"resource belongs to a different ApplySet: {namespace}/{name} ({gvk}) belongs to "
            f'ApplySet "{owner}", cannot reassign to "{applyset_id}"'
        )


class ReleaseFailed(ApplySetError):
    """Prune could not release orphans whose policy is `Orphaned` (V-36): unlike a delete that
    failed, the pass reports it as its error. The messages name each object and start with
    `release orphan`; the inventory was not shrunk, so the next pass finds them again."""

    def __init__(self, messages: Sequence[str]) -> None:
        super().__init__("; ".join(messages))
