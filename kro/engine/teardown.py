"""kro.engine.teardown: one step of an owner's teardown, then letting the owner go.

The ownership deletes and releases; once nothing is left the finalizer goes (a merge patch
carrying the resourceVersion, retried on a Conflict). Every owner kind takes this path.
"""

from __future__ import annotations

from typing import Any

from kro.engine.ownership import Ownership, TeardownStep
from kro.runtime.client import Client
from kro.runtime.finalizers import remove_finalizer
from kro.runtime.gvk import GVR

__all__ = ["FINALIZER_ATTEMPTS", "teardown_step"]

FINALIZER_ATTEMPTS = 5
"""Tries to remove a finalizer (status or labels may be written meanwhile: a Conflict)."""


async def teardown_step(
    ownership: Ownership, client: Client, owner: dict[str, Any], gvr: GVR, finalizer: str
) -> TeardownStep:
    """One step of `ownership`'s teardown of `owner` (of resource `gvr`); `finalizer` is
    removed when the step says nothing is left."""
    step = await ownership.teardown(owner)
    if step.done:
        await remove_finalizer(client, gvr, owner, finalizer, attempts=FINALIZER_ATTEMPTS)
    return step
