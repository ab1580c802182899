"""kro.engine.results: what one pass of the engine found, node by node, as plain values.

Every consumer reads these and nothing else (conditions, `state`, Events, failure counters,
`kro explain`, the pass's metrics), so what users see cannot drift apart. A node's `state` is
upstream's (NODE_STATE_*), `reason` a stable CamelCase word (`NodeReason`), `message` the
sentence a user reads; `expression`, `field_path`, `waiting_on` and `missing` are filled in for
evaluation errors, and for waiting nodes when the pass diagnoses (`kro explain`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kro.api.names import (
    NODE_STATE_ERROR,
    NODE_STATE_IN_PROGRESS,
)
from kro.api.objects import metadata as _meta

__all__ = [
    "MissingField",
    "NodeReason",
    "NodeResult",
    "ObjectId",
    "PassCounts",
    "PassResult",
    "object_id",
]


class NodeReason(StrEnum):
    """Why a node is in its state; one word per distinct situation a user can act on."""

    READY = "Ready"  # applied (or found) and every readyWhen holds
    NOT_READY = "NotReady"  # exists, a readyWhen does not hold yet
    WAITING = "Waiting"  # cannot be rendered or decided yet: data it reads does not exist
    SCHEMA_PENDING = "SchemaPending"  # a deferred node whose kind is not served yet
    EXCLUDED = "Excluded"  # includeWhen is false, or a node it depends on is excluded
    NOT_FOUND = "NotFound"  # an external reference whose object does not exist
    NOT_CREATED = "NotCreated"  # dry run: the object does not exist; a pass would create it
    DELETING = "Deleting"  # the live object is terminating; the pass waits for it to go
    EVALUATION_FAILED = "EvaluationFailed"  # an expression failed
    APPLY_FAILED = "ApplyFailed"  # the API server refused the object
    CLUSTER_NOT_FOUND = "ClusterNotFound"  # the target names no registered, Ready cluster
    CLUSTER_FORBIDDEN = "ClusterForbidden"  # the owner may not reach the cluster (M-13)
    CLUSTER_UNREACHABLE = "ClusterUnreachable"  # the member did not answer (M-06)
    READ_FAILED = "ReadFailed"  # the live object could not be read (dry run: e.g. Forbidden)


@dataclass(frozen=True, slots=True)
class ObjectId:
    """Which Kubernetes object a node stands for (or which object a field is missing from)."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"


def object_id(obj: Mapping[str, Any]) -> ObjectId:
    meta = _meta(obj)
    return ObjectId(
        str(obj.get("apiVersion") or ""),
        str(obj.get("kind") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


@dataclass(frozen=True, slots=True)
class MissingField:
    """A field an expression reads that does not exist (yet): its `node` (`schema` for the
    owner), the `path` part that is absent (`data.token`), and the object looked in."""

    node: str
    path: str
    obj: ObjectId | None = None

    def __str__(self) -> str:
        where = f'{self.obj} (node "{self.node}")' if self.obj else f'node "{self.node}"'
        if self.node == "schema":
            where = f"the instance ({self.obj})" if self.obj else "the instance"
        return f'field "{self.path}" of {where}'


@dataclass(frozen=True, slots=True)
class NodeResult:
    """One node's outcome in one pass."""

    id: str
    state: str
    reason: NodeReason
    message: str = ""
    objects: tuple[ObjectId, ...] = ()
    expression: str = ""
    field_path: str = ""
    waiting_on: str = ""
    missing: MissingField | None = None
    errors: tuple[BaseException, ...] = ()
    """The API server's refusals of this node's objects (ApplyFailed), as raised."""
    exists: bool = False
    """Every object of the node exists (read, or answered by the apply)."""
    clusters: tuple[str, ...] = ()
    """The clusters of the node's objects, each once ("" the owner's); empty when all are in the
    owner's cluster (M-11)."""

    @property
    def failed(self) -> bool:
        return self.state == NODE_STATE_ERROR


@dataclass(slots=True)
class PassCounts:
    """What a pass evaluated, for the runtime_* metrics of upstream's per-instance runtime."""

    ignored_checks: int = 0
    ignored: int = 0
    ready_checks: int = 0
    not_ready: int = 0
    node_evals: int = 0
    node_eval_errors: int = 0
    node_eval_durations_s: list[float] = field(default_factory=list)
    collection_sizes: list[int] = field(default_factory=list)


@dataclass(slots=True)
class PassResult:
    """One pass over one owner: a result per node, and what the pass did to the cluster."""

    nodes: dict[str, NodeResult] = field(default_factory=dict)
    mutated: bool = False  # a create, update, prune or inventory write happened
    pruned: bool = False  # the prune deleted something
    retry: bool = False  # a prune conflict or failure: only a later pass can finish it
    retry_after_s: float | None = None  # a contested field waits out a backoff
    contests: list[Any] = field(default_factory=list)  # kro.applyset.Contest, fresh or not
    stale: set[str] = field(default_factory=set)  # rendered from a dependency it then changed
    deleting: NodeResult | None = None  # a child is terminating: the pass stopped there
    failure: NodeResult | None = None  # an evaluation failed: the pass stopped there
    remote: bool = False  # read or applied in a member cluster, whose caches no one consults
    unreachable: set[str] = field(default_factory=set)  # targets that named no usable cluster
    counts: PassCounts = field(default_factory=PassCounts)

    def set(self, result: NodeResult) -> None:
        self.nodes[result.id] = result

    def __iter__(self) -> Iterator[NodeResult]:
        return iter(self.nodes.values())

    @property
    def pending(self) -> bool:
        """Some node could not be rendered or decided yet (its data does not exist)."""
        return any(r.state == NODE_STATE_IN_PROGRESS for r in self.nodes.values())

    @property
    def apply_errors(self) -> bool:
        return any(r.reason is NodeReason.APPLY_FAILED for r in self.nodes.values())

    def settles(self) -> bool:
        """Whether the next pass, with nothing changed meanwhile, would do nothing."""
        return not (
            self.pending
            or self.apply_errors
            or self.retry
            or self.contests
            or self.pruned
            or self.stale
            or self.deleting
            or self.failure
            or self.retry_after_s is not None
            or self.remote
        )
