"""RGD updates on the real control plane: GraphRevisions, invalid updates, breaking CRD changes.

A valid spec change issues the next GraphRevision and every instance moves to it (R-19, P-06);
an invalid one issues none, so the RGD reports GraphAccepted=False while the previous revision
keeps serving (N-07, N-30); a breaking change of the generated CRD is refused until the RGD
carries `kro.run/allow-breaking-changes: "true"` (Q-03, Q-05).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from kro_harness import (
    CONFIGMAPS,
    CRDS,
    KroEnv,
    condition,
    kro_fixtures,
    meta,
    state,
    wait_for,
)

from kro.runtime.gvk import GVR

controller, kro = kro_fixtures()


def _rgd(kro: KroEnv, greeting: str) -> dict[str, Any]:
    return kro.rgd(
        "greeter",
        "Greeter",
        {"name": "string", "note": "string | default=none"},
        [
            {
                "id": "greeting",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"text": f"{greeting} ${{schema.spec.name}}"},
                },
            }
        ],
    )


async def _serving(kro: KroEnv, greeting: str = "hello") -> tuple[dict[str, Any], GVR]:
    rgd = _rgd(kro, greeting)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of("Greeter")
    for name in ("alice", "bob"):
        await kro.apply_instance("Greeter", name, {"name": name})
    for name in ("alice", "bob"):
        await kro.wait_instance(gvr, name)
    return rgd, gvr


async def _text_is(kro: KroEnv, name: str, text: str) -> bool:
    return bool((await kro.get(CONFIGMAPS, name))["data"]["text"] == text)


async def test_rgd_update_issues_a_revision_and_instances_move_to_it(kro: KroEnv) -> None:
    rgd, gvr = await _serving(kro)
    name = rgd["metadata"]["name"]
    assert [r["metadata"]["name"] for r in await kro.revisions(name)] == [f"{name}-r00001"]

    await kro.apply_rgd(_rgd(kro, "goodbye"))
    live = await kro.wait_rgd_active(name)
    assert live["status"]["lastIssuedRevision"] == 2
    revisions = await kro.revisions(name)
    assert [r["spec"]["revision"] for r in revisions] == [1, 2]
    assert condition(revisions[-1], "GraphVerified")["status"] == "True"
    for instance in ("alice", "bob"):
        await wait_for(
            functools.partial(_text_is, kro, instance, f"goodbye {instance}"),
            what=f"{instance} rendered by revision 2",
        )
        await kro.wait_instance(gvr, instance)


async def test_invalid_update_keeps_the_old_revision_serving(kro: KroEnv) -> None:
    rgd, gvr = await _serving(kro)
    name = rgd["metadata"]["name"]
    broken = copy.deepcopy(rgd)
    broken["spec"]["resources"][0]["template"]["data"]["text"] = "${schema.spec.missing}"
    await kro.apply_rgd(broken)

    async def rejected() -> dict[str, Any] | None:
        live = await kro.get_rgd(name)
        accepted = condition(live, "GraphAccepted")
        current = accepted.get("observedGeneration") == meta(live)["generation"]
        return live if current and accepted.get("status") == "False" else None

    live = await wait_for(rejected, what="the invalid update rejected")
    assert state(live) == "Inactive"
    assert "missing" in condition(live, "GraphAccepted")["message"]
    assert [r["spec"]["revision"] for r in await kro.revisions(name)] == [1]

    # The instances keep working with revision 1: a spec change is still rendered.
    await kro.apply_instance("Greeter", "alice", {"name": "carol"})
    await wait_for(lambda: _text_is(kro, "alice", "hello carol"), what="alice re-rendered")
    await kro.wait_instance(gvr, "alice")

    await kro.apply_rgd(rgd)  # fixing the RGD makes it Active again, without a new revision
    await kro.wait_rgd_active(name)
    assert [r["spec"]["revision"] for r in await kro.revisions(name)] == [1]


async def test_breaking_crd_change_needs_the_allow_annotation(kro: KroEnv) -> None:
    rgd, gvr = await _serving(kro)
    name = rgd["metadata"]["name"]
    crd_name = f"{gvr.resource}.{gvr.group}"
    retyped = copy.deepcopy(rgd)
    retyped["spec"]["schema"]["spec"]["note"] = "integer | default=1"
    await kro.apply_rgd(retyped)

    async def blocked() -> dict[str, Any] | None:
        live = await kro.get_rgd(name)
        kind_ready = condition(live, "KindReady")
        return live if kind_ready.get("status") == "False" else None

    live = await wait_for(blocked, what="KindReady=False for the breaking change")
    assert "breaking changes detected" in condition(live, "KindReady")["message"]
    assert state(live) == "Inactive"
    crd = await kro.client.get(CRDS, crd_name)
    assert _note_type(crd) == "string"

    retyped["metadata"]["annotations"] = {"kro.run/allow-breaking-changes": "true"}
    await kro.apply_rgd(retyped)
    await kro.wait_rgd_active(name)
    crd = await kro.client.get(CRDS, crd_name)
    assert _note_type(crd) == "integer"


def _note_type(crd: dict[str, Any]) -> str:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return str(schema["properties"]["spec"]["properties"]["note"]["type"])
