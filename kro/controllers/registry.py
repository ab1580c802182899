"""kro.controllers.registry: the in-memory registry of compiled graph revisions (N-04).

The GraphRevision controller compiles each GraphRevision and records the outcome here; the RGD
controller waits for its latest revision to become Active before serving; instance reconciles
always take the *latest* revision of their RGD and never fall back to an older one (N-07): a
Failed latest revision stops instances until the RGD is fixed, while an invalid RGD update never
issues a revision at all, so the last good one keeps serving.

The registry is process-local by design: after a restart every GraphRevision is listed again and
recompiled ("warm-up"), so the registry never disagrees with the cluster for long.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kro.graph.model import Graph


class RevisionState(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class RevisionEntry:
    """One revision of one RGD: its spec hash, state and, when Active, its compiled graph."""

    rgd_name: str
    revision: int
    spec_hash: str
    state: RevisionState
    graph: Graph | None = None
    error: str = ""


class RevisionRegistry:
    """rgd name -> revision number -> entry. Single event loop; no locking needed."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[int, RevisionEntry]] = {}

    def put_pending(self, rgd_name: str, revision: int, spec_hash: str) -> RevisionEntry:
        """Record a revision as compiling, unless it is already known."""
        revisions = self._entries.setdefault(rgd_name, {})
        entry = revisions.get(revision)
        if entry is None:
            entry = RevisionEntry(rgd_name, revision, spec_hash, RevisionState.PENDING)
            revisions[revision] = entry
        return entry

    def activate(self, rgd_name: str, revision: int, spec_hash: str, graph: Graph) -> None:
        self._entries.setdefault(rgd_name, {})[revision] = RevisionEntry(
            rgd_name, revision, spec_hash, RevisionState.ACTIVE, graph
        )

    def fail(self, rgd_name: str, revision: int, spec_hash: str, error: str) -> None:
        self._entries.setdefault(rgd_name, {})[revision] = RevisionEntry(
            rgd_name, revision, spec_hash, RevisionState.FAILED, None, error
        )

    def evict(self, rgd_name: str, revision: int) -> None:
        revisions = self._entries.get(rgd_name)
        if revisions is not None:
            revisions.pop(revision, None)
            if not revisions:
                del self._entries[rgd_name]

    def drop(self, rgd_name: str) -> None:
        """Forget every revision of an RGD (no GraphRevision of it exists any more)."""
        self._entries.pop(rgd_name, None)

    def get(self, rgd_name: str, revision: int) -> RevisionEntry | None:
        return self._entries.get(rgd_name, {}).get(revision)

    def latest(self, rgd_name: str) -> RevisionEntry | None:
        """The highest-numbered revision known for `rgd_name`, whatever its state."""
        revisions = self._entries.get(rgd_name)
        if not revisions:
            return None
        return revisions[max(revisions)]

    def counts(self) -> dict[RevisionState, int]:
        """Entries per state, for the graph_revision_registry_entries gauge."""
        out = dict.fromkeys(RevisionState, 0)
        for revisions in self._entries.values():
            for entry in revisions.values():
                out[entry.state] += 1
        return out
