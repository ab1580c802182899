"""kro._conditions: status.conditions with upstream's rules (meta.SetStatusCondition), once.

Conditions are how a controller tells people and other controllers what it concluded. Their one
subtle rule is time: `lastTransitionTime` says when the *status* last flipped, so re-asserting a
condition (same status, even a new reason or message) must keep it; otherwise every reconcile
would move it, the status would change on every pass, and each status write would wake every
watcher of the object. `set_condition` therefore reports whether anything changed, so the
caller can skip a write that would change nothing.

Why this module sits in the root package: `kro.runtime.conditions` (for operator authors) and
`kro.api.conditions` (kro's own, which also scrubs messages) need the same rules, and `kro.api`
must not import `kro.runtime` (the compiler is pure) while `kro.runtime` imports no other kro
package. One implementation serves both from here, below every layer; it imports nothing of kro.

Timestamps are RFC 3339 UTC at one-second resolution, as metav1.Time serialises them; pass
`now` to make status computation deterministic in tests.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any, Final

__all__ = [
    "CONDITION_FALSE",
    "CONDITION_TRUE",
    "CONDITION_UNKNOWN",
    "conditions_of",
    "get_condition",
    "is_condition_true",
    "now_rfc3339",
    "remove_condition",
    "set_condition",
]

CONDITION_TRUE: Final = "True"
CONDITION_FALSE: Final = "False"
CONDITION_UNKNOWN: Final = "Unknown"


def now_rfc3339() -> str:
    """The current time as metav1.Time writes it: `2006-01-02T15:04:05Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def conditions_of(status: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The condition dicts of a status (a new list of the original entries)."""
    raw = (status or {}).get("conditions")
    if not isinstance(raw, list):
        return []
    return [c for c in raw if isinstance(c, dict)]


def get_condition(status: Mapping[str, Any] | None, condition_type: str) -> dict[str, Any] | None:
    """The condition of this type, or None."""
    for condition in conditions_of(status):
        if condition.get("type") == condition_type:
            return condition
    return None


def is_condition_true(
    status: Mapping[str, Any] | None, condition_type: str, *, generation: int | None = None
) -> bool:
    """True iff the condition is True and, when `generation` is given, observed at it.

    A True condition observed at an older generation describes a spec that is gone.
    """
    condition = get_condition(status, condition_type)
    if condition is None or condition.get("status") != CONDITION_TRUE:
        return False
    return generation is None or condition.get("observedGeneration") == generation


def set_condition(
    status: MutableMapping[str, Any],
    condition_type: str,
    condition_status: str,
    *,
    reason: str = "",
    message: str = "",
    observed_generation: int | None = None,
    now: str | None = None,
) -> bool:
    """Create or update one condition in place; returns whether anything changed.

    `lastTransitionTime` becomes `now` (default: the current time) for a new condition and when
    the status value changes; otherwise it is kept. Reason, message and observedGeneration are
    always replaced (an absent observedGeneration is dropped).
    """
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = []
        status["conditions"] = conditions
    desired: dict[str, Any] = {
        "type": condition_type,
        "status": condition_status,
        "reason": reason,
        "message": message,
    }
    if observed_generation is not None:
        desired["observedGeneration"] = observed_generation
    for index, existing in enumerate(conditions):
        if isinstance(existing, dict) and existing.get("type") == condition_type:
            kept = existing.get("lastTransitionTime")
            if existing.get("status") == condition_status and kept:
                desired["lastTransitionTime"] = kept
            else:
                desired["lastTransitionTime"] = now or now_rfc3339()
            if existing == desired:
                return False
            conditions[index] = desired
            return True
    desired["lastTransitionTime"] = now or now_rfc3339()
    conditions.append(desired)
    return True


def remove_condition(status: MutableMapping[str, Any], condition_type: str) -> bool:
    """Drop the condition of this type; returns whether it was there."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return False
    kept = [c for c in conditions if not (isinstance(c, dict) and c.get("type") == condition_type)]
    if len(kept) == len(conditions):
        return False
    status["conditions"] = kept
    return True
