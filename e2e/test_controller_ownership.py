"""Who owns what, on the real control plane: ordered deletion, isolation between RGDs, and two
instances that render the same object.

Deletion order is read from the API server's own record: the resourceVersion of each DELETED
watch event is the etcd revision of that deletion, so sorting by it gives the true order even
across two watch streams.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from kro_harness import (
    CONFIGMAPS,
    KroEnv,
    condition,
    kro_fixtures,
    meta,
    state,
    wait_for,
)

from kro.api.names import FIELD_MANAGER_LABELLER
from kro.controllers.instance.labels import instance_labels, labeller_body
from kro.runtime.errors import Conflict, NotFound
from kro.runtime.gvk import GVR

controller, kro = kro_fixtures()


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def _serve(kro: KroEnv, rgd: dict[str, Any]) -> None:
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])


async def test_instance_deletion_removes_children_wave_by_wave(kro: KroEnv) -> None:
    # first <- second <- third, plus `loner` that nothing depends on (deleted with `third`).
    rgd = kro.rgd(
        "chain",
        "Chain",
        {"value": "string | default=x"},
        [
            {
                "id": "first",
                "template": configmap("${schema.metadata.name}-1", {"v": "${schema.spec.value}"}),
            },
            {
                "id": "second",
                "template": configmap("${schema.metadata.name}-2", {"v": "${first.data.v}"}),
            },
            {
                "id": "third",
                "template": configmap("${schema.metadata.name}-3", {"v": "${second.data.v}"}),
            },
            {"id": "loner", "template": configmap("${schema.metadata.name}-0", {"v": "alone"})},
        ],
    )
    await _serve(kro, rgd)
    await kro.apply_instance("Chain", "chain", {})
    gvr = await kro.gvr_of("Chain")
    await kro.wait_instance(gvr, "chain")
    orders = {
        meta(c)["name"]: meta(c)["annotations"]["internal.kro.run/apply-order"]
        for c in await kro.children(CONFIGMAPS, "chain")
    }
    assert orders == {"chain-0": "3", "chain-3": "3", "chain-2": "2", "chain-1": "1"}

    _, now = await kro.client.list_all(CONFIGMAPS, namespace=kro.namespace)
    deletions: list[tuple[int, str]] = []
    watchers = [
        asyncio.create_task(_record_deletions(kro, g, now, deletions)) for g in (CONFIGMAPS, gvr)
    ]
    try:
        await kro.client.delete(gvr, "chain", namespace=kro.namespace)
        await wait_for(lambda: _has(deletions, "chain"), what="the instance deleted", timeout_s=30)
    finally:
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
    order = [name for _, name in sorted(deletions)]
    assert order[-1] == "chain", "the finalizer went before the children"
    assert set(order[:2]) == {"chain-0", "chain-3"}
    assert order[2:] == ["chain-2", "chain-1", "chain"]


async def _has(deletions: list[tuple[int, str]], name: str) -> bool:
    return any(n == name for _, n in deletions)


async def _record_deletions(kro: KroEnv, gvr: GVR, since: str, out: list[tuple[int, str]]) -> None:
    stream = kro.client.watch(gvr, namespace=kro.namespace, resource_version=since)
    async with contextlib.aclosing(stream):
        async for event in stream:
            if event.type == "DELETED":
                out.append((int(meta(event.object)["resourceVersion"]), meta(event.object)["name"]))


async def test_two_rgds_never_touch_each_others_children(kro: KroEnv) -> None:
    for kind in ("Left", "Right"):
        rgd = kro.rgd(
            kind.lower(),
            kind,
            {"value": "string | default=x"},
            [
                {
                    "id": "config",
                    "template": configmap(
                        f"${{schema.metadata.name}}-{kind.lower()}", {"v": "${schema.spec.value}"}
                    ),
                }
            ],
        )
        await _serve(kro, rgd)
        await kro.apply_instance(kind, "same", {})
    left, right = await kro.gvr_of("Left"), await kro.gvr_of("Right")
    await kro.wait_instance(left, "same")
    await kro.wait_instance(right, "same")
    right_before = await kro.get(CONFIGMAPS, "same-right")
    assert meta(right_before)["labels"]["kro.run/instance-kind"] == "Right"

    await kro.apply_instance("Left", "same", {"value": "y"})  # changes and prunes Left's world
    await wait_for(lambda: _value_is(kro, "same-left", "y"), what="Left re-rendered")
    await kro.client.delete(left, "same", namespace=kro.namespace)
    await kro.wait_gone(left, "same")
    await kro.wait_gone(CONFIGMAPS, "same-left")

    right_after = await kro.get(CONFIGMAPS, "same-right")
    assert meta(right_after)["resourceVersion"] == meta(right_before)["resourceVersion"]
    await kro.wait_instance(right, "same")


async def _value_is(kro: KroEnv, name: str, value: str) -> bool:
    return bool((await kro.get(CONFIGMAPS, name))["data"]["v"] == value)


async def test_second_instance_reports_a_conflict_and_the_first_keeps_the_object(
    kro: KroEnv,
) -> None:
    rgd = kro.rgd(
        "claim",
        "Claim",
        {"target": "string"},
        [
            {
                "id": "config",
                "template": configmap(
                    "${schema.spec.target}", {"owner": "${schema.metadata.name}"}
                ),
            }
        ],
    )
    await _serve(kro, rgd)
    gvr = await kro.gvr_of("Claim")
    await kro.apply_instance("Claim", "first", {"target": "shared"})
    await kro.wait_instance(gvr, "first")
    owned = await kro.get(CONFIGMAPS, "shared")

    await kro.apply_instance("Claim", "second", {"target": "shared"})
    second = await kro.wait_instance(
        gvr, "second", lambda o: state(o) == "ERROR", what="the second instance in ERROR"
    )
    resources_ready = condition(second, "ResourcesReady")
    assert resources_ready["status"] == "False"
    assert "belongs to a different ApplySet" in resources_ready["message"]
    assert condition(second, "Ready")["status"] == "False"

    still = await kro.get(CONFIGMAPS, "shared")
    assert still["data"] == {"owner": "first"}
    assert meta(still)["labels"]["kro.run/instance-name"] == "first"
    assert meta(still)["resourceVersion"] == meta(owned)["resourceVersion"]
    await kro.wait_instance(gvr, "first")

    # Deleting the loser must not take the winner's object with it.
    await kro.client.delete(gvr, "second", namespace=kro.namespace)
    await kro.wait_gone(gvr, "second")
    assert (await kro.get(CONFIGMAPS, "shared"))["data"] == {"owner": "first"}


async def test_a_child_held_by_a_finalizer_holds_back_the_next_wave(kro: KroEnv) -> None:
    rgd = kro.rgd(
        "held",
        "Held",
        {"value": "string | default=x"},
        [
            {"id": "base", "template": configmap("${schema.metadata.name}-base", {"v": "x"})},
            {
                "id": "top",
                "template": configmap("${schema.metadata.name}-top", {"v": "${base.data.v}"}),
            },
        ],
    )
    await _serve(kro, rgd)
    await kro.apply_instance("Held", "held", {})
    gvr = await kro.gvr_of("Held")
    await kro.wait_instance(gvr, "held")
    hold = {"metadata": {"finalizers": ["e2e.kro.run/hold"]}}
    await kro.client.patch(CONFIGMAPS, "held-top", hold, namespace=kro.namespace)

    await kro.client.delete(gvr, "held", namespace=kro.namespace)
    deleting = await kro.wait_instance(
        gvr, "held", lambda o: state(o) == "DELETING", what="the instance DELETING"
    )
    under_deletion = condition(deleting, "ResourcesReady")
    assert (under_deletion["status"], under_deletion["reason"]) == ("Unknown", "UnderDeletion")
    await wait_for(lambda: _terminating(kro, "held-top"), what="held-top terminating")

    # Several deletion passes later (1s requeues) the lower wave is still untouched.
    loop = asyncio.get_running_loop()
    until = loop.time() + 2.5
    while loop.time() < until:
        base = await kro.get(CONFIGMAPS, "held-base")
        assert not meta(base).get("deletionTimestamp"), "wave 1 deleted while wave 2 remains"
        await asyncio.sleep(0.25)

    await kro.client.patch(
        CONFIGMAPS, "held-top", {"metadata": {"finalizers": None}}, namespace=kro.namespace
    )
    await kro.wait_gone(CONFIGMAPS, "held-base")
    await kro.wait_gone(gvr, "held")


async def _terminating(kro: KroEnv, name: str) -> bool:
    return bool(meta(await kro.get(CONFIGMAPS, name)).get("deletionTimestamp"))


async def test_kro_labelling_never_brings_back_a_deleted_instance(kro: KroEnv) -> None:
    """A new instance is labelled from the informer cache's view, without a read first; a
    cache that has yet to see the instance's deletion must not make that server-side apply
    create an empty instance. kro's labelling carries the uid it saw: the API server refuses
    it for an instance that is gone (what this checks), and applies it to the live one."""
    rgd = kro.rgd(
        "labelled",
        "Labelled",
        {"value": "string | default=x"},
        [{"id": "cm", "template": configmap("${schema.metadata.name}-cm", {"v": "x"})}],
    )
    await _serve(kro, rgd)
    await kro.apply_instance("Labelled", "gone", {})
    gvr = await kro.gvr_of("Labelled")
    seen = meta(await kro.wait_instance(gvr, "gone"))
    body, _ = labeller_body(
        gvr, "Labelled", seen, instance_labels(rgd["metadata"]["name"], "uid"), tooling="kro/v0"
    )
    await kro.client.delete(gvr, "gone", namespace=kro.namespace)
    await kro.wait_gone(gvr, "gone")

    with pytest.raises(Conflict, match="uid mismatch"):
        await kro.client.apply(
            gvr, body, field_manager=FIELD_MANAGER_LABELLER, force=True, namespace=kro.namespace
        )
    with pytest.raises(NotFound):
        await kro.get(gvr, "gone")
