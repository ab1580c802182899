"""kro.controllers.instance.contests: say what kro does about fields another controller rewrites.

`kro.applyset.contest` counts the rounds and decides when kro yields a field; this module turns
its findings into what users see: the `FieldConflict` condition on the instance (present only
while a field is yielded), a Warning Event when kro yields, and the counter
`instance_field_conflicts_total{gvr, manager, outcome}` (outcome `reapplied` or `yielded`) for
every round. Messages name the resource id, the field path and the other field manager, and
say how to end the conflict for good.
"""

from __future__ import annotations

from collections.abc import Sequence

from kro.applyset import Contest

OUTCOME_REAPPLIED = "reapplied"
OUTCOME_YIELDED = "yielded"

HINT = (
    "Remove the field from the resource template (or set it to the value that manager "
    "writes) so that kro applies it again."
)


def describe(contest: Contest) -> str:
    """`resource "deployment" field metadata.annotations["x"] (rewritten by "m" 3 times)`."""
    return (
        f'resource "{contest.resource_id}" field {contest.path} '
        f'(rewritten by field manager "{contest.manager}" {contest.rounds} times)'
    )


def condition_message(yielded: Sequence[Contest]) -> str:
    """The FieldConflict message for every field kro has yielded."""
    fields = "; ".join(describe(c) for c in yielded)
    noun = "field" if len(yielded) == 1 else "fields"
    return (
        f"kro stopped applying {len(yielded)} {noun} that another field manager keeps "
        f"changing: {fields}. {HINT}"
    )


def event_message(contest: Contest) -> str:
    """The Warning Event when kro yields one field."""
    return (
        f'stopped applying field {contest.path} of resource "{contest.resource_id}": field '
        f'manager "{contest.manager}" changed it back {contest.rounds} times. {HINT}'
    )


def outcome(contest: Contest) -> str:
    return OUTCOME_YIELDED if contest.yielded else OUTCOME_REAPPLIED
