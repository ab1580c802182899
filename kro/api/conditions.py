"""kro.api.conditions: read and write status conditions on plain status dicts.

RGDs, GraphRevisions and instances all carry `status.conditions` in the same shape (A-23) and
derive a root `Ready` condition from dependents with the same rules (T-08, P-08). These helpers
take the condition *type* as a parameter, so there is one function per operation, not per
condition; the type names themselves live in `kro.api.names`.

The helpers are pure: the caller passes `now` (an RFC3339 timestamp) rather than this module
reading a clock, so status computation stays deterministic and testable.

`set_condition` is the one door through which kro writes a condition, so it is where messages
are scrubbed of credentials and capped at `CONDITION_MESSAGE_LIMIT` bytes (4 KiB): a status is
readable by everyone who may read the object, and it is copied into every watch event of it.
The scrubber is `kro._redact` (shared with kro.runtime's Events and logs; this package may not
import kro.runtime).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Final, TypedDict, cast

from kro import _conditions as _shared
from kro._redact import CONDITION_MESSAGE_LIMIT as _LIMIT
from kro._redact import scrub
from kro.api.names import (
    CONDITION_READY,
    CONDITION_WATCHES_HEALTHY,
    MESSAGE_ALL_WATCHES_SYNCED,
    REASON_ALL_WATCHES_SYNCED,
    REASON_AWAITING_RECONCILIATION,
    REASON_READY,
    REASON_WATCH_BLOCKED,
    REASON_WATCHES_PENDING,
    STATUS_FALSE,
    STATUS_TRUE,
    STATUS_UNKNOWN,
)

now_rfc3339 = _shared.now_rfc3339
"""The current time as metav1.Time writes it, for every condition and timestamp kro writes."""

CONDITION_MESSAGE_LIMIT: Final = _LIMIT
"""Bytes a condition message may take; longer ones are cut and end in " [truncated]"."""


class Condition(TypedDict, total=False):
    """Wire shape of one condition; `type` and `status` are always present on kro's output."""

    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: int


def conditions_of(status: Mapping[str, Any] | None) -> list[Condition]:
    """The conditions list of a status dict (a new list; entries are the original dicts)."""
    return [cast(Condition, c) for c in _shared.conditions_of(status)]


def get_condition(status: Mapping[str, Any] | None, condition_type: str) -> Condition | None:
    """The first condition of this type, or None."""
    return cast(Condition | None, _shared.get_condition(status, condition_type))


def is_condition_true(
    status: Mapping[str, Any] | None, condition_type: str, *, generation: int | None = None
) -> bool:
    """True iff the condition is True and, when `generation` is given, observed at it (N-28)."""
    return _shared.is_condition_true(status, condition_type, generation=generation)


def set_condition(
    status: MutableMapping[str, Any],
    condition_type: str,
    condition_status: str,
    *,
    now: str,
    reason: str = "",
    message: str = "",
    observed_generation: int | None = None,
) -> bool:
    """Create or update a condition in place; returns whether anything changed.

    `lastTransitionTime` moves to `now` only when the status value changes (T-09), so a
    condition that is re-asserted keeps telling when it last flipped. `message` is stored
    scrubbed of credentials and cut to `CONDITION_MESSAGE_LIMIT` bytes; scrubbing is
    idempotent, so re-asserting the same message is still no change.
    """
    return _shared.set_condition(
        status,
        condition_type,
        condition_status,
        reason=reason,
        message=scrub(message, CONDITION_MESSAGE_LIMIT),
        observed_generation=observed_generation,
        now=now,
    )


def remove_condition(status: MutableMapping[str, Any], condition_type: str) -> bool:
    """Drop every condition of this type; returns whether one was present."""
    return _shared.remove_condition(status, condition_type)


def awaiting_reconciliation(condition_type: str) -> Condition:
    """The placeholder for a condition nobody has set yet (T-07)."""
    return {
        "type": condition_type,
        "status": STATUS_UNKNOWN,
        "reason": REASON_AWAITING_RECONCILIATION,
        "message": f'condition "{condition_type}" is awaiting reconciliation',
    }


def watches_healthy(
    blocked: Sequence[tuple[str, str]] = (), pending: Sequence[str] = ()
) -> Condition:
    """`WatchesHealthy` (V-14) from the kinds an object watches, named by resource plural:
    `blocked` pairs a kind whose list/watch the API server refuses with its answer, `pending`
    names kinds not listed yet. A refusal outranks a wait: it needs someone to act.

    Why a function of names and messages: instances and Graphs report the same condition
    from the same facts (kro.dynamic's WatchHealth), and kro.api must not know kro.dynamic.
    """
    if blocked:
        message = "; ".join(
            f"changes to {resource} are not detected: kro cannot list and watch them: {error}"
            for resource, error in blocked
        )
        return _watches(STATUS_FALSE, REASON_WATCH_BLOCKED, message)
    if pending:
        message = f"waiting for the initial list of {', '.join(pending)}"
        return _watches(STATUS_UNKNOWN, REASON_WATCHES_PENDING, message)
    return _watches(STATUS_TRUE, REASON_ALL_WATCHES_SYNCED, MESSAGE_ALL_WATCHES_SYNCED)


def _watches(status: str, reason: str, message: str) -> Condition:
    return {
        "type": CONDITION_WATCHES_HEALTHY,
        "status": status,
        "reason": reason,
        "message": message,
    }


def first_of_each_type(conditions: Sequence[Condition]) -> list[Condition]:
    """The conditions with every later duplicate of a type dropped (the first is the one
    `set_condition` updates). A status stored before its CRD declared conditions a list map
    keyed on `type` (V-05) may hold duplicates, which the API server now refuses to store."""
    seen: set[str] = set()
    unique: list[Condition] = []
    for condition in conditions:
        condition_type = str(condition.get("type"))
        if condition_type not in seen:
            seen.add(condition_type)
            unique.append(condition)
    return unique


def initialise_missing(
    status: MutableMapping[str, Any],
    condition_types: Sequence[str],
    *,
    created: str,
    observed_generation: int | None = None,
) -> None:
    """Add an `awaiting_reconciliation` placeholder for each type not present yet (T-07).

    Upstream's condition manager creates every dependent on the object's first status write,
    stamped with the object's creationTimestamp (T-09), so a reader always sees the whole set:
    an RGD whose graph never builds still lists GraphRevisionsResolved, KindReady and
    ControllerReady as `Unknown` next to `GraphAccepted=False`.
    """
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    present = {c.get("type") for c in conditions if isinstance(c, Mapping)}
    for condition_type in condition_types:
        if condition_type in present:
            continue
        placeholder: dict[str, Any] = dict(awaiting_reconciliation(condition_type))
        placeholder["lastTransitionTime"] = created
        if observed_generation is not None:
            placeholder["observedGeneration"] = observed_generation
        conditions.append(placeholder)


def aggregate_ready(
    conditions: Sequence[Condition],
    dependents: Sequence[str],
    *,
    generation: int | None = None,
    root_type: str = CONDITION_READY,
) -> Condition:
    """Compute the root condition from its dependents (T-08, P-08, N-28); no timestamps set.

    Every dependent True (and observed at `generation`, when given) ⇒ True with reason `Ready`
    and an empty message. Otherwise the root copies status, reason and message of the most
    recently transitioned False dependent, or failing that of the most recent dependent that is
    not happy (Unknown, missing, or True at a stale generation — reported as Unknown).
    """
    by_type = {c.get("type"): c for c in conditions}
    unhappy: list[Condition] = []
    for dependent in dependents:
        condition = by_type.get(dependent)
        if condition is None:
            unhappy.append(awaiting_reconciliation(dependent))
            continue
        fresh = generation is None or condition.get("observedGeneration") == generation
        if condition.get("status") != STATUS_TRUE or not fresh:
            unhappy.append(condition)
    if not unhappy:
        return {"type": root_type, "status": STATUS_TRUE, "reason": REASON_READY, "message": ""}
    failed = [c for c in unhappy if c.get("status") == STATUS_FALSE]
    pool = failed or unhappy
    # max() keeps the first of equal timestamps, i.e. dependent order breaks ties.
    culprit = max(pool, key=lambda c: c.get("lastTransitionTime", ""))
    return {
        "type": root_type,
        "status": STATUS_FALSE if failed else STATUS_UNKNOWN,
        "reason": culprit.get("reason", ""),
        "message": culprit.get("message", ""),
    }


def ordered_conditions(
    conditions: Sequence[Condition],
    *,
    dependents: Sequence[str] = (),
    root_type: str = CONDITION_READY,
    awaiting_first: bool = False,
) -> list[Condition]:
    """Wire order (T-09, N-28): by lastTransitionTime ascending, the root condition last.

    Transition times have a resolution of one second, so conditions set in the same pass tie;
    ties keep the order of `dependents` (the order in which upstream initialises them:
    InstanceManaged, GraphResolved, ResourcesReady, WatchesHealthy on instances), and any other
    type keeps its position among its equals (the sort is stable). This is the one ordering
    function: every controller that writes `status.conditions` passes its list through it.

    `awaiting_first`: among ties, placeholders still `AwaitingReconciliation` come before the
    conditions a pass has set. Upstream's manager moves a condition it sets to the end of its
    list and sorts stably by time, so the placeholders it left alone keep their place in front
    (an RGD that fails to build: GraphRevisionsResolved, KindReady, ControllerReady, then
    GraphAccepted, then Ready).
    """
    rank = {condition_type: index for index, condition_type in enumerate(dependents)}
    others = [c for c in conditions if c.get("type") != root_type]
    roots = [c for c in conditions if c.get("type") == root_type]
    last = len(rank)

    def key(condition: Condition) -> tuple[str, int, int]:
        awaiting = condition.get("reason") == REASON_AWAITING_RECONCILIATION
        return (
            str(condition.get("lastTransitionTime", "")),
            0 if awaiting_first and awaiting else 1,
            rank.get(str(condition.get("type")), last),
        )

    others.sort(key=key)
    return others + roots
