"""kro.cli.explain_report: what `kro explain` found, as plain frozen values.

The readers fill these in and the formatter prints them: as data, apart from I/O and printing,
the findings are tested with fakes and `-o json` carries exactly what the text shows. What each
`NodeStatus` means to a user is docs/explain.md's table.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kro.controllers.graph.inventory import Entry
from kro.engine.ownership import Held as MemberReport
from kro.engine.results import MissingField, ObjectId

# re-exported: the report quotes the engine's values (a member as the teardown's plan holds it)
__all__ = ["MemberReport", "MissingField", "ObjectId", "held_label"]


def held_label(member: MemberReport) -> str:
    """A child left by a deletion, in words: the object, its node, its member cluster (M-16)."""
    node = f' (node "{member.node}")' if member.node else ""
    where = f' in cluster "{member.cluster}"' if member.cluster else ""
    return f"{member.obj}{node}{where}"


class NodeStatus(StrEnum):
    READY = "ready"
    APPLIED = "applied"
    WAITING = "waiting"
    EXCLUDED = "excluded"
    NOT_READY = "not-ready"
    MISSING = "missing"
    DELETING = "deleting"
    ERROR = "error"
    UNKNOWN = "unknown"

    @property
    def is_ok(self) -> bool:
        """Nothing for the user to do about this node."""
        return self in (NodeStatus.READY, NodeStatus.APPLIED, NodeStatus.EXCLUDED)


@dataclass(frozen=True, slots=True)
class NodeReport:
    """One node of the graph and its state in this instance.

    reason: one line saying why the node is in its state (always set unless ready/applied).
    expression: the CEL expression concerned (readyWhen, includeWhen or a template field).
    field_path: where in the template that expression sits, when it is a template field.
    waiting_on: the node this one waits for, when the cause is another node.
    message: text recorded by kro or the API server (a 422's message, for example).
    clusters: the clusters the node's objects live in (M-07), the hub under its local name;
        empty for a graph without targets, which names no cluster.
    """

    id: str
    type: str
    api_version: str
    kind: str
    wave: int
    dependencies: tuple[str, ...]
    status: NodeStatus
    objects: tuple[ObjectId, ...] = ()
    reason: str = ""
    expression: str = ""
    field_path: str = ""
    waiting_on: str = ""
    missing: MissingField | None = None
    message: str = ""
    clusters: tuple[str, ...] = ()

    @property
    def is_root_cause(self) -> bool:
        """A problem of its own, not only the echo of a node it waits for. A node that could
        not be read (`unknown`) is not known to have a problem: it is named only when nothing
        else explains the instance's state."""
        return (
            not self.status.is_ok and not self.waiting_on and self.status is not NodeStatus.UNKNOWN
        )


@dataclass(frozen=True, slots=True)
class ConditionReport:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    observed_generation: int | None = None


@dataclass(frozen=True, slots=True)
class EventReport:
    """A Warning Event about the instance or one of its children."""

    object: str
    reason: str
    message: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class DeletionReport:
    """An instance being deleted: where kro's reverse-wave deletion stands and what blocks it.

    wave: the apply-order wave being deleted (the highest still present); None when no child
    is left. blockers: one line per object or finalizer that holds the deletion up.
    """

    wave: int | None
    members: tuple[MemberReport, ...]
    blockers: tuple[str, ...]
    instance_finalizers: tuple[str, ...]
    recorded: str = ""


@dataclass(frozen=True, slots=True)
class GraphSource:
    """Where the graph came from: the latest GraphRevision (what kro runs) or the RGD spec."""

    rgd: str
    rgd_state: str = ""
    revision: int | None = None
    revision_name: str = ""
    from_revision: bool = False


@dataclass(frozen=True, slots=True)
class ShardReport:
    """Which sharded replica (`kro controller --shards=auto`) owns the instance's namespace.

    group, lease_namespace: the shard group (label `kro.run/shard-group`) and where its member
    Leases live. members: the live member Leases, expired: the others. owner: the holder
    identity of the owning member ("" when no member is live), owner_lease its Lease,
    owner_range its hash range. handover: not every live member has acknowledged the view of
    these members yet, so the owner may not have taken its range yet.
    """

    group: str
    lease_namespace: str
    namespace: str
    namespace_hash: str
    members: tuple[str, ...] = ()
    expired: tuple[str, ...] = ()
    owner: str = ""
    owner_lease: str = ""
    owner_range: str = ""
    handover: bool = False


@dataclass(frozen=True, slots=True)
class InstanceReport:
    """Everything `kro explain KIND/NAME` prints."""

    root_cause: str
    api_version: str
    kind: str
    namespace: str
    name: str
    state: str
    generation: int | None
    source: GraphSource | None
    nodes: tuple[NodeReport, ...] = ()
    deletion: DeletionReport | None = None
    conditions: tuple[ConditionReport, ...] = ()
    events: tuple[EventReport, ...] = ()
    notes: tuple[str, ...] = ()
    shards: tuple[ShardReport, ...] = ()
    would_write: tuple[str, ...] = ()
    """What kro's next pass would write (`create ConfigMap ns/x`, `apply ...`), from the dry run."""


@dataclass(frozen=True, slots=True)
class BuildFailure:
    """Why the RGD's graph does not compile, with where (from the build error's fields)."""

    message: str
    resource_id: str = ""
    field_path: str = ""
    expression: str = ""
    rule: str = ""


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One resource of an RGD's compiled graph (for `kro explain rgd`)."""

    id: str
    api_version: str
    kind: str
    wave: int
    dependencies: tuple[str, ...] = ()
    conditional: bool = False


@dataclass(frozen=True, slots=True)
class RGDReport:
    """Everything `kro explain rgd NAME` prints."""

    root_cause: str
    name: str
    state: str
    generation: int | None
    kind: str = ""
    deleting: bool = False
    finalizers: tuple[str, ...] = ()
    conditions: tuple[ConditionReport, ...] = ()
    build: BuildFailure | None = None
    revisions: tuple[str, ...] = ()
    graph: tuple[GraphNode, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GraphReport:
    """Everything `kro explain graph NAME` prints (kro.cli.explain_graph).

    service_account: the user the Graph's spec says kro applies as; applied_service_account:
    the one its last apply that reached the cluster ran as (teardown runs as this one).
    compile_error: the Graph does not compile with the cluster's schemas now (no dry run).
    """

    root_cause: str
    namespace: str
    name: str
    generation: int | None
    service_account: str
    applied_service_account: str = ""
    deleting: bool = False
    compile_error: str = ""
    nodes: tuple[NodeReport, ...] = ()
    would_write: tuple[str, ...] = ()
    managed_resources: tuple[Entry, ...] = ()
    """`status.managedResources`: what teardown deletes (an entry without a UID never)."""
    conditions: tuple[ConditionReport, ...] = ()
    events: tuple[EventReport, ...] = ()
    notes: tuple[str, ...] = ()
