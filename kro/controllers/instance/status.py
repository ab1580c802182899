"""kro.controllers.instance.status: the instance's status — built-in conditions, author
conditions, `state` — computed from scratch every pass and written only when it changed.

Rules (reference §1.J, §1.K): built-in dependents InstanceManaged, GraphResolved, ResourcesReady
under a root Ready (T-07, T-08), and WatchesHealthy beside them, listed between ResourcesReady
and Ready but not aggregated (V-14); `lastTransitionTime` moves only when a status flips (T-09);
`state` is ACTIVE whenever Ready is True at the current generation, else the node-derived state
(T-10); with an author `conditions:` block only author conditions reach the wire (K-04), stamped
per K-06..K-09. The write is an UpdateStatus of the whole status, skipped when equal (R-18).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from kro.api.conditions import (
    Condition,
    aggregate_ready,
    awaiting_reconciliation,
    get_condition,
    now_rfc3339,
    ordered_conditions,
    set_condition,
)
from kro.api.names import (
    ANNOTATION_RECONCILE,
    CONDITION_FIELD_CONFLICT,
    CONDITION_READY,
    CONDITION_RESOURCES_READY,
    INSTANCE_DEPENDENT_CONDITIONS,
    INSTANCE_STATE_ACTIVE,
    INSTANCE_STATE_ERROR,
    INSTANCE_STATE_IN_PROGRESS,
    INSTANCE_STATUS_CONDITIONS,
    NODE_STATE_ERROR,
    REASON_FIELD_YIELDED,
    RECONCILE_DISABLED,
    RECONCILE_SUSPENDED,
    STATUS_TRUE,
)

if TYPE_CHECKING:  # annotations only: the evaluator loads the CEL engine
    from kro.applyset import Contest
    from kro.engine.results import NodeResult
    from kro.graph.evaluate import ConditionResults


class InstanceStatus:
    """Accumulates one pass's built-in conditions over the previous wire status."""

    def __init__(self, instance: Mapping[str, Any], *, now: str | None = None) -> None:
        self.instance = instance
        self.previous: Mapping[str, Any] = instance.get("status") or {}
        generation = (instance.get("metadata") or {}).get("generation")
        self.generation = generation if isinstance(generation, int) else None
        self.now = now or now_rfc3339()
        self._created = str((instance.get("metadata") or {}).get("creationTimestamp") or self.now)
        self._builtin = self._previous(*INSTANCE_STATUS_CONDITIONS)
        self._initialise_missing()
        self._extra = self._previous(CONDITION_FIELD_CONFLICT)

    def _previous(self, *types: str) -> dict[str, Any]:
        """The previous conditions of `types`, copied (`set_condition` changes them in place)."""
        conditions = self.previous.get("conditions") or []
        return {
            "conditions": [
                copy.deepcopy(c)
                for c in conditions
                if isinstance(c, Mapping) and c.get("type") in types
            ]
        }

    def _set_in(
        self, holder: dict[str, Any], condition_type: str, status: str, reason: str, message: str
    ) -> None:
        set_condition(
            holder,
            condition_type,
            status,
            now=self.now,
            reason=reason,
            message=message,
            observed_generation=self.generation,
        )

    def set_field_conflict(self, yielded: Sequence[Contest]) -> None:
        """kro-py's FieldConflict condition: True while fields are `yielded` to another field
        manager (kro.applyset.contest), naming each one's resource id, field path and manager,
        and how to end the conflict for good; absent otherwise. It is not a dependent of Ready:
        yielding ends a fight, it does not make the instance fail."""
        if not yielded:
            self._extra["conditions"] = []
            return
        fields = "; ".join(
            f'resource "{c.resource_id}" field {c.path} '
            f'(rewritten by field manager "{c.manager}" {c.rounds} times)'
            for c in yielded
        )
        noun = "field" if len(yielded) == 1 else "fields"
        message = (
            f"kro stopped applying {len(yielded)} {noun} that another field manager keeps "
            f"changing: {fields}. {FIELD_CONFLICT_HINT}"
        )
        self._set_in(
            self._extra, CONDITION_FIELD_CONFLICT, STATUS_TRUE, REASON_FIELD_YIELDED, message
        )

    def _initialise_missing(self) -> None:
        """Every built-in exists from the first pass on, `Unknown` until set (T-07, V-14).

        They are added in `INSTANCE_STATUS_CONDITIONS` order, stamped with the object's
        creationTimestamp (T-09): on a new instance all conditions then tie on their transition
        time and the stable wire sort keeps InstanceManaged, GraphResolved, ResourcesReady,
        WatchesHealthy, Ready, whichever of them a pass happens to set first.
        """
        conditions = self._builtin["conditions"]
        present = {c.get("type") for c in conditions}
        for condition_type in INSTANCE_STATUS_CONDITIONS:
            if condition_type in present:
                continue
            condition: dict[str, Any] = dict(awaiting_reconciliation(condition_type))
            condition["lastTransitionTime"] = self._created
            if self.generation is not None:
                condition["observedGeneration"] = self.generation
            conditions.append(condition)

    def set(self, condition_type: str, status: str, reason: str, message: str = "") -> None:
        self._set_in(self._builtin, condition_type, status, reason, message)

    def put(self, condition: Condition) -> None:
        """`set` from a condition computed elsewhere (type, status, reason, message)."""
        self.set(
            str(condition["type"]),
            str(condition["status"]),
            str(condition.get("reason", "")),
            str(condition.get("message", "")),
        )

    def builtin_conditions(self) -> list[Condition]:
        """The five built-ins in wire order, root Ready computed from its dependents."""
        conditions = cast(list[Condition], self._builtin["conditions"])
        root = aggregate_ready(
            conditions, INSTANCE_DEPENDENT_CONDITIONS, generation=self.generation
        )
        holder = self._previous(CONDITION_READY)
        reason, message = str(root.get("reason", "")), str(root.get("message", ""))
        self._set_in(holder, CONDITION_READY, str(root["status"]), reason, message)
        return ordered_conditions(
            [*conditions, *self._extra["conditions"], *holder["conditions"]],
            dependents=INSTANCE_STATUS_CONDITIONS,
        )

    def state(self, node_state: str) -> str:
        """ACTIVE whenever root Ready is True at this generation, else `node_state` (T-10)."""
        ready = next(c for c in self.builtin_conditions() if c["type"] == CONDITION_READY)
        return INSTANCE_STATE_ACTIVE if ready["status"] == STATUS_TRUE else node_state

    def build(
        self,
        node_state: str,
        fields: Mapping[str, Any] | None,
        author: ConditionResults | None = None,
    ) -> dict[str, Any]:
        """The complete status to write. `fields` None keeps the previous projections."""
        if fields is None:
            fields = {k: v for k, v in self.previous.items() if k not in ("state", "conditions")}
        status: dict[str, Any] = dict(fields)
        state = self.state(node_state)
        if author is None:
            status["conditions"] = self.builtin_conditions()
        else:
            conditions, degraded = self._stamp_author(author)
            status["conditions"] = conditions
            if degraded:
                state = INSTANCE_STATE_ERROR
        status["state"] = state
        return status

    def _stamp_author(self, author: ConditionResults) -> tuple[list[dict[str, Any]], bool]:
        """K-06..K-09: stamp, drop duplicated types, keep unproduced types when degraded."""
        previous = {
            str(c.get("type")): c
            for c in self.previous.get("conditions") or []
            if isinstance(c, Mapping)
        }
        counts = Counter(str(item.get("type")) for item in author.conditions)
        duplicated = {t for t, n in counts.items() if n > 1}
        degraded = bool(duplicated or author.errors)
        out: list[dict[str, Any]] = []
        for item in author.conditions:
            kind = str(item.get("type"))
            if kind in duplicated:
                continue
            stamped: dict[str, Any] = {"type": kind, "status": str(item.get("status", ""))}
            for key in ("reason", "message"):
                if item.get(key):
                    stamped[key] = str(item[key])
            if self.generation is not None:
                stamped["observedGeneration"] = self.generation
            old = previous.get(kind)
            same = old is not None and old.get("status") == stamped["status"]
            stamped["lastTransitionTime"] = (
                old.get("lastTransitionTime", self.now) if same and old else self.now
            )
            out.append(stamped)
        if author.pending or degraded:
            produced = {c["type"] for c in out} | duplicated
            out.extend(dict(c) for t, c in previous.items() if t not in produced)
        return out, degraded


def node_state_summary(states: Sequence[str], terminal: Sequence[str]) -> str:
    """ERROR if any node errored, ACTIVE if all are terminal, else IN_PROGRESS (R-15)."""
    if any(s == NODE_STATE_ERROR for s in states):
        return INSTANCE_STATE_ERROR
    if all(s in terminal for s in states):
        return INSTANCE_STATE_ACTIVE
    return INSTANCE_STATE_IN_PROGRESS


def is_suspended(instance: Mapping[str, Any]) -> bool:
    """`kro.run/reconcile: suspended` (or legacy `disabled`), case-insensitive (R-07)."""
    annotations = (instance.get("metadata") or {}).get("annotations") or {}
    value = str(annotations.get(ANNOTATION_RECONCILE, "")).lower()
    return value in (RECONCILE_SUSPENDED, RECONCILE_DISABLED)


# -- ResourcesReady's messages: written here, and read back by `kro explain` ---------------------

FIELD_CONFLICT_HINT: Final = (
    "Remove the field from the resource template (or set it to the value that manager "
    "writes) so that kro applies it again."
)
RESOURCE_ERROR_PREFIX: Final = "resource error: "
AWAITING_PREFIX: Final = "awaiting resource readiness: "
PASS_FAILED_PREFIX: Final = "resource reconciliation failed: "


def node_reasons(results: Iterable[NodeResult]) -> str:
    """`<node>: <message>; ...` for every node with something to say, in the pass's order."""
    return "; ".join(f"{r.id}: {r.message}" for r in results if r.message)


def recorded_apply_errors(instance: Mapping[str, Any], node_ids: Iterable[str]) -> dict[str, str]:
    """Per node, the API server's refusal that `ResourcesReady` records (`resource error: a:
    msg; b: msg`, from `node_reasons`): the one record of an apply's answer that outlives the
    pass, which `kro explain`'s dry run cannot send to find out. Node ids are matched longest
    first, so `db` is not taken for the start of `db-config`."""
    condition = get_condition(instance.get("status"), CONDITION_RESOURCES_READY)
    message = str((condition or {}).get("message") or "")
    ids = sorted(node_ids, key=len, reverse=True)
    if not message.startswith(RESOURCE_ERROR_PREFIX) or not ids:
        return {}
    body = message.removeprefix(RESOURCE_ERROR_PREFIX)
    marker = re.compile(r"(?:^|; )(" + "|".join(re.escape(i) for i in ids) + r"): ")
    found = list(marker.finditer(body))
    errors: dict[str, str] = {}
    for position, match in enumerate(found):
        end = found[position + 1].start() if position + 1 < len(found) else len(body)
        errors[match.group(1)] = body[match.end() : end]
    return errors
