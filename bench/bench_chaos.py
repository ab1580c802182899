"""Chaos: kro under kill -9 storms, control-plane outages and hostile expressions.

Four runs on one local control plane, each in a namespace of its own, against real `kro
controller` processes (kro.testing.kroprocess):

1. crash storm: 100 instances, 50 `kill -9` of kro at random moments (restarted at once), 20
   updates and 20 deletes spread over the storm;
2. kube-apiserver restart mid-reconcile (50 instances, 10 updates, 10 deletes after it);
3. etcd stopped for 20 s mid-reconcile (same shape);
4. hostile expressions (catastrophic regex, a 30M-character seededString, nested comprehensions
   over a 3,000-item list) beside a healthy instance, with /healthz probed every 100 ms.

For 1-3 it prints time to converge after the last fault and what a user would call a bug:
duplicates, orphans, stuck finalizers, lost updates, instances never Ready (all must be 0). For
4, /healthz p50/p99/max latency and failures, and whether the healthy instance became ACTIVE.
Results go to bench/results/chaos.json.

    python bench/bench_chaos.py [--kills 50] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kro.runtime.client import Client
from kro.runtime.errors import AlreadyExists, NotFound
from kro.runtime.gvk import GVK, GVR
from kro.testing.chaos import RGDS, CrashStorm, StormResult
from kro.testing.cluster import ClusterOptions, LocalCluster
from kro.testing.kroprocess import KroProcess

RESULTS = Path(__file__).with_name("results")
NAMESPACES = GVR("", "v1", "namespaces")
CONTROLLER_ARGS = ("--dynamic-controller-concurrent-reconciles=8", "--log-level=info")
GROUP = "chaos.bench.kro.run"


async def _namespace(client: Client, name: str) -> str:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, namespace)
    return name


def _starter(kubeconfig: Path, logs: Path, tag: str) -> Callable[[], KroProcess]:
    count = [0]

    def start() -> KroProcess:
        count[0] += 1
        return KroProcess(kubeconfig, logs / f"{tag}-{count[0]}.log", CONTROLLER_ARGS).start()

    return start


async def _storm(
    client: Client,
    kubeconfig: Path,
    logs: Path,
    tag: str,
    faults: Callable[[CrashStorm], list[Callable[[], Awaitable[None]]]],
    *,
    instances: int,
    updates: int,
    deletes: int,
    seed: int | None,
) -> StormResult:
    namespace = await _namespace(client, f"chaos-{tag}")
    storm = CrashStorm(client, namespace, f"{tag}.{GROUP}", _starter(kubeconfig, logs, tag),
                       seed=seed)  # fmt: skip
    try:
        return await storm.run_faults(
            faults(storm), instances=instances, updates=updates, deletes=deletes
        )
    finally:
        await storm.cleanup()
        if storm.controller is not None:
            storm.controller.stop()


def _report(name: str, result: dict[str, Any]) -> None:
    print(f"== {name}")
    for key, value in result.items():
        if key != "problems":
            print(f"  {key:20} {value}")
    for problem in result.get("problems") or []:
        print(f"  ! {problem}")


# -- hostile expressions --------------------------------------------------------------------


def _hostile_rgd(
    name: str, group: str, kind: str, value: str, spec: dict[str, str]
) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": name},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": kind, "group": group, "spec": spec},
            "resources": [
                {
                    "id": "config",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-" + kind.lower()},
                        "data": {"value": value},
                    },
                }
            ],
        },
    }


HOSTILE = {
    "Regex": ('${schema.spec.text.find("(a+)+$")}', {"text": "string"}, {"text": "a" * 30 + "!"}),
    "Huge": ("${random.seededString(30000000, schema.metadata.name)}", {"text": "string"},
             {"text": "x"}),
    "Nested": ("${string(size(schema.spec.items.map(x, schema.spec.items.map(y, x * y))))}",
               {"items": "[]integer"}, {"items": list(range(3000))}),
    "Healthy": ("${schema.spec.text}", {"text": "string"}, {"text": "fine"}),
}  # fmt: skip


def _probe_health(url: str, stop: threading.Event, samples: list[float]) -> None:
    while not stop.is_set():
        started = time.monotonic()
        try:
            with urllib.request.urlopen(url, timeout=5.0) as resp:
                ok = resp.status == 200
        except (urllib.error.URLError, OSError):
            ok = False
        samples.append(time.monotonic() - started if ok else float("inf"))
        stop.wait(0.1)


async def _hostile(client: Client, kubeconfig: Path, logs: Path, seconds: float) -> dict[str, Any]:
    namespace = await _namespace(client, "chaos-hostile")
    controller = _starter(kubeconfig, logs, "hostile")()
    samples: list[float] = []
    stop = threading.Event()
    prober = threading.Thread(
        target=_probe_health, args=(controller.health_url() + "/healthz", stop, samples)
    )
    prober.start()
    healthy_active = None
    conditions: dict[str, str] = {}
    try:
        for kind, (value, spec, _) in HOSTILE.items():
            rgd = _hostile_rgd(f"hostile-{kind.lower()}", GROUP, kind, value, spec)
            await client.apply(RGDS, rgd, field_manager="bench", force=True)
        started = time.monotonic()
        gvrs: dict[str, GVR] = {}
        for kind, (_, _, instance_spec) in HOSTILE.items():
            while kind not in gvrs:
                try:
                    gvrs[kind] = (
                        await client.mapper.resource_for(GVK(GROUP, "v1alpha1", kind))
                    ).gvr
                except Exception:
                    client.mapper.invalidate()
                    await asyncio.sleep(0.2)
            body = {
                "apiVersion": f"{GROUP}/v1alpha1",
                "kind": kind,
                "metadata": {"name": "x", "namespace": namespace},
                "spec": instance_spec,
            }
            await client.apply(gvrs[kind], body, field_manager="bench", force=True,
                               namespace=namespace)  # fmt: skip
        while time.monotonic() - started < seconds:
            live = await client.get(gvrs["Healthy"], "x", namespace=namespace)
            if healthy_active is None and (live.get("status") or {}).get("state") == "ACTIVE":
                healthy_active = round(time.monotonic() - started, 2)
            await asyncio.sleep(0.5)
        for kind in ("Regex", "Huge", "Nested"):
            live = await client.get(gvrs[kind], "x", namespace=namespace)
            for c in (live.get("status") or {}).get("conditions") or []:
                if c.get("status") == "False" and c.get("message"):
                    conditions[kind] = str(c["message"])[:160]
                    break
    finally:
        stop.set()
        prober.join()
        for kind in HOSTILE:
            with contextlib.suppress(NotFound):
                await client.delete(RGDS, f"hostile-{kind.lower()}")
        controller.stop()
    answered = sorted(s for s in samples if s != float("inf"))
    return {
        "probes": len(samples),
        "failed_probes": len(samples) - len(answered),
        "healthz_p50_s": round(statistics.median(answered), 4) if answered else None,
        "healthz_p99_s": round(answered[int(len(answered) * 0.99) - 1], 4) if answered else None,
        "healthz_max_s": round(answered[-1], 4) if answered else None,
        "healthy_instance_active_after_s": healthy_active,
        "hostile_conditions": conditions,
    }


# -- main -------------------------------------------------------------------------------------


async def _main(args: argparse.Namespace, cluster: LocalCluster, logs: Path) -> dict[str, Any]:
    assert cluster.state is not None
    kubeconfig = Path(cluster.state.kubeconfig)
    results: dict[str, Any] = {}
    async with await Client.from_kubeconfig(str(kubeconfig)) as client:

        storm = await _storm(
            client, kubeconfig, logs, "storm",
            lambda s: [s.kill_and_restart] * args.kills,
            instances=100, updates=20, deletes=20, seed=args.seed,
        )  # fmt: skip
        results["crash_storm"] = storm.as_dict()
        _report(f"crash storm, {args.kills} kills", results["crash_storm"])

        async def restart_apiserver() -> None:
            await asyncio.to_thread(cluster.restart, "kube-apiserver")

        outage = await _storm(
            client, kubeconfig, logs, "apiserver", lambda s: [restart_apiserver],
            instances=50, updates=10, deletes=10, seed=args.seed,
        )  # fmt: skip
        results["apiserver_restart"] = outage.as_dict()
        _report("kube-apiserver restart", results["apiserver_restart"])

        async def stop_etcd() -> None:
            await asyncio.to_thread(cluster.stop, "etcd")
            await asyncio.sleep(20.0)
            await asyncio.to_thread(cluster.start, "etcd")

        outage = await _storm(
            client, kubeconfig, logs, "etcd", lambda s: [stop_etcd],
            instances=50, updates=10, deletes=10, seed=args.seed,
        )  # fmt: skip
        results["etcd_stop_20s"] = outage.as_dict()
        _report("etcd stopped 20 s", results["etcd_stop_20s"])

        results["hostile"] = await _hostile(client, kubeconfig, logs, args.hostile_seconds)
        _report("hostile expressions", results["hostile"])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--hostile-seconds", type=float, default=30.0)
    args = parser.parse_args()
    cluster = LocalCluster(options=ClusterOptions(nodes=1))
    with tempfile.TemporaryDirectory(prefix="kro-chaos-") as logs, cluster:
        results = asyncio.run(_main(args, cluster, Path(logs)))
    failures = sum(
        StormResult(**{k: v for k, v in r.items()}).failures()
        for key, r in results.items()
        if key != "hostile"
    )
    results["all_failures"] = failures
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "chaos.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {path}; failures: {failures}")


if __name__ == "__main__":
    main()
