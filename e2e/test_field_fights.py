"""A field another controller keeps rewriting: kro stops fighting, and says so.

kube-controller-manager owns the annotation `deployment.kubernetes.io/revision` on every
Deployment and writes the revision of the current ReplicaSet into it. A template that sets it
too makes kro and kube-controller-manager rewrite it in turn forever (upstream kro loops at
several writes a second). kro-py counts the rounds (kro.applyset.contest), yields the field
after a bounded number, and reports it: the instance's FieldConflict condition names the
resource id, the field path and the other manager, a Warning Event says the same, and
`instance_field_conflicts_total` counts the rounds. Afterwards the Deployment is not written
again: its resourceVersion and generation stay put for a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from kro_harness import (
    DEPLOYMENTS,
    KroEnv,
    condition,
    kro_fixtures,
    meta,
    wait_for,
)

from kro.runtime.gvk import GVR

REVISION = "deployment.kubernetes.io/revision"
EVENTS = GVR("", "v1", "events")
QUIET_S = 60.0
MAX_WRITES_BEFORE_YIELD = 20


controller, kro = kro_fixtures()


def fighting_rgd(kro: KroEnv) -> dict[str, Any]:
    return kro.rgd(
        "fight",
        "RevisionFight",
        {"image": 'string | default="nginx"'},
        [
            {
                "id": "deployment",
                "template": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {
                        "name": "${schema.metadata.name}",
                        # kube-controller-manager writes "1" here: a fight.
                        "annotations": {REVISION: "7"},
                    },
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": "${schema.metadata.name}"}},
                        "template": {
                            "metadata": {"labels": {"app": "${schema.metadata.name}"}},
                            "spec": {
                                "containers": [{"name": "web", "image": "${schema.spec.image}"}]
                            },
                        },
                    },
                },
            }
        ],
    )


async def count_writes(kro: KroEnv, name: str, writes: list[str]) -> None:
    """Append the resourceVersion of every write to the Deployment (a watch, no polling)."""
    async with contextlib.aclosing(
        kro.client.watch(
            DEPLOYMENTS,
            namespace=kro.namespace,
            field_selector=f"metadata.name={name}",
            allow_bookmarks=False,
        )
    ) as stream:
        async for event in stream:
            if event.type in ("ADDED", "MODIFIED"):
                writes.append(str(meta(event.object).get("resourceVersion")))


async def test_kro_yields_a_field_kube_controller_manager_keeps_rewriting(kro: KroEnv) -> None:
    rgd = fighting_rgd(kro)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await kro.gvr_of("RevisionFight")

    writes: list[str] = []
    counter = asyncio.create_task(count_writes(kro, "web", writes))
    try:
        await kro.apply_instance("RevisionFight", "web", {})
        live = await kro.wait_instance(
            gvr,
            "web",
            lambda o: condition(o, "FieldConflict").get("status") == "True",
            what="FieldConflict True",
            timeout_s=90,
        )
        conflict = condition(live, "FieldConflict")
        assert conflict["reason"] == "FieldYielded"
        message = conflict["message"]
        assert 'resource "deployment"' in message
        assert f'metadata.annotations["{REVISION}"]' in message
        assert 'field manager "kube-controller-manager"' in message
        assert "Remove the field from the resource template" in message
        assert conflict["observedGeneration"] == meta(live)["generation"]
        # kro-py's own condition is not a dependent of Ready; the rest of the list is upstream's.
        types = [c["type"] for c in live["status"]["conditions"]]
        assert types[-1] == "Ready"

        async def warned() -> dict[str, Any] | None:
            items, _ = await kro.client.list_all(
                EVENTS,
                namespace=kro.namespace,
                field_selector="involvedObject.name=web,reason=FieldYielded",
            )
            return items[0] if items else None

        event = await wait_for(warned, what="a FieldYielded Warning Event")
        assert event["type"] == "Warning"
        assert REVISION in event["message"]
        assert "kube-controller-manager" in event["message"]
        assert len(writes) <= MAX_WRITES_BEFORE_YIELD, writes

        # The fight is over: nobody writes the Deployment again.
        deployment = await kro.get(DEPLOYMENTS, "web")
        version, generation = meta(deployment)["resourceVersion"], meta(deployment)["generation"]
        seen_before = len(writes)
        deadline = time.monotonic() + QUIET_S
        while time.monotonic() < deadline:
            await asyncio.sleep(2.0)
            now = await kro.get(DEPLOYMENTS, "web")
            assert meta(now)["generation"] == generation
            assert meta(now)["resourceVersion"] == version, writes[seen_before:]
        assert (await kro.get(DEPLOYMENTS, "web"))["metadata"]["annotations"][REVISION] == "1"
        assert "instance_field_conflicts_total" in kro.controller.scrape()  # type: ignore[union-attr]
    finally:
        counter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await counter


async def test_a_one_off_edit_is_corrected_and_not_reported(kro: KroEnv) -> None:
    """A person's edit is drift: kro takes the field back at once (round 1), as upstream."""
    rgd = fighting_rgd(kro)
    rgd["spec"]["resources"][0]["template"]["metadata"]["annotations"] = {"team": "a"}
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await kro.gvr_of("RevisionFight")
    await kro.apply_instance("RevisionFight", "calm", {})
    await kro.wait_instance(gvr, "calm")
    await kro.client.patch(
        DEPLOYMENTS,
        "calm",
        {"metadata": {"annotations": {"team": "b"}}},
        namespace=kro.namespace,
        field_manager="kubectl-edit",
    )

    async def restored() -> dict[str, Any] | None:
        live = await kro.get(DEPLOYMENTS, "calm")
        return live if live["metadata"]["annotations"]["team"] == "a" else None

    await wait_for(restored, what="kro restores the annotation")
    live = await kro.wait_instance(gvr, "calm")
    # Upstream's five, no FieldConflict (their order follows their transition times).
    types = [c["type"] for c in live["status"]["conditions"]]
    assert sorted(types) == sorted(
        ["InstanceManaged", "GraphResolved", "ResourcesReady", "WatchesHealthy", "Ready"]
    )
    assert types[-1] == "Ready"
