"""`deletionPolicy: Orphaned` on the real control plane (V-30..V-36, gate DeletionPolicy).

Wherever kro would delete a child — the instance is deleted, the resource leaves the RGD, its
includeWhen turns false, its collection shrinks — an `Orphaned` object stays, released: exactly
kro's labels and annotations are gone (every `kro.run/` and `internal.kro.run/` key,
`applyset.kubernetes.io/part-of`, `app.kubernetes.io/managed-by: kro`), while the author's
labels and annotations, its data and its ownerReferences are untouched; a `Delete` sibling is
deleted. A later instance adopts the released object (same UID). The live object decides:
flipping the policy back to `Delete` drops the annotation, and the object is deleted again. The
API server refuses the field on an externalRef, and without the gate the RGD is Inactive.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kro_harness import (
    CONFIGMAPS,
    CONTROLLER_ARGS,
    ControllerThread,
    KroEnv,
    condition,
    kro_env_with,
    kro_fixtures,
    meta,
    state,
    wait_for,
)

from kro.runtime.errors import Invalid

GATES = "--feature-gates=InstanceConditionEvents=true,DeletionPolicy=true"
ARGS = (*(a for a in CONTROLLER_ARGS if not a.startswith("--feature-gates")), GATES)

controller, kro = kro_fixtures(ARGS)

POLICY = "internal.kro.run/deletion-policy"
AUTHOR_LABELS = {"retention.example.com/tier": "keep"}
AUTHOR_ANNOTATIONS = {"retention.example.com/why": "audit record"}


def _cm(node_id: str, policy: str | None, *, name: str = "", **extra: Any) -> dict[str, Any]:
    """A ConfigMap resource `<instance>-<node_id>` with the author's own label and annotation."""
    resource: dict[str, Any] = {
        "id": node_id,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name or "${schema.metadata.name}-" + node_id.lower(),
                "labels": dict(AUTHOR_LABELS),
                "annotations": dict(AUTHOR_ANNOTATIONS),
            },
            "data": {"purpose": node_id},
        },
        **extra,
    }
    if policy is not None:
        resource["deletionPolicy"] = policy
    return resource


def _claimed(obj: dict[str, Any], node_id: str, *, orphaned: bool) -> None:
    """kro's marks, as a user sees them after an apply (V-32)."""
    labels, annotations = meta(obj)["labels"], meta(obj).get("annotations") or {}
    assert labels["kro.run/owned"] == "true"
    assert labels["kro.run/node-id"] == node_id
    assert labels["app.kubernetes.io/managed-by"] == "kro"
    assert labels["applyset.kubernetes.io/part-of"].startswith("applyset-")
    assert labels["retention.example.com/tier"] == "keep"
    if orphaned:
        assert annotations[POLICY] == "Orphaned"
    else:
        assert POLICY not in annotations


async def _wait_released(kro: KroEnv, name: str, before: dict[str, Any]) -> dict[str, Any]:
    """The object once released, checked against what it was while kro held it."""

    async def probe() -> dict[str, Any] | None:
        live = await kro.get(CONFIGMAPS, name)
        return None if "applyset.kubernetes.io/part-of" in meta(live).get("labels", {}) else live

    after = await wait_for(probe, what=f"{name} released")
    assert meta(after)["uid"] == meta(before)["uid"]
    assert meta(after)["labels"] == AUTHOR_LABELS
    assert meta(after)["annotations"] == AUTHOR_ANNOTATIONS
    assert meta(after).get("ownerReferences") == meta(before).get("ownerReferences")
    assert after["data"] == before["data"]
    return after


async def _ready(kro: KroEnv, kind: str, name: str, spec: dict[str, Any]) -> Any:
    await kro.apply_instance(kind, name, spec)
    gvr = await kro.gvr_of(kind)
    await kro.wait_instance(gvr, name)
    return gvr


async def test_instance_deletion_releases_orphaned_children_and_a_new_instance_adopts_them(
    kro: KroEnv,
) -> None:
    anchor = await kro.client.create(
        CONFIGMAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "anchor"}},
        namespace=kro.namespace,
    )
    owner_ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "anchor",
        "uid": meta(anchor)["uid"],
    }
    ledger = _cm("ledger", "Orphaned")
    ledger["template"]["metadata"]["ownerReferences"] = [owner_ref]
    # The ledger reads the scratch ConfigMap: it is in the higher deletion wave, which it must
    # not hold back once released (V-36).
    ledger["template"]["data"]["copied"] = "${scratch.data.purpose}"
    rgd = kro.rgd("keepsake", "Keepsake", {}, [_cm("scratch", "Delete"), ledger])
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await _ready(kro, "Keepsake", "one", {})
    held = await kro.get(CONFIGMAPS, "one-ledger")
    _claimed(held, "ledger", orphaned=True)
    _claimed(await kro.get(CONFIGMAPS, "one-scratch"), "scratch", orphaned=False)

    await kro.client.delete(gvr, "one", namespace=kro.namespace)
    await kro.wait_gone(gvr, "one", timeout_s=30)  # the finalizer came off
    await kro.wait_gone(CONFIGMAPS, "one-scratch", timeout_s=10)
    await _wait_released(kro, "one-ledger", held)

    await _ready(kro, "Keepsake", "one", {})
    adopted = await kro.get(CONFIGMAPS, "one-ledger")
    assert meta(adopted)["uid"] == meta(held)["uid"]
    _claimed(adopted, "ledger", orphaned=True)
    _claimed(await kro.get(CONFIGMAPS, "one-scratch"), "scratch", orphaned=False)


async def test_removing_a_resource_from_the_rgd_releases_it(kro: KroEnv) -> None:
    keep = [_cm("base", None)]
    orphaned, deleted = _cm("ledger", "Orphaned"), _cm("scratch", "Delete")
    rgd = kro.rgd("shrinking", "Shrinking", {}, [*keep, orphaned, deleted])
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    await _ready(kro, "Shrinking", "two", {})
    held = await kro.get(CONFIGMAPS, "two-ledger")
    _claimed(held, "ledger", orphaned=True)

    await kro.apply_rgd(kro.rgd("shrinking", "Shrinking", {}, keep))
    await kro.wait_rgd_active(meta(rgd)["name"])
    await kro.wait_gone(CONFIGMAPS, "two-scratch")
    await _wait_released(kro, "two-ledger", held)
    await kro.get(CONFIGMAPS, "two-base")


async def test_include_when_turning_false_releases_an_orphaned_resource(kro: KroEnv) -> None:
    when = {"includeWhen": ["${schema.spec.withExtra}"]}
    rgd = kro.rgd(
        "optional",
        "Optional",
        {"withExtra": "boolean | default=true"},
        [_cm("base", None), _cm("extra", "Orphaned", **when), _cm("spare", "Delete", **when)],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await _ready(kro, "Optional", "three", {"withExtra": True})
    held = await kro.get(CONFIGMAPS, "three-extra")
    _claimed(held, "extra", orphaned=True)

    await kro.apply_instance("Optional", "three", {"withExtra": False})
    await kro.wait_gone(CONFIGMAPS, "three-spare")
    await _wait_released(kro, "three-extra", held)
    await kro.wait_instance(gvr, "three")
    released = await kro.get(CONFIGMAPS, "three-extra")
    # Never again a prune candidate: a later pass leaves it exactly as it is.
    await kro.apply_instance("Optional", "three", {"withExtra": False})
    live = await kro.wait_instance(gvr, "three")
    assert state(live) == "ACTIVE"
    again = await kro.get(CONFIGMAPS, "three-extra")
    assert meta(again)["resourceVersion"] == meta(released)["resourceVersion"]


async def test_a_shrinking_collection_releases_the_dropped_orphaned_items(kro: KroEnv) -> None:
    def entries(node_id: str, policy: str) -> dict[str, Any]:
        return _cm(
            node_id,
            policy,
            name="${schema.metadata.name}-" + node_id.lower() + "-${entry}",
            forEach=[{"entry": "${schema.spec.items}"}],
        )

    rgd = kro.rgd(
        "entries",
        "Entries",
        {"items": "[]string"},
        [entries("kept", "Orphaned"), entries("temp", "Delete")],
    )
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    await _ready(kro, "Entries", "four", {"items": ["a", "b"]})
    held = await kro.get(CONFIGMAPS, "four-kept-b")
    _claimed(held, "kept", orphaned=True)
    assert meta(held)["labels"]["kro.run/collection-index"] == "1"

    await kro.apply_instance("Entries", "four", {"items": ["a"]})
    await kro.wait_gone(CONFIGMAPS, "four-temp-b")
    await _wait_released(kro, "four-kept-b", held)
    _claimed(await kro.get(CONFIGMAPS, "four-kept-a"), "kept", orphaned=True)


async def test_the_object_decides_flipping_back_to_delete_deletes_it_again(kro: KroEnv) -> None:
    rgd = kro.rgd("flip", "Flip", {}, [_cm("ledger", "Orphaned")])
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await _ready(kro, "Flip", "five", {})
    _claimed(await kro.get(CONFIGMAPS, "five-ledger"), "ledger", orphaned=True)

    await kro.apply_rgd(kro.rgd("flip", "Flip", {}, [_cm("ledger", "Delete")]))

    async def unmarked() -> dict[str, Any] | None:
        live = await kro.get(CONFIGMAPS, "five-ledger")
        return None if POLICY in (meta(live).get("annotations") or {}) else live

    _claimed(await wait_for(unmarked, what="annotation dropped"), "ledger", orphaned=False)
    await kro.client.delete(gvr, "five", namespace=kro.namespace)
    await kro.wait_gone(gvr, "five", timeout_s=30)
    await kro.wait_gone(CONFIGMAPS, "five-ledger", timeout_s=10)


async def test_the_api_server_refuses_a_policy_on_an_external_ref(kro: KroEnv) -> None:
    external = {
        "id": "shared",
        "deletionPolicy": "Orphaned",
        "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
    }
    with pytest.raises(Invalid) as caught:
        await kro.apply_rgd(kro.rgd("external", "External", {}, [_cm("base", None), external]))
    assert "deletionPolicy is only supported on template resources" in str(caught.value)
    for value in ("Detach", "Orphan"):
        with pytest.raises(Invalid):
            await kro.apply_rgd(kro.rgd("detach", "Detach", {}, [_cm("base", value)]))


@pytest.fixture
async def kro_gate_off(controller: ControllerThread, kube_namespace: str) -> AsyncIterator[KroEnv]:
    """This test's world with the gate off (the module's controller is paused)."""
    async with kro_env_with(controller, kube_namespace, CONTROLLER_ARGS) as env:
        yield env


async def test_without_the_gate_the_rgd_is_inactive_even_for_delete(kro_gate_off: KroEnv) -> None:
    kro = kro_gate_off
    rgd = kro.rgd("gated", "Gated", {}, [_cm("base", "Delete")])
    await kro.apply_rgd(rgd)
    name = meta(rgd)["name"]

    async def inactive() -> dict[str, Any] | None:
        live = await kro.get_rgd(name)
        accepted = condition(live, "GraphAccepted")
        return live if accepted.get("status") == "False" else None

    live = await wait_for(inactive, what=f"RGD {name} GraphAccepted=False")
    assert state(live) == "Inactive"
    assert "DeletionPolicy feature gate" in condition(live, "GraphAccepted")["message"]
