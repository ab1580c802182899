"""Two `kro controller` replicas with leader election, on the real control plane.

The failure this guards against was seen on an earlier build: the leader was paused (SIGSTOP)
past its lease, the other replica took over, the first was resumed and stood by, the second was
killed, and the first took the Lease back with a controller that had been shut down for good:
it led, answered /healthz and /readyz with 200, and never reconciled again.

Now losing the Lease ends the process (exit 1, as controller-runtime does), so a replica never
leads with the state of an old term; a paused leader reconciles nothing once it runs again,
because its workers ask whether the lease is still fresh on its own clock before each key; and
a replacement process (what the kubelet starts after the exit) takes over cleanly.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kro_harness import CONFIGMAPS, KroEnv, is_ready, meta, process_fixtures, wait_for

from kro.runtime import GVR, Client, errors
from kro.testing.kroprocess import KroProcess

LEASES = GVR("coordination.k8s.io", "v1", "leases")
LEASE_NAME = "controller.kro.run"


spawn, kro = process_fixtures("--log-level=debug")


async def holder(client: Client, namespace: str) -> str:
    try:
        lease = await client.get(LEASES, LEASE_NAME, namespace=namespace)
    except errors.NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def wait_holder(kro: KroEnv, identity: str, timeout_s: float = 60.0) -> None:
    async def probe() -> bool:
        return await holder(kro.client, kro.namespace) == identity

    await wait_for(probe, what=f"Lease held by {identity}", timeout_s=timeout_s)


def rgd(kro: KroEnv) -> dict[str, Any]:
    return kro.value_rgd("ha", "Replicated")


async def converged(kro: KroEnv, gvr: GVR, name: str, value: str) -> None:
    await kro.wait_instance(gvr, name, is_ready, timeout_s=90)

    async def child_matches() -> bool:
        children = await kro.children(CONFIGMAPS, name)
        return [c.get("data") for c in children] == [{"value": value}]

    await wait_for(child_matches, what=f"{name}'s ConfigMap with value {value}", timeout_s=90)


async def test_a_paused_leader_never_reconciles_again_and_a_new_process_takes_over(
    kro: KroEnv, spawn: Any
) -> None:
    first: KroProcess = spawn("first")
    first_id = first.identity()
    await wait_holder(kro, first_id)
    second: KroProcess = spawn("second")
    second_id = second.identity()

    definition = rgd(kro)
    await kro.apply_rgd(definition)
    try:
        await kro.wait_rgd_active(meta(definition)["name"])
        gvr = await kro.gvr_of("Replicated")
        await kro.apply_instance("Replicated", "one", {"value": "a"})
        await converged(kro, gvr, "one", "a")

        # Pause the leader past its lease: the second replica takes over and reconciles.
        first.pause()
        await wait_holder(kro, second_id, timeout_s=30)
        await kro.apply_instance("Replicated", "two", {"value": "b"})
        await kro.apply_instance("Replicated", "one", {"value": "a2"})
        await converged(kro, gvr, "two", "b")
        await converged(kro, gvr, "one", "a2")

        # Resumed, the first replica holds events for work it must not do: it reconciles
        # nothing, steps down and exits non-zero (a kubelet would start it again).
        resumed_at = first.offset()
        first.resume()
        assert await asyncio.to_thread(first.wait_exit, 30.0) == 1
        after = list(first.events(since=resumed_at))
        reconciles = [r for r in after if r.get("event") == "dynamic.reconcile"]
        assert reconciles == [], f"the resumed replica reconciled: {reconciles[:3]}"
        assert any(
            r.get("event") == "manager.fatal" and "leader election lost" in str(r.get("error"))
            for r in after
        ), first.tail()
        assert await holder(kro.client, kro.namespace) == second_id

        # The restarted first replica stands by; kill -9 the leader: the new process takes the
        # Lease once it expires, and a new instance reaches ACTIVE through it.
        restarted: KroProcess = spawn("first-restarted")
        restarted_id = restarted.identity()
        restarted.wait_event("leaderelection.new_leader")
        second.kill9()
        await wait_holder(kro, restarted_id, timeout_s=30)
        await kro.apply_instance("Replicated", "three", {"value": "c"})
        await converged(kro, gvr, "three", "c")
        assert restarted.get("/healthz") == 200
        assert restarted.get("/readyz") == 200
        assert restarted.find("dynamic.reconcile"), "the new leader reconciled nothing"
    finally:
        await kro.cleanup()
