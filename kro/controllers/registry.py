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

from kro.controllers.metrics import RegistryMetrics
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
    """rgd name -> revision number -> entry. Single event loop; no locking needed.

    Every change is reflected in the graph_revision_registry_* metrics (rows 55-57): entries
    per state, transitions between states of an existing entry, and evictions.
    """

    def __init__(self, metrics: RegistryMetrics | None = None) -> None:
        self._entries: dict[str, dict[int, RevisionEntry]] = {}
        self._metrics = metrics or RegistryMetrics()
        self._record()

    def put_pending(self, rgd_name: str, revision: int, spec_hash: str) -> RevisionEntry:
        """Record a revision as compiling, unless it is already known."""
        revisions = self._entries.setdefault(rgd_name, {})
        entry = revisions.get(revision)
        if entry is None:
            entry = RevisionEntry(rgd_name, revision, spec_hash, RevisionState.PENDING)
            revisions[revision] = entry
            self._record()
        return entry

    def activate(self, rgd_name: str, revision: int, spec_hash: str, graph: Graph) -> None:
        self._put(RevisionEntry(rgd_name, revision, spec_hash, RevisionState.ACTIVE, graph))

    def fail(self, rgd_name: str, revision: int, spec_hash: str, error: str) -> None:
        self._put(RevisionEntry(rgd_name, revision, spec_hash, RevisionState.FAILED, None, error))

    def _put(self, entry: RevisionEntry) -> None:
        revisions = self._entries.setdefault(entry.rgd_name, {})
        previous = revisions.get(entry.revision)
        revisions[entry.revision] = entry
        if previous is not None and previous.state is not entry.state:
            labels = {"from": previous.state.value, "to": entry.state.value}
            self._metrics.transitions.inc(1.0, **labels)
        self._record()

    def evict(self, rgd_name: str, revision: int) -> None:
        revisions = self._entries.get(rgd_name)
        if revisions is not None and revisions.pop(revision, None) is not None:
            self._metrics.evictions.inc()
            if not revisions:
                del self._entries[rgd_name]
            self._record()

    def drop(self, rgd_name: str) -> None:
        """Forget every revision of an RGD (no GraphRevision of it exists any more)."""
        dropped = self._entries.pop(rgd_name, None)
        if dropped:
            self._metrics.evictions.inc(len(dropped))
            self._record()

    def _record(self) -> None:
        self._metrics.record_counts({state.value: n for state, n in self.counts().items()})

    def get(self, rgd_name: str, revision: int) -> RevisionEntry | None:
        return self._entries.get(rgd_name, {}).get(revision)

    def latest(self, rgd_name: str) -> RevisionEntry | None:
        """The highest-numbered revision known for `rgd_name`, whatever its state."""
        revisions = self._entries.get(rgd_name)
        if not revisions:
            return None
        return revisions[max(revisions)]

    def deferring(self, group: str) -> list[RevisionEntry]:
        """Active revisions with a deferred node waiting for a kind of `group`
        (DeferredSchemaResolution): compiled again, typed, when a CRD of the group appears."""
        return [
            entry
            for revisions in self._entries.values()
            for entry in revisions.values()
            if entry.graph is not None
            and any(n.deferred and n.gvk.group == group for n in entry.graph.nodes.values())
        ]

    def counts(self) -> dict[RevisionState, int]:
        """Entries per state, for the graph_revision_registry_entries gauge."""
        out = dict.fromkeys(RevisionState, 0)
        for revisions in self._entries.values():
            for entry in revisions.values():
                out[entry.state] += 1
        return out
