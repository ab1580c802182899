"""kro.engine.teardown: one step of an owner's teardown, then letting the owner go.

Whatever keeps the owner's objects (kro.engine.ownership) deletes and releases them; once it
says nothing is left, the owner's finalizer is removed (a JSON merge patch carrying the
resourceVersion, read again and retried on a Conflict) and the API server may delete the
owner. Every owner kind (RGD instances, `Graph`s) takes this one path.
"""

from __future__ import annotations

from typing import Any

from kro.engine.ownership import Ownership, TeardownStep
from kro.runtime.client import Client
from kro.runtime.finalizers import remove_finalizer
from kro.runtime.gvk import GVR

__all__ = ["FINALIZER_ATTEMPTS", "teardown_step"]

FINALIZER_ATTEMPTS = 5
"""Writes of the finalizer's removal, each after reading the owner again on a Conflict: an
owner's status or labels may be written while its last objects go."""


async def teardown_step(
    ownership: Ownership, client: Client, owner: dict[str, Any], gvr: GVR, finalizer: str
) -> TeardownStep:
    """One step of `ownership`'s teardown of `owner` (of resource `gvr`); `finalizer` is
    removed when the step says nothing is left."""
    step = await ownership.teardown(owner)
    if step.done:
        await remove_finalizer(client, gvr, owner, finalizer, attempts=FINALIZER_ATTEMPTS)
    return step
