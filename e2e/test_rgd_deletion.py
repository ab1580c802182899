"""Deleting an RGD while instances exist, on the real control plane.

As upstream, the RGD goes at once and (without --allow-crd-deletion) its CRD stays. Unlike
upstream, the instances are not left claiming Ready=True with nobody reconciling them: each
says its RGD is gone and what to do, deleting one still deletes its children and releases its
finalizer, and re-creating the RGD takes the others back. With --allow-crd-deletion the API
server deletes the instances, and kro still deletes their children and releases them, so the CRD
does not hang. Also: finalizers others put on an RGD are never lost to kro's own writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kro_harness import (
    CONFIGMAPS,
    CONTROLLER_ARGS,
    CRDS,
    ControllerThread,
    KroEnv,
    condition,
    is_ready,
    kro_env_with,
    kro_fixtures,
    meta,
    state,
    wait_for,
)

from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.errors import Conflict, NotFound

ARGS = tuple(a for a in CONTROLLER_ARGS if not a.startswith("--allow-crd-deletion"))
"""The harness's flags with upstream's default: the CRD outlives its RGD."""
REASON = "ResourceGraphDefinitionDeleted"


controller, kro = kro_fixtures(ARGS)


def _message(rgd_name: str) -> str:
    return (
        f'ResourceGraphDefinition "{rgd_name}" was deleted; kro no longer reconciles this '
        "instance. Delete the instance to delete its resources, or re-create the "
        "ResourceGraphDefinition to resume reconciliation"
    )


def _pair_rgd(kro: KroEnv) -> dict[str, Any]:
    """Two ConfigMaps per instance, `-b` depending on `-a` (two deletion waves)."""
    return kro.rgd(
        "pair",
        "Pair",
        {"value": "string | default=x"},
        [
            {
                "id": "a",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-a"},
                    "data": {"v": "${schema.spec.value}"},
                },
            },
            {
                "id": "b",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-b"},
                    "data": {"copied": "${a.data.v}"},
                },
            },
        ],
    )


def _says_rgd_deleted(obj: dict[str, Any]) -> bool:
    return condition(obj, "InstanceManaged").get("reason") == REASON


async def _rgd_gone(client: Client, name: str) -> None:
    async def gone() -> bool:
        try:
            await client.get(RGDS, name)
        except NotFound:
            return True
        return False

    await wait_for(gone, what=f"RGD {name} gone")


async def test_instances_of_a_deleted_rgd_say_so_and_are_still_deleted(kro: KroEnv) -> None:
    rgd = _pair_rgd(kro)
    name = rgd["metadata"]["name"]
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(name)
    gvr = await kro.gvr_of("Pair")
    for item in ("one", "two"):
        await kro.apply_instance("Pair", item, {"value": item})
    for item in ("one", "two"):
        await kro.wait_instance(gvr, item)
    children: dict[str, dict[str, Any]] = {}
    for item in ("one", "two"):
        for node in ("a", "b"):
            children[f"{item}-{node}"] = await kro.get(CONFIGMAPS, f"{item}-{node}")

    await kro.client.delete(RGDS, name)
    await _rgd_gone(kro.client, name)  # at once, as upstream
    for item in ("one", "two"):
        live = await kro.wait_instance(gvr, item, _says_rgd_deleted, what=f"{item} marked")
        managed, ready = condition(live, "InstanceManaged"), condition(live, "Ready")
        assert (managed["status"], managed["message"]) == ("False", _message(name))
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "False",
            REASON,
            _message(name),
        )
        assert state(live) == "ERROR"
        assert meta(live)["finalizers"] == ["kro.run/finalizer"]
    await kro.client.get(CRDS, f"pairs.{kro.group}")  # the CRD stays
    for child, before in children.items():  # nothing else changed in the children
        after = await kro.get(CONFIGMAPS, child)
        assert meta(after)["resourceVersion"] == meta(before)["resourceVersion"], child

    await kro.client.delete(gvr, "one", namespace=kro.namespace)
    await kro.wait_gone(gvr, "one", timeout_s=30)  # the finalizer was released
    for node in ("a", "b"):
        await kro.wait_gone(CONFIGMAPS, f"one-{node}", timeout_s=5)
    for node in ("a", "b"):
        after = await kro.get(CONFIGMAPS, f"two-{node}")
        assert meta(after)["uid"] == meta(children[f"two-{node}"])["uid"]

    await kro.apply_rgd(rgd)  # re-created: "two" is reconciled again
    await kro.wait_rgd_active(name)
    live = await kro.wait_instance(gvr, "two")
    assert is_ready(live)
    assert condition(live, "InstanceManaged")["reason"] == "Managed"


async def _add_finalizer(client: Client, name: str, finalizer: str) -> None:
    """What a well-behaved third party does: read, add, write with the resourceVersion."""
    while True:
        live = await client.get(RGDS, name)
        finalizers = list(meta(live).get("finalizers") or [])
        patch = {
            "metadata": {
                "resourceVersion": meta(live)["resourceVersion"],
                "finalizers": [*finalizers, finalizer],
            }
        }
        try:
            await client.patch(RGDS, name, patch, patch_type="merge")
            return
        except Conflict:
            continue


async def test_finalizers_others_add_to_an_rgd_are_never_lost(kro: KroEnv) -> None:
    rgd = _pair_rgd(kro)
    name = rgd["metadata"]["name"]
    others = [f"e2e.kro.run/writer-{i}" for i in range(4)]
    await kro.apply_rgd(rgd)
    # Racing kro, which adds its own finalizer as soon as it sees the RGD.
    await asyncio.gather(*(_add_finalizer(kro.client, name, f) for f in others))
    live = await kro.wait_rgd_active(name)
    assert sorted(meta(live)["finalizers"]) == sorted([*others, "kro.run/finalizer"])

    await kro.client.delete(RGDS, name)

    async def only_others_left() -> list[str] | None:
        finalizers = list(meta(await kro.get_rgd(name)).get("finalizers") or [])
        return finalizers if "kro.run/finalizer" not in finalizers else None

    assert sorted(await wait_for(only_others_left, what="kro's finalizer removed")) == others
    live = await kro.get_rgd(name)
    await kro.client.patch(
        RGDS,
        name,
        {"metadata": {"resourceVersion": meta(live)["resourceVersion"], "finalizers": []}},
        patch_type="merge",
    )
    await _rgd_gone(kro.client, name)


@pytest.fixture
async def kro_crd_deletion(
    controller: ControllerThread, kube_namespace: str
) -> AsyncIterator[KroEnv]:
    """This test's world with a controller allowed to delete CRDs (the module's is paused)."""
    async with kro_env_with(controller, kube_namespace, CONTROLLER_ARGS) as env:
        yield env


async def test_with_crd_deletion_allowed_instances_are_deleted_and_the_crd_goes(
    kro_crd_deletion: KroEnv,
) -> None:
    kro = kro_crd_deletion
    rgd = _pair_rgd(kro)
    name = rgd["metadata"]["name"]
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(name)
    gvr = await kro.gvr_of("Pair")
    await kro.apply_instance("Pair", "one", {})
    await kro.wait_instance(gvr, "one")

    await kro.client.delete(RGDS, name)  # kro deletes the CRD; the API server, the instance
    await _rgd_gone(kro.client, name)
    for node in ("a", "b"):
        await kro.wait_gone(CONFIGMAPS, f"one-{node}", timeout_s=30)

    async def crd_gone() -> bool:
        try:
            await kro.client.get(CRDS, f"pairs.{kro.group}")
        except NotFound:
            return True
        return False

    await wait_for(crd_gone, what="the CRD gone (its instance released)")
