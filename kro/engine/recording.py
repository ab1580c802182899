"""kro.engine.recording: the ownership of a dry run, which writes nothing and says what it would.

`kro explain` runs the controller's own pass as the caller, over the controller's ownership
for that owner, so what would be written is judged by its own proof and field managers. An
absent object would be created (an outcome with neither object nor error: the node is not
created yet); a differing one would be applied (the live object answers); the controller's
recorded refusal of a node (`recorded`) stands for a refused apply. Nothing is listed, nothing
pruned; teardown is the wrapped ownership's plan.
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
