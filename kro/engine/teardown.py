"""kro.engine.teardown: delete what an owner applied, in reverse order, then let the owner go.

An owner being deleted keeps kro's finalizer until every member of its ApplySet is gone or, for
members whose object says `deletionPolicy: Orphaned`, released (kro.applyset.release). Each
step deletes the highest remaining apply-order wave (the reverse of the order the pass applied
them in: kro.applyset.deletion reads the wave from each member's annotation, so it needs no
graph, and works the same for a deleted RGD's instances); once no member is left, the
finalizer is removed. A step says what the owner's adapter must show: done, still deleting
(which wave), or blocked, and whether a retry may fix the block soon.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kro.applyset import ApplySetError, delete_next_wave, remove_finalizer
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR

__all__ = ["TeardownStep", "teardown_step"]


@dataclass(frozen=True, slots=True)
class TeardownStep:
    """done: every member is gone and the finalizer released.
    wave: the apply-order wave being deleted, while not done and not blocked.
    blocked: why teardown cannot go on ("" when it can).
    transient: the block is an API error a retry may fix (a failed list or delete), not an
        inventory that cannot be trusted (which waits for someone to repair it)."""

    done: bool
    wave: int | None = None
    blocked: str = ""
    transient: bool = False


async def teardown_step(
    client: Client, owner: Mapping[str, Any], gvr: GVR, finalizer: str
) -> TeardownStep:
    """One step of the owner's teardown; the finalizer is removed when the last member is gone."""
    try:
        progress = await delete_next_wave(client, owner, gvr)
    except ApplySetError as error:  # an inventory that cannot be trusted: wait for a fix
        return TeardownStep(False, blocked=str(error))
    except KubeError as error:  # the members cannot be listed (e.g. Forbidden)
        return TeardownStep(False, blocked=str(error), transient=True)
    if progress.failures:
        reason = "; ".join(f.message for f in progress.failures)
        return TeardownStep(False, wave=progress.wave, blocked=reason, transient=True)
    if progress.done:
        await remove_finalizer(client, gvr, owner, finalizer)
        return TeardownStep(True)
    return TeardownStep(False, wave=progress.wave)
