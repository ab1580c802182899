"""An instance's status is written by server-side apply through `/status` (upstream v0.10).

kro owns the whole status with one field manager of its own, `kro.run/instance-status`
(upstream does not pin the name, only that it differs from the children's `kro.run/applyset`).
A status field kro no longer produces (its expression reads a resource that is now excluded) is
removed by the next write, not left stale and not replaced by `{}`.
"""

from __future__ import annotations

from typing import Any

from kro_harness import KroEnv, is_ready, kro_fixtures, meta

controller, kro = kro_fixtures()

MANAGER = "kro.run/instance-status"


def _rgd(kro: KroEnv) -> dict[str, Any]:
    rgd = kro.rgd("statusapply", "StatusApply", {"on": "boolean | default=true"}, [
        {"id": "base", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "${schema.metadata.name}-base"},
                                    "data": {"a": "always"}}},
        {"id": "extra", "includeWhen": ["${schema.spec.on}"],
         "template": {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "${schema.metadata.name}-extra"},
                      "data": {"x": "sometimes"}}},
    ], status={"base": "${base.data.a}", "extra": "${extra.data.x}"})
    return rgd


async def test_status_is_applied_and_a_field_no_longer_produced_goes(kro: KroEnv) -> None:
    rgd = _rgd(kro)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of("StatusApply")
    await kro.apply_instance("StatusApply", "demo", {"on": True})
    live = await kro.wait_instance(
        gvr, "demo", lambda o: is_ready(o) and (o.get("status") or {}).get("extra") == "sometimes"
    )
    assert live["status"]["base"] == "always"
    writers = [
        (m["manager"], m["operation"], m.get("subresource", ""))
        for m in meta(live).get("managedFields") or []
        if "f:status" in (m.get("fieldsV1") or {})
    ]
    assert writers == [(MANAGER, "Apply", "status")]

    await kro.apply_instance("StatusApply", "demo", {"on": False})
    live = await kro.wait_instance(
        gvr, "demo",
        lambda o: is_ready(o) and meta(o).get("generation") == 2 and "extra" not in o["status"],
        what="the excluded resource's status field to go",
    )
    assert live["status"]["base"] == "always"
