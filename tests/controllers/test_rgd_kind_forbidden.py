"""An RGD whose generated kind kro may not list or watch (V-15): `ControllerReady=False`,
reason `FailedToStart`, with the API server's refusal, at the first refusal (the sync deadline
is 30 s; this test gives up after 15); it stays `Inactive`, other RGDs are served meanwhile,
and its retry serves it once the list is allowed.

The whole controller runs on the fake API server, which refuses the generated kind's list
across namespaces (what the kind's informer sends) and nothing else."""

from __future__ import annotations

from typing import Any

from controllers_fakes import GROUP
from rgd_app_fakes import KroFakeApi, eventually, kind_rgd, running_app

from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.prometheus import PrometheusProvider
from kro.testing.fakeapi import Fault, forbidden

FORBIDDEN = forbidden("blockeds", GROUP)


def condition(rgd: dict[str, Any], kind: str) -> dict[str, Any]:
    for item in (rgd.get("status") or {}).get("conditions") or []:
        if item["type"] == kind:
            return dict(item)
    return {}


async def test_a_kind_kro_may_not_list_fails_to_start_and_is_served_once_allowed(
    kro_api: KroFakeApi, kro_client: Client, provider: PrometheusProvider
) -> None:
    refusal = kro_api.inject(
        Fault(
            "status",
            method="GET",
            path=f"/apis/{GROUP}/v1alpha1/blockeds",
            watch=False,
            status=403,
            body=FORBIDDEN,
            times=1_000_000,
        )
    )
    async with running_app(kro_client, provider):
        await kro_client.apply(RGDS, kind_rgd("blocked", "Blocked"), field_manager="t", force=True)
        await kro_client.apply(RGDS, kind_rgd("fine", "Fine"), field_manager="t", force=True)

        async def failed() -> dict[str, Any] | None:
            live = await kro_client.get(RGDS, "blocked")
            return live if condition(live, "ControllerReady").get("status") == "False" else None

        live = await eventually(failed, what="ControllerReady=False", timeout_s=15.0)
        ready = condition(live, "ControllerReady")
        assert ready["reason"] == "FailedToStart"
        assert "forbidden" in ready["message"]
        assert f"blockeds.{GROUP}" in ready["message"]
        assert live["status"]["state"] == "Inactive"
        assert condition(live, "KindReady")["status"] == "True"  # the CRD is there
        assert condition(live, "Ready")["status"] == "False"

        async def active(name: str) -> dict[str, Any] | None:
            live = await kro_client.get(RGDS, name)
            return live if (live.get("status") or {}).get("state") == "Active" else None

        await eventually(lambda: active("fine"), what="the other RGD Active")
        assert (await failed()) is not None  # still refused, still reported

        kro_api.faults.remove(refusal)  # granted: the retry serves it
        served = await eventually(lambda: active("blocked"), what="the RGD Active once allowed")
        assert condition(served, "ControllerReady")["reason"] == "Running"


async def test_an_rgd_whose_kind_kro_may_not_list_can_still_be_deleted(
    kro_api: KroFakeApi, kro_client: Client, provider: PrometheusProvider
) -> None:
    """kro cannot see the kind's instances, so it cannot drain them either: deleting the RGD
    does not wait for a list that will never be allowed."""
    kro_api.inject(
        Fault(
            "status",
            method="GET",
            path=f"/apis/{GROUP}/v1alpha1/blockeds",
            status=403,
            body=FORBIDDEN,
            times=1_000_000,
        )
    )
    async with running_app(kro_client, provider):
        await kro_client.apply(RGDS, kind_rgd("blocked", "Blocked"), field_manager="t", force=True)

        async def failed() -> dict[str, Any] | None:
            live = await kro_client.get(RGDS, "blocked")
            return live if condition(live, "ControllerReady").get("status") == "False" else None

        await eventually(failed, what="ControllerReady=False", timeout_s=15.0)
        await kro_client.delete(RGDS, "blocked")

        async def gone() -> bool:
            page = await kro_client.list(RGDS)
            return not [r for r in page["items"] if r["metadata"]["name"] == "blocked"]

        await eventually(gone, what="the RGD deleted", timeout_s=15.0)
