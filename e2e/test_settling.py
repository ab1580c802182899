"""A restarted controller costs nothing for instances that are already converged.

Every upgrade of kro restarts it. With converged instances, the restarted controller must reach
steady state without a single write and with at most 2 requests per instance beyond its initial
lists: it reads each instance once and lists its ApplySet's members (one list per child kind),
and proves from their bodies that nothing needs applying (kro.applyset.cache); nothing is written
on an instance to remember a converged pass by. What changed while kro was down is still
reconciled.
"""

from __future__ import annotations

import asyncio
from typing import Any

from inprocess_controller import (
    InProcessController,
    Sample,
    Scrape,
    requests_since,
    server_requests,
)
from kro_harness import CONFIGMAPS, SERVICES, KroEnv, is_ready, kro_fixtures, meta, wait_for

from kro.runtime.gvk import GVR

controller, kro = kro_fixtures()

UPDATES = ("PUT", "PATCH", "APPLY", "UPDATE")
"""The server's verbs for writes kro could make to an existing instance or child. Creations and
deletions are left out: the server counts requests from every client, and kube-controller-manager
creates and deletes ConfigMaps, Services and instances while it tears down the namespaces of
earlier tests (no resourceVersion of this test's objects may change either, checked below)."""
RESTART_ARGS = ("--dynamic-controller-concurrent-reconciles=4", "--instance-requeue-interval=1s")


def _requests(scrape: Scrape) -> list[Sample]:
    return scrape.select("rest_client_requests_total")


def _total(scrape: Scrape, metric: str, resource: str) -> float:
    return sum(s.value for s in scrape.select(metric) if resource in str(s.labels))


def _pair_rgd(kro: KroEnv) -> dict[str, Any]:
    return kro.rgd(
        "pair",
        "Pair",
        {"text": "string"},
        [
            {
                "id": "first",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-first"},
                    "data": {"text": "${schema.spec.text}"},
                },
            },
            {
                "id": "second",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-second"},
                    "data": {"copy": "${first.data.text}"},
                },
            },
            {
                # Server defaults (protocol, targetPort, clusterIP) and an atomic selector map.
                "id": "service",
                "template": {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "spec": {
                        "selector": {"app": "${schema.metadata.name}"},
                        "ports": [{"port": 80}],
                    },
                },
            },
        ],
    )


async def _converged_pairs(kro: KroEnv, names: list[str]) -> GVR:
    """Pairs that are ACTIVE, with nothing written on them that kro's own bookkeeping needs."""
    rgd = _pair_rgd(kro)
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of("Pair")
    for name in names:
        await kro.apply_instance("Pair", name, {"text": name})
    for name in names:
        live = await kro.wait_instance(gvr, name, is_ready, what=f"{name} ACTIVE")
        assert not [k for k in meta(live).get("annotations") or {} if "settled" in k], live
    return gvr


async def _versions(kro: KroEnv, gvr: GVR, names: list[str]) -> dict[str, str]:
    """resourceVersion of every instance and child, by kind/name."""
    found: dict[str, str] = {}
    for name in names:
        objects = [
            (gvr, name),
            (SERVICES, name),
            (CONFIGMAPS, f"{name}-first"),
            (CONFIGMAPS, f"{name}-second"),
        ]
        for kind, object_name in objects:
            found[f"{kind.resource}/{object_name}"] = str(
                meta(await kro.get(kind, object_name))["resourceVersion"]
            )
    return found


async def _restart_until_settled(
    kro: KroEnv, gvr: GVR, count: int, restarted: InProcessController
) -> Scrape:
    """Once the restarted controller has reconciled every instance and holds their watches,
    and its queue is empty: its metrics after a window longer than the requeue interval (1 s),
    in which a pass that wrote anything would have come back."""

    async def settled() -> bool:
        scrape = restarted.metrics()
        return (
            _total(scrape, "dynamic_controller_reconcile_total", gvr.resource) >= count
            and _total(scrape, "dynamic_controller_instance_watch_count", gvr.resource) == count
            and scrape.total("dynamic_controller_queue_length") == 0
        )

    await wait_for(settled, what="the restarted controller reconciled every instance")
    await asyncio.sleep(2)  # the window: nothing may come back (see the docstring)
    return restarted.metrics()


async def test_a_restarted_controller_confirms_converged_instances_without_writing(
    kro: KroEnv,
) -> None:
    names = [f"p{i}" for i in range(3)]
    gvr = await _converged_pairs(kro, names)

    # The restart, as `kro controller` runs (its client counts every request it sends).
    module_controller = kro.controller
    assert module_controller is not None
    module_controller.stop()
    before = await _versions(kro, gvr, names)
    server_before = await server_requests(kro.client)
    restarted = InProcessController(module_controller.kubeconfig, RESTART_ARGS).start()
    try:
        scrape = await _restart_until_settled(kro, gvr, len(names), restarted)
        server = requests_since(server_before, await server_requests(kro.client))
    finally:
        await asyncio.to_thread(restarted.stop)
        module_controller.start()  # the module's controller again, for the clean-up
    requests = [(s.labels["method"], s.labels["code"], s.value) for s in _requests(scrape)]
    assert scrape.total("rest_client_requests_total", method="GET") > 0, requests  # it ran
    # No apply at all (children, the instance's labels or inventory):
    # PATCH is what kro applies with. What the RGD controller writes at a start (its status,
    # its permission reviews) is per RGD, not per instance.
    assert scrape.total("rest_client_requests_total", method="PATCH") == 0, (requests, server)
    # Beyond the lists its informers start with: one GET of each instance (the bound leaves
    # room for one more), one LIST of its ApplySet's members per child kind, and no child
    # read on its own. (The server's LIST counts are not checked: kube-controller-manager
    # lists every kind of the namespaces earlier tests deleted. bench_controller.py --restart
    # counts kro's own requests: 2 per instance of one child kind.)
    resources = {f"{gvr.resource}/", "configmaps/", "services/"}
    reads = sum(v for (verb, res), v in server.items() if verb == "GET" and res in resources)
    writes = {k: v for k, v in server.items() if k[0] in UPDATES and k[1] in resources}
    assert reads <= 2 * len(names), server
    assert not writes, server
    assert await _versions(kro, gvr, names) == before


async def test_a_child_changed_while_kro_was_down_is_reconciled_after_the_restart(
    kro: KroEnv,
) -> None:
    names = ["q0", "q1"]
    gvr = await _converged_pairs(kro, names)
    module_controller = kro.controller
    assert module_controller is not None
    module_controller.stop()
    await kro.client.patch(
        CONFIGMAPS,
        "q0-second",
        {"data": {"copy": "edited while kro was down"}},
        namespace=kro.namespace,
        field_manager="someone",
    )
    before = await _versions(kro, gvr, names)
    restarted = InProcessController(module_controller.kubeconfig, RESTART_ARGS).start()
    try:

        async def restored() -> bool:
            child = await kro.get(CONFIGMAPS, "q0-second")
            return (child.get("data") or {}).get("copy") == "q0"

        await wait_for(restored, what="q0-second restored by the restarted controller")
        await _restart_until_settled(kro, gvr, len(names), restarted)
    finally:
        await asyncio.to_thread(restarted.stop)
        module_controller.start()
    after = await _versions(kro, gvr, names)
    # Only the changed child was written; the other instance was confirmed as it was.
    assert {k for k in after if after[k] != before[k]} <= {
        "configmaps/q0-second",
        f"{gvr.resource}/q0",
    }
    assert after["configmaps/q0-second"] != before["configmaps/q0-second"]
