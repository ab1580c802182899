"""A restarted controller costs nothing for instances that are already converged.

Every upgrade of kro restarts it. With converged instances, the restarted controller must reach
steady state without a single write: it reads what it must (the initial lists, and what its
caches cannot vouch for) and finds nothing to change.
"""

from __future__ import annotations

import asyncio

from inprocess_controller import InProcessController, Sample, Scrape
from kro_harness import CONFIGMAPS, KroEnv, kro_fixtures, meta

from kro.runtime.gvk import GVR

controller, kro = kro_fixtures()

SERVICES = GVR("", "v1", "services")
WRITES = ("POST", "PUT", "PATCH", "DELETE")
RESTART_ARGS = ("--dynamic-controller-concurrent-reconciles=4", "--instance-requeue-interval=1s")


async def _server_writes(kro: KroEnv) -> dict[tuple[str, str], float]:
    """kube-apiserver's count of write requests by (verb, resource/subresource), to name what
    was written when the assertion fails."""
    text = await kro.client.request("GET", "/metrics", accept="text/plain")
    found: dict[tuple[str, str], float] = {}
    for sample in Scrape.parse(str(text)).select("apiserver_request_total"):
        verb = sample.labels.get("verb", "")
        if verb in ("POST", "PUT", "PATCH", "DELETE", "APPLY", "CREATE", "UPDATE"):
            key = (
                verb,
                sample.labels.get("resource", "") + "/" + sample.labels.get("subresource", ""),
            )
            found[key] = found.get(key, 0) + sample.value
    return found


def _requests(scrape: Scrape) -> list[Sample]:
    return scrape.select("rest_client_requests_total")


def _writes(scrape: Scrape) -> float:
    return sum(scrape.total("rest_client_requests_total", method=m) for m in WRITES)


async def test_a_restarted_controller_writes_nothing_for_converged_instances(
    kro: KroEnv,
) -> None:
    rgd = kro.rgd(
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
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd["metadata"]["name"])
    gvr = await kro.gvr_of("Pair")
    names = [f"p{i}" for i in range(3)]
    for name in names:
        await kro.apply_instance("Pair", name, {"text": name})
    for name in names:
        await kro.wait_instance(gvr, name)
    await asyncio.sleep(3)  # past the last requeue of the first run
    before = {name: await kro.get(gvr, name) for name in names}
    services = {n: await kro.get(SERVICES, n) for n in names}
    children = {
        f"{n}-{c}": await kro.get(CONFIGMAPS, f"{n}-{c}")
        for n in names
        for c in ("first", "second")
    }

    # The restart, as `kro controller` runs (its client counts every request it sends).
    module_controller = kro.controller
    assert module_controller is not None
    module_controller.stop()
    server_before = await _server_writes(kro)
    restarted = InProcessController(module_controller.kubeconfig, RESTART_ARGS).start()
    try:
        await asyncio.sleep(5)  # lists, reconciles what its caches cannot vouch for, settles
        scrape = restarted.metrics()
        server_after = await _server_writes(kro)
    finally:
        await asyncio.to_thread(restarted.stop)
        module_controller.start()  # the module's controller again, for the clean-up
    requests = [(s.labels["method"], s.labels["code"], s.value) for s in _requests(scrape)]
    assert scrape.total("rest_client_requests_total", method="GET") > 0, requests  # it ran
    wrote = {k: v - server_before.get(k, 0) for k, v in server_after.items()}
    wrote = {k: v for k, v in wrote.items() if v}
    # No apply at all (children, the instance's labels or inventory): PATCH is what kro applies
    # with. What the RGD controller writes at a start (its status, its permission reviews) is
    # per RGD, not per instance; the instances' own status is checked by resourceVersion below.
    assert scrape.total("rest_client_requests_total", method="PATCH") == 0, (requests, wrote)
    for name in names:
        for child in (f"{name}-first", f"{name}-second"):
            assert (
                meta(await kro.get(CONFIGMAPS, child))["resourceVersion"]
                == meta(children[child])["resourceVersion"]
            )
        service = await kro.get(SERVICES, name)
        assert meta(service)["resourceVersion"] == meta(services[name])["resourceVersion"]
    for name in names:
        after = await kro.get(gvr, name)
        assert meta(after)["resourceVersion"] == meta(before[name])["resourceVersion"]
