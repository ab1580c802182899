"""kro.runtime as an operator library: the example operators' throughput, and its own overhead.

1. Library overhead per reconcile, without an API server: a controller built as the builder
   builds it (named queue with client-go's rate limiter, controller-runtime metrics) over a
   cache filled with N Websites, whose reconciler reads the object from the cache (as a dict, or
   validated into the pydantic model), recomputes its status condition and calls StatusWriter,
   which skips the write because nothing changed. This is what a steady-state resync costs.
   A no-op reconciler over the same queue separates the queue + controller share.
2. Reconciles per second of each example operator of examples/runtime/ over N objects on the
   local control plane: the objects are created first, then the operator starts (as its main()
   wires it, one worker, an unthrottled client) and the clock runs until the world has
   converged (every ConfigMap labelled; every Secret copied; every Website's Deployment created
   and its status Available at the current generation). Reconciles are read from the
   operator's own controller_runtime_reconcile_total; they include the reconciles the
   operator's own writes cause.

    python bench/bench_runtime.py                 # 1,000 objects
    python bench/bench_runtime.py --objects 200 --skip-cluster

Uses the cluster of KRO_TEST_KUBECONFIG / KUBECONFIG if set, else starts a local control plane
(without nodes: the Websites ask for 0 replicas). Results: bench/results/runtime.json (a part
skipped with --skip-cluster keeps its previous figures).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import yaml

from kro.runtime import (
    GVR,
    Client,
    ClientOptions,
    Manager,
    ManagerOptions,
    configure_logging,
    errors,
)
from kro.runtime.adapters import ObjectReconciler
from kro.runtime.cache import InformerCache
from kro.runtime.conditions import set_condition
from kro.runtime.config import ConnectionConfig
from kro.runtime.controller import Controller
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.reader import CachedReader, Kind
from kro.runtime.reconcile import Request, Result
from kro.runtime.status import StatusWriter
from kro.runtime.workqueue import WorkQueue

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
EXAMPLES = ROOT / "examples" / "runtime"
CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
NAMESPACES = GVR("", "v1", "namespaces")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
WEBSITES = GVR("example.kro.run", "v1alpha1", "websites")
T0 = "2026-01-01T00:00:00Z"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# -- 1. overhead without an API server -------------------------------------------------------------


def website(i: int) -> dict[str, Any]:
    name = f"site-{i:05d}"
    return {
        "apiVersion": "example.kro.run/v1alpha1",
        "kind": "Website",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-{i}",
            "resourceVersion": str(i + 1),
            "generation": 1,
            "labels": {"app.kubernetes.io/name": name},
        },
        "spec": {"image": "nginx:1.27", "replicas": 2},
        "status": {
            "readyReplicas": 2,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "MinimumReplicasAvailable",
                    "message": "2/2 replicas ready",
                    "observedGeneration": 1,
                    "lastTransitionTime": T0,
                }
            ],
        },
    }


async def overhead(objects: int, rounds: int) -> dict[str, Any]:
    model = example("website_operator").Website
    model.gvr = WEBSITES  # what discovery resolves on first use; no server here
    # Never contacted: every read is served by the cache and every status write is skipped.
    client = Client(ConnectionConfig(server="http://127.0.0.1:9"))
    cache = InformerCache(client)
    informer = cache.informer(WEBSITES)
    informer.store.replace([website(i) for i in range(objects)])
    informer._synced.set()  # a filled cache without a server (bench only)
    reader = CachedReader(cache, client)
    writer = StatusWriter(client)

    def desired_status(obj: dict[str, Any], spec: Any) -> dict[str, Any]:
        status: dict[str, Any] = orjson.loads(orjson.dumps(obj.get("status") or {}))
        ready = status.get("readyReplicas", 0)
        set_condition(status, "Available", "True" if ready >= spec["replicas"] else "False",
                      reason="MinimumReplicasAvailable", message=f"{ready}/2 replicas ready",
                      observed_generation=obj["metadata"]["generation"], now=T0)  # fmt: skip
        return status

    async def as_dict(obj: dict[str, Any]) -> None:
        await writer.update(WEBSITES, obj, desired_status(obj, obj["spec"]))

    async def as_model(site: Any) -> None:  # as the example: the typed status, changed in place
        site.status.ready_replicas = 2
        set_condition(site.status, "Available", "True", reason="MinimumReplicasAvailable",
                      message="2/2 replicas ready", observed_generation=site.metadata.generation,
                      now=T0)  # fmt: skip
        await writer.update(type(site), site, site.status)

    class Noop:
        async def reconcile(self, request: Request) -> Result:
            return Result()

    results: dict[str, Any] = {"objects": objects, "rounds": rounds}
    variants: list[tuple[str, Any, Kind]] = [
        ("queue_and_controller_only", Noop(), WEBSITES),
        ("dict_read_condition_status_skip", as_dict, WEBSITES),
        ("typed_read_condition_status_skip", as_model, model),
    ]
    for label, fn, kind in variants:
        reconciler = fn if isinstance(fn, Noop) else ObjectReconciler(reader, kind, fn)
        wall, cpu = await _drive(reconciler, objects, rounds)
        total = objects * rounds
        results[label] = {
            "reconciles": total,
            "us_per_reconcile_wall": round(wall / total * 1e6, 1),
            "us_per_reconcile_cpu": round(cpu / total * 1e6, 1),
            "reconciles_per_s": round(total / wall),
        }
    results["status_writes"] = writer.writes
    results["status_writes_skipped"] = writer.skipped
    results["cache_reads"] = reader.cache_reads
    results["api_reads"] = reader.api_reads
    await client.close()
    return results


async def _drive(reconciler: Any, objects: int, rounds: int) -> tuple[float, float]:
    metrics = PrometheusProvider()
    queue: WorkQueue[Request] = WorkQueue("bench", metrics=metrics)
    done = asyncio.Event()
    count = 0

    class Counting:
        async def reconcile(self, request: Request) -> Any:
            nonlocal count
            result = await reconciler.reconcile(request)
            count += 1
            if count % objects == 0:
                done.set()
            return result

    controller = Controller("bench", Counting(), queue, metrics=metrics)
    task = asyncio.create_task(controller.run())
    requests = [Request("bench", f"site-{i:05d}") for i in range(objects)]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        done.clear()
        for request in requests:
            queue.add(request)
        await done.wait()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    controller.shutdown()
    await task
    return wall, cpu


# -- 2. the example operators on the control plane ---------------------------------------------


async def concurrently(items: list[Any], op: Callable[[Any], Awaitable[Any]], n: int = 32) -> None:
    pending = iter(items)

    async def worker() -> None:
        for item in pending:
            await op(item)

    async with asyncio.TaskGroup() as group:
        for _ in range(n):
            group.create_task(worker())


def reconcile_total(manager: Manager, controller: str) -> int:
    text = manager.metrics.render().decode()
    pattern = r"^controller_runtime_reconcile_total\{(.*)\} (\S+)$"
    return int(
        sum(float(v) for labels, v in re.findall(pattern, text, re.M) if controller in labels)
    )


async def make_namespace(client: Client, prefix: str) -> str:
    name = f"{prefix}-{secrets.token_hex(3)}"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": name}})  # fmt: skip
    return name


async def converge(
    client: Client,
    setup: Callable[[Manager], None],
    namespace: str,
    controller: str,
    converged: Callable[[], Awaitable[bool]],
    *,
    timeout_s: float,
) -> dict[str, Any]:
    """Start the operator, time it until `converged()`, then until its queue goes idle."""
    manager = Manager(ManagerOptions(handle_signals=False, namespace=namespace), client=client)
    setup(manager)
    began = time.perf_counter()
    task = asyncio.create_task(manager.run())
    try:
        while not await converged():
            if task.done():
                task.result()
            if time.perf_counter() - began > timeout_s:
                raise TimeoutError(f"{controller} did not converge in {timeout_s}s")
            await asyncio.sleep(0.25)
        elapsed = time.perf_counter() - began
        reconciles = reconcile_total(manager, controller)
        idle, last = 0, -1
        while idle < 4:  # the follow-up reconciles of its own writes
            await asyncio.sleep(0.5)
            now = reconcile_total(manager, controller)
            idle, last = (idle + 1, now) if now == last else (0, now)
        errors_total = sum(
            float(v)
            for labels, v in re.findall(
                r"^controller_runtime_reconcile_total\{(.*)\} (\S+)$",
                manager.metrics.render().decode(),
                re.M,
            )
            if controller in labels and 'result="error"' in labels
        )
    finally:
        manager.stop()
        await asyncio.wait_for(task, 60)
    return {
        "seconds_to_converge": round(elapsed, 2),
        "reconciles_at_convergence": reconciles,
        "reconciles_per_s": round(reconciles / elapsed, 1),
        "reconciles_when_idle": last,
        "reconcile_errors": int(errors_total),
    }


async def bench_labeller(client: Client, objects: int) -> dict[str, Any]:
    labeller = example("configmap_labeller")
    ns = await make_namespace(client, "bench-labeller")
    team = labeller.TEAM

    async def create(i: int) -> None:
        await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:05d}", "annotations": {team: f"team-{i % 7}"}},
            "data": {"k": "v"}}, namespace=ns)  # fmt: skip

    await concurrently(list(range(objects)), create)

    async def converged() -> bool:
        items, _ = await client.list_all(CONFIGMAPS, namespace=ns, label_selector=team)
        return len(items) >= objects

    result = await converge(client, labeller.setup, ns, "configmap-labeller", converged,
                            timeout_s=600)  # fmt: skip
    await client.delete(NAMESPACES, ns)
    return {"objects": objects, **result}


async def bench_replicator(client: Client, objects: int) -> dict[str, Any]:
    replicator = example("secret_replicator")
    ns = await make_namespace(client, "bench-replicator")
    target = await make_namespace(client, "bench-replicas")

    async def create(i: int) -> None:
        await client.create(SECRETS, {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": f"s-{i:05d}", "annotations": {replicator.TARGETS: target}},
            "stringData": {"password": f"p{i}"}}, namespace=ns)  # fmt: skip

    await concurrently(list(range(objects)), create)

    async def converged() -> bool:
        items, _ = await client.list_all(
            SECRETS, namespace=target, label_selector=replicator.REPLICA_OF
        )
        return len(items) >= objects

    result = await converge(client, replicator.setup, ns, "secret-replicator", converged,
                            timeout_s=900)  # fmt: skip
    # The sources hold the operator's finalizer, and the operator is gone: let them go.
    sources, _ = await client.list_all(SECRETS, namespace=ns)

    async def release(obj: dict[str, Any]) -> None:
        if obj["metadata"].get("finalizers"):
            await client.patch(SECRETS, obj["metadata"]["name"],
                               {"metadata": {"finalizers": None}}, namespace=ns)  # fmt: skip

    await concurrently(sources, release)
    for name in (ns, target):
        await client.delete(NAMESPACES, name)
    return {"objects": objects, "copies_per_object": 1, **result}


async def bench_websites(client: Client, objects: int) -> dict[str, Any]:
    operator = example("website_operator")
    manifest = yaml.safe_load((EXAMPLES / "website-crd.yaml").read_text())
    with contextlib.suppress(errors.AlreadyExists):
        await client.create(CRDS, manifest)
    while True:
        crd = await client.get(CRDS, "websites.example.kro.run")
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            break
        await asyncio.sleep(0.2)
    ns = await make_namespace(client, "bench-websites")

    async def create(i: int) -> None:
        while True:
            try:
                await client.create(WEBSITES, {"apiVersion": "example.kro.run/v1alpha1",
                    "kind": "Website", "metadata": {"name": f"w-{i:05d}"},
                    "spec": {"image": "nginx:1.27", "replicas": 0}}, namespace=ns)  # fmt: skip
                return
            except errors.NotFound:  # the CRD is Established a moment before it is served
                await asyncio.sleep(0.2)

    await concurrently(list(range(objects)), create)

    async def converged() -> bool:
        items, _ = await client.list_all(WEBSITES, namespace=ns)
        return len(items) >= objects and all(_available(o) for o in items)

    result = await converge(client, operator.setup, ns, "website", converged, timeout_s=1200)
    await client.delete(NAMESPACES, ns)
    return {"objects": objects, "replicas": 0, **result}


def _available(site: dict[str, Any]) -> bool:
    generation = site["metadata"].get("generation")
    for c in (site.get("status") or {}).get("conditions") or []:
        if c["type"] == "Available" and c["status"] == "True":
            return bool(c.get("observedGeneration") == generation)
    return False


async def operators(kubeconfig: str, objects: int, qps: float) -> dict[str, Any]:
    options = ClientOptions(qps=qps, burst=max(1, int(qps * 2)) if qps else 100)
    async with await Client.from_kubeconfig(kubeconfig, options=options) as client:
        results: dict[str, Any] = {"client_qps": qps or "unthrottled", "workers": 1}
        for name, run in (
            ("configmap_labeller", bench_labeller),
            ("secret_replicator", bench_replicator),
            ("website_operator", bench_websites),
        ):
            print(f"... {name}: {objects} objects", flush=True)
            results[name] = await run(client, objects)
            print(f"    {results[name]}", flush=True)
        return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20, help="overhead: passes over the cache")
    parser.add_argument("--qps", type=float, default=0.0, help="operator client QPS (0: none)")
    parser.add_argument("--skip-cluster", action="store_true")
    args = parser.parse_args()
    configure_logging("console", "warning")

    results: dict[str, Any] = {"overhead": asyncio.run(overhead(args.objects, args.rounds))}
    print("library overhead per reconcile (no API server):")
    for key, value in results["overhead"].items():
        if isinstance(value, dict):
            print(f"  {key:36} {value['us_per_reconcile_wall']:>7} us wall "
                  f"{value['us_per_reconcile_cpu']:>7} us cpu "
                  f"{value['reconciles_per_s']:>8}/s")  # fmt: skip
    if not args.skip_cluster:
        kubeconfig = os.environ.get("KRO_TEST_KUBECONFIG") or os.environ.get("KUBECONFIG")
        if kubeconfig:
            results["operators"] = asyncio.run(operators(kubeconfig, args.objects, args.qps))
        else:
            from kro.testing.cluster import ClusterOptions, LocalCluster

            with LocalCluster(options=ClusterOptions(nodes=0)) as state:
                results["operators"] = asyncio.run(
                    operators(state.kubeconfig, args.objects, args.qps)
                )
        print(f"example operators over {args.objects} objects on the local control plane:")
        for key, value in results["operators"].items():
            if isinstance(value, dict):
                print(
                    f"  {key:20} {value['reconciles_per_s']:>7} reconciles/s "
                    f"({value['reconciles_at_convergence']} reconciles, converged in "
                    f"{value['seconds_to_converge']} s, {value['reconcile_errors']} errors)"
                )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "runtime.json"
    previous = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**previous, **results}, indent=2) + "\n")  # keep a skipped part
    print(f"written to {path}")


if __name__ == "__main__":
    main()
