"""kro.engine.recording: the ownership of a dry run, which writes nothing and says what it would.

`kro explain` runs the controller's own pass as the user who asks (kro.cli.explain_dryrun).
It wraps the ownership the controller uses for that owner (an ApplySet, a Graph's status
inventory), so what would be written is judged by that ownership's own proof and field
managers, and records instead of sending:

- an object that does not exist would be created: its outcome has neither object nor error,
  and the pass reports the node as not created yet (nothing depends on what is not there);
- one whose live fields differ from what the apply would send would be applied: recorded, and
  the live object answers as it is;
- the API server's refusal of the controller's last apply, as the controller recorded it on
  the owner (`recorded`, per node), stands for a refused apply: a dry run cannot send the
  apply to find out.

Nothing is listed up front, nothing pruned; a teardown step is planned by the wrapped
ownership's own plan (`Ownership.plan_teardown`) and not carried out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kro.applyset import AppliedResource, ApplySetError, Desired
from kro.engine.ownership import Listed, Ownership, PruneOutcome, PruneScope, TeardownStep
from kro.engine.results import object_id

__all__ = ["RecordedRefusal", "RecordingOwnership"]


class RecordedRefusal(ApplySetError):
    """The API server refused the controller's last apply of a node (its recorded words)."""


class RecordingOwnership:
    """`Ownership` of a dry run over `inner` (whose proof judges what would change)."""

    def __init__(self, inner: Ownership, recorded: Mapping[str, str] | None = None) -> None:
        self.inner = inner
        self.recorded = dict(recorded or {})
        self.writes: list[str] = []
        """What the pass would write, `create <object>` or `apply <object>`, in order."""

    @property
    def remembers(self) -> bool:
        return False  # a dry run has no memory of a previous apply: every read is a read

    def vouches_for(self, live: Mapping[str, Any]) -> bool:
        return False

    def unchanged(self, owner_obj: Mapping[str, Any], item: Desired) -> bool:
        return self.inner.unchanged(owner_obj, item)

    async def begin(self, owner_obj: dict[str, Any]) -> Listed:
        return {}

    async def apply(
        self, owner_obj: dict[str, Any], batch: Sequence[Desired]
    ) -> tuple[dict[str, Any], Sequence[AppliedResource]]:
        outcomes: list[AppliedResource] = []
        for item in batch:
            if item.observed is None:
                self.writes.append(f"create {object_id(item.obj)}")
            elif not self.inner.unchanged(owner_obj, item):
                self.writes.append(f"apply {object_id(item.obj)}")
            refused = self.recorded.get(item.resource_id.partition("-")[0], "")
            if refused:
                outcomes.append(
                    AppliedResource(item.resource_id, None, error=RecordedRefusal(refused))
                )
            else:
                live = None if item.observed is None else dict(item.observed)
                outcomes.append(AppliedResource(item.resource_id, live))
        return owner_obj, outcomes

    async def prune(
        self, owner_obj: dict[str, Any], scope: PruneScope
    ) -> tuple[dict[str, Any], PruneOutcome]:
        return owner_obj, PruneOutcome()

    async def plan_teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        return await self.inner.plan_teardown(owner_obj)

    teardown = plan_teardown  # a dry run's teardown step is its plan
