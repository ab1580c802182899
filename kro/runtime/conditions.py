"""kro.runtime.conditions: status.conditions with upstream's rules (meta.SetStatusCondition).

`lastTransitionTime` moves only when a condition's status changes, and `set_condition` says
whether anything changed, so a status write that would change nothing can be skipped:

    status = copy.deepcopy(obj.get("status") or {})
    set_condition(status, "Available", "True", reason="MinimumReplicasAvailable",
                  observed_generation=obj["metadata"]["generation"])
    await status_writer.update(GVR, obj, status)   # skipped when nothing changed

The implementation is `kro._conditions`, shared with kro's own API types.
"""

from kro._conditions import (
    CONDITION_FALSE,
    CONDITION_TRUE,
    CONDITION_UNKNOWN,
    conditions_of,
    get_condition,
    is_condition_true,
    now_rfc3339,
    remove_condition,
    set_condition,
)

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
