"""Deleting an RGD while instances exist (reference P-11, and where kro differs): the RGD goes at
once and the CRD stays, as upstream; every remaining instance says its RGD is gone
(`InstanceManaged=False` `ResourceGraphDefinitionDeleted`, `Ready=False`, `state=ERROR`) while
its children are left alone; deleting one still deletes its children and releases its
finalizer; the kind is let go of when the last instance is gone; re-creating the RGD takes the
instances back. The whole controller runs on the fake API server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from controllers_fakes import CONFIGMAPS, NS
from rgd_app_fakes import (
    eventually,
    instance,
    kind_rgd,
    running_app,
)

from kro.controllers.app import KroApp
from kro.controllers.crd import CRDS
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.runtime.prometheus import PrometheusProvider

MESSAGE = (
    'ResourceGraphDefinition "greeter" was deleted; kro no longer reconciles this instance. '
    "Delete the instance to delete its resources, or re-create the ResourceGraphDefinition to "
    "resume reconciliation"
)


@pytest.fixture
async def app(kro_client: Client, provider: PrometheusProvider) -> AsyncIterator[KroApp]:
    async with running_app(kro_client, provider) as running:
        yield running


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj["status"]["conditions"] if c["type"] == kind), {})


def _is_ready(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), {})
    return status.get("state") == "ACTIVE" and ready.get("status") == "True"


def _says_rgd_deleted(obj: dict[str, Any]) -> bool:
    managed = next(
        (
            c
            for c in (obj.get("status") or {}).get("conditions") or []
            if c["type"] == "InstanceManaged"
        ),
        {},
    )
    return managed.get("reason") == "ResourceGraphDefinitionDeleted"


async def _serve(client: Client, app: KroApp, rgd: dict[str, Any]) -> GVR:
    """Apply `rgd`, wait until it is Active; the GVR of its kind."""
    name = rgd["metadata"]["name"]
    await client.apply(RGDS, rgd, field_manager="test", force=True)

    async def active() -> GVR | None:
        live = await client.get(RGDS, name)
        served = [
            gvr
            for uid, gvr in app.rgd_reconciler.kinds.served().items()
            if uid == live["metadata"]["uid"]
        ]
        state = (live.get("status") or {}).get("state")
        return served[0] if state == "Active" and served else None

    return await eventually(active, what=f"RGD {name} Active")


async def _create(client: Client, gvr: GVR, kind: str, name: str) -> dict[str, Any]:
    await client.create(gvr, instance(kind, name, NS), namespace=NS)
    return await _wait(client, gvr, name, _is_ready, "ready")


async def _wait(client: Client, gvr: GVR, name: str, check: Any, what: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        live = await client.get(gvr, name, namespace=NS)
        return live if check(live) else None

    return await eventually(probe, what=f"{name} {what}")


async def _gone(client: Client, gvr: GVR, name: str, namespace: str | None = NS) -> None:
    async def probe() -> bool:
        try:
            await client.get(gvr, name, namespace=namespace)
        except NotFound:
            return True
        return False

    await eventually(probe, what=f"{gvr.resource} {name} gone")


async def _delete_rgd(client: Client, name: str) -> None:
    await client.delete(RGDS, name)
    await _gone(client, RGDS, name, None)


async def test_instances_of_a_deleted_rgd_say_so_and_can_still_be_deleted(
    kro_client: Client, app: KroApp
) -> None:
    client = kro_client
    gvr = await _serve(client, app, kind_rgd("greeter", "Greeter"))
    for name in ("hi", "ho"):
        await _create(client, gvr, "Greeter", name)
    children = {n: await client.get(CONFIGMAPS, f"{n}-greeter", namespace=NS) for n in ("hi", "ho")}

    await _delete_rgd(client, "greeter")  # goes at once, as upstream
    for name in ("hi", "ho"):
        live = await _wait(client, gvr, name, _says_rgd_deleted, "marked")
        managed, ready = _condition(live, "InstanceManaged"), _condition(live, "Ready")
        assert (managed["status"], managed["message"]) == ("False", MESSAGE)
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "False",
            "ResourceGraphDefinitionDeleted",
            MESSAGE,
        )
        assert live["status"]["state"] == "ERROR"
        assert live["metadata"]["finalizers"] == ["kro.run/finalizer"]
    await client.get(CRDS, "greeters.unit.kro.run")  # the CRD stays (no --allow-crd-deletion)
    for name, before in children.items():  # children are left exactly as they were
        after = await client.get(CONFIGMAPS, f"{name}-greeter", namespace=NS)
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert app.rgd_reconciler.kinds.draining() == {gvr}

    await client.delete(gvr, "hi", namespace=NS)
    await _gone(client, gvr, "hi")
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "hi-greeter", namespace=NS)
    await client.get(CONFIGMAPS, "ho-greeter", namespace=NS)
    assert app.dynamic.is_registered(gvr)  # "ho" is still there

    await _serve(client, app, kind_rgd("greeter", "Greeter"))  # re-created: takes "ho" back
    live = await _wait(client, gvr, "ho", _is_ready, "ready again")
    assert _condition(live, "InstanceManaged")["reason"] == "Managed"
    assert app.rgd_reconciler.kinds.draining() == frozenset()


async def test_the_kind_is_let_go_of_when_its_last_instance_is_gone(
    kro_client: Client, app: KroApp
) -> None:
    client = kro_client
    gvr = await _serve(client, app, kind_rgd("greeter", "Greeter"))
    await _create(client, gvr, "Greeter", "hi")
    await _delete_rgd(client, "greeter")
    await _wait(client, gvr, "hi", _says_rgd_deleted, "marked")

    await client.delete(gvr, "hi", namespace=NS)
    await _gone(client, gvr, "hi")
    await _gone(client, CONFIGMAPS, "hi-greeter")

    async def released() -> bool:
        return not app.dynamic.is_registered(gvr) and not app.rgd_reconciler.kinds.draining()

    await eventually(released, what="the kind deregistered")


async def test_a_deleted_rgd_without_instances_releases_its_kind_at_once(
    kro_client: Client, app: KroApp
) -> None:
    gvr = await _serve(kro_client, app, kind_rgd("greeter", "Greeter"))
    await _delete_rgd(kro_client, "greeter")
    assert not app.dynamic.is_registered(gvr)
    assert app.rgd_reconciler.kinds.draining() == frozenset()
    assert app.rgd_reconciler.kinds.served() == {}


async def test_instances_left_while_no_controller_ran_are_found_through_the_crd(
    kro_client: Client, provider: PrometheusProvider
) -> None:
    client = kro_client
    async with running_app(client, provider) as first:
        gvr = await _serve(client, first, kind_rgd("greeter", "Greeter"))
        await _create(client, gvr, "Greeter", "hi")
    # The RGD goes while no kro runs (its finalizer removed by hand).
    await client.delete(RGDS, "greeter")
    await client.patch(RGDS, "greeter", {"metadata": {"finalizers": []}})
    await _gone(client, RGDS, "greeter", None)

    async with running_app(client, PrometheusProvider(process_metrics=False)) as second:
        await _wait(client, gvr, "hi", _says_rgd_deleted, "marked")
        await client.delete(gvr, "hi", namespace=NS)
        await _gone(client, gvr, "hi")
        await _gone(client, CONFIGMAPS, "hi-greeter")

        async def released() -> bool:
            return not second.dynamic.is_registered(gvr)

        await eventually(released, what="the kind deregistered")
