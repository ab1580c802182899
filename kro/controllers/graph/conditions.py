"""kro.controllers.graph.conditions: what a Graph's conditions say after a pass (V-59, V-60).

`Accepted` says whether the Graph compiled; `ResourcesConverged` what the pass found, from its
node results in topological order:
1. an error: `FieldManagerConflict` when another manager holds the fields, else `ApplyFailed`;
2. a failed prune (`PruneFailed`) or release of a contribution (`ReleaseFailed`);
3. the first waiting node: `SchemaPending` (before any other) while a deferred node waits
   for its kind to be served (DeferredSchemaResolution), `DataPending` while an expression
   reads data not there yet, `WaitingForReadiness` while a readyWhen is false or a referenced
   object does not exist;
4. else `Applied`.
`Ready` is True when both are, and otherwise copies the least healthy one. Waiting reasons back
off per Graph from 1 s to 5 minutes; failures take the rate-limited retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from kro.api.graph import (
    MESSAGE_APPLIED,
    REASON_APPLIED,
    REASON_APPLY_FAILED,
    REASON_DATA_PENDING,
    REASON_FIELD_MANAGER_CONFLICT,
    REASON_PRUNE_FAILED,
    REASON_RELEASE_FAILED,
    REASON_SCHEMA_PENDING,
    REASON_WAITING_FOR_READINESS,
)
from kro.api.names import (
    NODE_STATE_DELETING,
    NODE_STATE_ERROR,
    NODE_STATE_IN_PROGRESS,
    NODE_STATE_WAITING_FOR_READINESS,
)
from kro.controllers.graph.inventory import FieldManagerConflict
from kro.controllers.owner import CLUSTER_REASONS
from kro.engine.results import NodeReason, NodeResult

__all__ = ["WAITING_REASONS", "Verdict", "converged"]

WAITING_REASONS: Final = frozenset(
    {
        REASON_WAITING_FOR_READINESS,
        REASON_DATA_PENDING,
        REASON_FIELD_MANAGER_CONFLICT,
        REASON_SCHEMA_PENDING,
    }
)
"""V-60: reasons retried with the Graph's own backoff rather than the error path."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """`ResourcesConverged` as a pass leaves it."""

    ok: bool
    reason: str
    message: str

    @property
    def waiting(self) -> bool:
        return self.reason in WAITING_REASONS


def converged(
    results: Sequence[NodeResult],
    prune_errors: Sequence[str] = (),
    release_errors: Sequence[str] = (),
    *,
    failure: str = "",
) -> Verdict:
    """`results` in topological order; `failure`: a pass that stopped with a hard error."""
    if failure:
        return Verdict(False, REASON_APPLY_FAILED, failure)
    for result in results:
        if result.state == NODE_STATE_ERROR:
            conflict = any(isinstance(e, FieldManagerConflict) for e in result.errors)
            reason = REASON_FIELD_MANAGER_CONFLICT if conflict else REASON_APPLY_FAILED
            cluster = result.reason in CLUSTER_REASONS
            return _node(result, result.reason.value if cluster else reason)
    if prune_errors:
        return Verdict(False, REASON_PRUNE_FAILED, "; ".join(prune_errors))
    if release_errors:
        return Verdict(False, REASON_RELEASE_FAILED, "; ".join(release_errors))
    return _waiting(results) or Verdict(True, REASON_APPLIED, MESSAGE_APPLIED)


def _waiting(results: Sequence[NodeResult]) -> Verdict | None:
    """The first waiting node's verdict, a deferred node's `SchemaPending` first (what waits
    on data usually waits on that node); None when nothing waits."""
    for result in results:
        if result.reason is NodeReason.SCHEMA_PENDING:
            return _node(result, REASON_SCHEMA_PENDING)
    for result in results:
        if result.state == NODE_STATE_IN_PROGRESS:
            return _node(result, REASON_DATA_PENDING)
        if result.state in (NODE_STATE_WAITING_FOR_READINESS, NODE_STATE_DELETING):
            return _node(result, REASON_WAITING_FOR_READINESS)
    return None


def _node(result: NodeResult, reason: str) -> Verdict:
    return Verdict(False, reason, f'node "{result.id}": {result.message}')
