"""`--skip-unchanged=false`: kro's one memory of unchanged objects off, on the real control plane.

With the memory on (every other module), a converged instance costs no write: a child's watch
event that changes nothing kro applied brings a pass that applies nothing (e2e/test_settling.py
counts it). With it off, for debugging a suspected stale skip, every pass reads and applies every
object again: the same event brings one server-side apply per child, and the instance still
converges and stays ACTIVE, with every object as kro applied it (a re-apply of the same body
changes nothing on the server).
"""

from __future__ import annotations

from inprocess_controller import requests_since, server_requests
from kro_harness import CONFIGMAPS, CONTROLLER_ARGS, KroEnv, is_ready, kro_fixtures, meta, wait_for

controller, kro = kro_fixtures((*CONTROLLER_ARGS, "--skip-unchanged=false"))


def _applies(changed: dict[tuple[str, str], float]) -> float:
    return changed.get(("APPLY", "configmaps/"), 0.0)


async def test_every_pass_applies_every_child_again(kro: KroEnv) -> None:
    rgd = kro.rgd("again", "Again", {"text": "string"}, [
        {"id": "first", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "${schema.metadata.name}-first"},
                                     "data": {"text": "${schema.spec.text}"}}},
        {"id": "second", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "${schema.metadata.name}-second"},
                                      "data": {"copy": "${first.data.text}"}}},
    ])
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of("Again")
    await kro.apply_instance("Again", "demo", {"text": "hello"})
    await kro.wait_instance(gvr, "demo", is_ready)
    second = meta(await kro.get(CONFIGMAPS, "demo-second"))["resourceVersion"]

    before = await server_requests(kro.client)
    # A write kro does not own (a label of someone else's) on one child: its watch event brings
    # the instance back.
    first = await kro.get(CONFIGMAPS, "demo-first")
    labels = {**(meta(first).get("labels") or {}), "example.com/touched": "yes"}
    await kro.client.patch(CONFIGMAPS, "demo-first", {"metadata": {"labels": labels}},
                           namespace=kro.namespace)

    async def both_applied() -> bool:
        return _applies(requests_since(before, await server_requests(kro.client))) >= 2

    await wait_for(both_applied, what="kro to apply both children again")
    live = await kro.wait_instance(gvr, "demo", is_ready)
    assert live["status"]["state"] == "ACTIVE"
    # Applying the same body again changes nothing on the server.
    assert meta(await kro.get(CONFIGMAPS, "demo-second"))["resourceVersion"] == second
    assert (await kro.get(CONFIGMAPS, "demo-second"))["data"] == {"copy": "hello"}
