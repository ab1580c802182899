"""kro.runtime.conditions: status.conditions with upstream's rules (meta.SetStatusCondition).

`lastTransitionTime` moves only when a condition's status changes, and `set_condition` says
whether anything changed, so a status write that would change nothing can be skipped:

    status = copy.deepcopy(obj.get("status") or {})
    set_condition(status, "Available", "True", reason="MinimumReplicasAvailable",
                  observed_generation=obj["metadata"]["generation"])
    await status_writer.update(GVR, obj, status)   # skipped when nothing changed

`set_condition` also takes a typed status (a pydantic model with a `conditions` list of
kro.runtime.typed.Condition), changed in place, so a typed reconciler never drops to dicts:

    set_condition(site.status, "Available", "True", reason="MinimumReplicasAvailable")
    await manager.client.update_status(site)

The dict implementation is `kro._conditions`, shared with kro's own API types.
"""

from collections.abc import MutableMapping
from typing import Any

from pydantic import BaseModel

from kro._conditions import (
    CONDITION_FALSE,
    CONDITION_TRUE,
    CONDITION_UNKNOWN,
    conditions_of,
    get_condition,
    is_condition_true,
    now_rfc3339,
    remove_condition,
)
from kro._conditions import set_condition as _set_condition

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


def set_condition(
    status: MutableMapping[str, Any] | BaseModel,
    condition_type: str,
    condition_status: str,
    *,
    reason: str = "",
    message: str = "",
    observed_generation: int | None = None,
    now: str | None = None,
) -> bool:
    """Create or update one condition in place (a status dict, or a typed status whose
    `conditions` field is a list of Condition models); returns whether anything changed."""

    def apply_to(target: MutableMapping[str, Any]) -> bool:
        return _set_condition(
            target,
            condition_type,
            condition_status,
            reason=reason,
            message=message,
            observed_generation=observed_generation,
            now=now,
        )

    if not isinstance(status, BaseModel):
        return apply_to(status)
    if "conditions" not in type(status).model_fields:
        raise TypeError(f"{type(status).__name__} has no `conditions` field")
    current = getattr(status, "conditions", None) or []
    for condition in current:  # the steady state, without a round trip through dicts
        if getattr(condition, "type", None) == condition_type:
            if (
                condition.status == condition_status
                and condition.reason == reason
                and condition.message == message
                and condition.observed_generation == observed_generation
                and condition.last_transition_time
            ):
                return False
            break
    as_dicts: dict[str, Any] = {
        "conditions": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in current]
    }
    changed = apply_to(as_dicts)
    if changed:
        from .typed import Condition  # typed is pydantic-heavy; loaded by whoever has a model

        status.conditions = [  # type: ignore[attr-defined]  # checked above: a declared field
            Condition.model_validate(c) for c in as_dicts["conditions"]
        ]
    return changed
