"""kro's finalizer on an RGD (P-02, P-11) is added and removed with the resourceVersion in the
merge patch: a finalizer someone else adds between kro's read and its write makes kro's write a
Conflict, kro reads again, and the other finalizer is never lost."""

from __future__ import annotations

import copy
from typing import Any

from controllers_fakes import DictClient, greeter_rgd, unserved_rgd_reconciler

from kro.controllers.rgd import RGDS, RGDReconciler
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result

GREETER = Request("", "greeter")
KRO = "kro.run/finalizer"


class RacingClient(DictClient):
    """Someone else adds `finalizer` to the RGD right after kro's next read of it."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[str] = []

    async def get(self, gvr: GVR, name: str, **kwargs: Any) -> dict[str, Any]:
        obj = await super().get(gvr, name, **kwargs)
        if gvr == RGDS and self.pending:
            stored = self.objects[(gvr, name)]
            stored["metadata"].setdefault("finalizers", []).append(self.pending.pop(0))
            self._stamp(stored)
        return obj


def _reconciler(client: DictClient) -> RGDReconciler:
    return unserved_rgd_reconciler(client)


def _finalizers(client: DictClient) -> list[str]:
    return list(client.objects[(RGDS, "greeter")]["metadata"].get("finalizers") or [])


async def test_a_finalizer_added_meanwhile_survives_kro_adding_its_own() -> None:
    client = RacingClient()
    client.seed(RGDS, greeter_rgd())
    client.pending.append("example.com/keep")
    rgds = _reconciler(client)

    assert await rgds.reconcile(GREETER) == Result(requeue=True)  # Conflict: read again
    assert _finalizers(client) == ["example.com/keep"]
    await rgds.reconcile(GREETER)
    assert _finalizers(client) == ["example.com/keep", KRO]


async def test_a_finalizer_added_meanwhile_survives_kro_removing_its_own() -> None:
    client = RacingClient()
    rgd = copy.deepcopy(greeter_rgd())
    rgd["metadata"]["finalizers"] = [KRO, "example.com/a"]
    rgd["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    client.seed(RGDS, rgd)
    client.pending.append("example.com/b")

    await _reconciler(client).reconcile(GREETER)
    assert _finalizers(client) == ["example.com/a", "example.com/b"]
