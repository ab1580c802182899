"""Client CPU per operation and informer cache memory; prints figures, never asserts.

    .venv/bin/python bench/bench_client.py [--objects 1000] [--requests 2000] [--events 1000]

Without KUBECONFIG the fake API server (kro.testing.fakeapi) runs in a child process on
127.0.0.1, so the figures are the client's CPU alone (`time.process_time` of this process).
With KUBECONFIG set, the same measurements run against that API server in a fresh namespace
(deleted afterwards). Watch events are produced by a separate writer process in both modes, so
the CPU per event is this process's alone. Figures are printed and written to
bench/results/client.json under "api_server" or "fake" (the latest run of each mode is kept).

Rows (compare with docs/spec python-client.md section 3.2: 128 us/GET, 177 us/SSA, 18 us/event):
* GET        one ~4.5 KB Deployment, `--concurrency` in flight;
* SSA        server-side apply of a changed annotation, force=true;
* watch      one MODIFIED Deployment event (~7.5 KB with the server's managedFields), decoded into
             a WatchEvent, two ways:
             - replayed: the writer finishes first, then the watch starts from the version before
               its changes, so the server replays them as fast as it can, several per wakeup:
               mostly the CPU of handling an event (the median of 3 replays);
             - live: the watch is open while the writer works, so events arrive at the writer's
               pace, mostly one per wakeup: the CPU per event then also pays for waking an idle
               process. `wakeups/event` (voluntary context switches) and the CPU of an idle
               asyncio loop waking at the same rate are printed beside it; on a shared 2-core VM
               a wakeup alone costs ~100 us at ~100 events/s.
* LIST       all `--objects` Deployments in pages of 500;
* cache      tracemalloc bytes per 1,000 objects held by an informer store: full objects with
             managedFields, full with managedFields stripped (default), metadata-only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import secrets
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer, strip_managed_fields
from kro.runtime.logging import configure

RESULTS = Path(__file__).resolve().parent / "results" / "client.json"
DEPLOY = GVR("apps", "v1", "deployments")
NAMESPACES = GVR("", "v1", "namespaces")
FIELD_MANAGER = "kro-bench"
ROOT = Path(__file__).resolve().parent.parent
OPTIONS = ClientOptions(qps=0, request_timeout_s=60.0)


def deployment(name: str, namespace: str) -> dict[str, Any]:
    """A realistic Deployment (~4.5 KB of JSON once the server adds its fields)."""
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "bench", "tier": "web"}
    env = [{"name": f"SETTING_{i}", "value": f"value-{i}-{secrets.token_hex(4)}"} for i in range(9)]
    probe = {
        "httpGet": {"path": "/healthz", "port": 8080},
        "periodSeconds": 10,
        "timeoutSeconds": 2,
        "failureThreshold": 3,
    }
    container = {
        "name": "app",
        "image": "registry.example.com/team/app:v1.2.3",
        "ports": [
            {"name": "http", "containerPort": 8080, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
        ],
        "env": env,
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "512Mi"},
        },
        "livenessProbe": probe,
        "readinessProbe": probe,
        "securityContext": {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app"},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {"bench.kro.run/description": "x" * 200},
            "finalizers": ["bench.kro.run/hold"],
        },
        "spec": {
            "replicas": 3,
            "paused": True,  # on a real cluster: no ReplicaSets or Pods, only our objects
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [container],
                    "volumes": [
                        {"name": "config", "configMap": {"name": f"{name}-config"}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                    "tolerations": [
                        {
                            "key": "dedicated",
                            "operator": "Equal",
                            "value": "web",
                            "effect": "NoSchedule",
                        }
                    ],
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": {"matchLabels": labels},
                                        "topologyKey": "kubernetes.io/hostname",
                                    },
                                }
                            ]
                        }
                    },
                },
            },
        },
    }


def status() -> dict[str, Any]:
    now = "2026-01-01T00:00:00Z"
    return {
        "observedGeneration": 1,
        "replicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "updatedReplicas": 3,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            },
            {
                "type": "Progressing",
                "status": "True",
                "reason": "NewReplicaSetAvailable",
                "message": "ReplicaSet has successfully progressed.",
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            },
        ],
    }


async def measure(
    n: int, concurrency: int, op: Callable[[int], Awaitable[Any]]
) -> tuple[float, float]:
    """(client CPU us per op, ops per second of wall time)."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await op(i)

    cpu, wall = time.process_time(), time.perf_counter()
    async with asyncio.TaskGroup() as tasks:  # one failure stops the other workers
        for _ in range(concurrency):
            tasks.create_task(worker())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu / n * 1e6, n / wall


async def seed(client: Client, namespace: str, count: int) -> list[str]:
    names = [f"bench-{i:05d}" for i in range(count)]

    async def create(i: int) -> None:
        await client.create(DEPLOY, deployment(names[i], namespace), field_manager="seed")
        # a patch, not update_status: a real controller-manager may have written status already
        await client.patch(
            DEPLOY, names[i], {"status": status()}, namespace=namespace, subresource="status"
        )

    await measure(count, 20, create)
    return names


class CpuWindow:
    """CPU seconds, wall seconds and voluntary context switches (sleeps) of this process."""

    def __init__(self) -> None:
        self.cpu, self.wall, self.sleeps = time.process_time(), time.perf_counter(), _sleeps()

    def per_op(self, n: int) -> dict[str, float]:
        """Figures per op for `n` ops since the window opened."""
        cpu, wall = time.process_time() - self.cpu, time.perf_counter() - self.wall
        return {
            "cpu_us_per_event": cpu / n * 1e6,
            "events_per_s": n / wall if wall else 0.0,
            "wakeups_per_event": (_sleeps() - self.sleeps) / n,
        }


def _sleeps() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


async def run_writer(namespace: str, events: int, objects: int, tag: str, args: list[str]) -> None:
    """`events` merge patches from a child process (its CPU is not ours); `tag` makes each
    round's values new, so every patch is a change and produces an event."""
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--writer",
        "--namespace",
        namespace,
        "--events",
        str(events),
        "--objects",
        str(objects),
        "--tag",
        tag,
        *args,
        stdout=subprocess.DEVNULL,
    )
    if await writer.wait():
        raise RuntimeError(f"writer exited with {writer.returncode}")


async def consume(client: Client, namespace: str, rv: str, events: int) -> dict[str, float]:
    """Read `events` MODIFIED events from `rv`; figures cover those after the first."""
    stream = client.watch(DEPLOY, namespace=namespace, resource_version=rv, timeout_s=600)
    seen = 0
    window = None
    async with contextlib.aclosing(stream):
        async for event in stream:
            if event.type != "MODIFIED":
                continue
            seen += 1
            if window is None:
                window = CpuWindow()
            if seen == events:
                break
    if window is None or seen < events:
        raise RuntimeError(f"the watch ended after {seen} of {events} events")
    return window.per_op(events - 1)


async def bench_watch_replayed(
    client: Client, namespace: str, names: list[str], events: int, writer_args: list[str]
) -> dict[str, float]:
    """The median of 3 replays of the same changes (the server's watch cache keeps them)."""
    _, rv = await client.list_all(DEPLOY, namespace=namespace, page_size=500)
    await run_writer(namespace, events, len(names), "replayed", writer_args)
    runs = [await asyncio.wait_for(consume(client, namespace, rv, events), 600) for _ in range(3)]
    return sorted(runs, key=lambda r: r["cpu_us_per_event"])[1]


async def bench_watch_live(
    client: Client, namespace: str, names: list[str], events: int, writer_args: list[str]
) -> dict[str, float]:
    _, rv = await client.list_all(DEPLOY, namespace=namespace, page_size=500)
    consumer = asyncio.create_task(consume(client, namespace, rv, events))
    try:
        await run_writer(namespace, events, len(names), "live", writer_args)
        figures = await asyncio.wait_for(consumer, timeout=600)
    finally:
        consumer.cancel()
    figures["idle_wakeup_cpu_us"] = await idle_wakeup_cost(figures["events_per_s"])
    return figures


async def idle_wakeup_cost(rate: float, wakeups: int = 300) -> float:
    """CPU of an asyncio loop that only sleeps and wakes `rate` times per second: the floor
    under a live event, which wakes this process as often."""
    period = 1 / rate if rate else 0.01
    window = CpuWindow()
    for _ in range(wakeups):
        await asyncio.sleep(period)
    return window.per_op(wakeups)["cpu_us_per_event"]


async def bench_cache(client: Client, namespace: str, count: int) -> dict[str, float]:
    out = {}
    cases: dict[str, dict[str, Any]] = {
        "full, with managedFields": {"transform": None},
        "full, managedFields stripped": {"transform": strip_managed_fields},
        "metadata-only, stripped": {"transform": strip_managed_fields, "metadata_only": True},
    }
    for label, kwargs in cases.items():
        gc.collect()
        tracemalloc.start()
        informer = Informer(client, DEPLOY, namespace=namespace, **kwargs)
        task = asyncio.create_task(informer.run())
        await informer.wait_for_sync()
        task.cancel()
        await asyncio.wait([task])
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        out[label] = held / count * 1000 / 2**20
        del informer
    return out


async def run(args: argparse.Namespace, url: str | None) -> None:
    if url is None:
        client = await Client.from_kubeconfig(options=OPTIONS)
        writer_args: list[str] = []
        where = f"API server {client.config.server} (KUBECONFIG)"
    else:
        client = Client.from_config(ConnectionConfig(server=url), OPTIONS)
        writer_args = ["--url", url]
        where = f"fake API server {url} (separate process)"
    namespace = f"kro-bench-{secrets.token_hex(3)}"
    print(f"kro.runtime client bench against {where}; namespace {namespace}")
    print(f"gc thresholds {gc.get_threshold()}, python {sys.version.split()[0]}")
    try:
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        names = await seed(client, namespace, args.objects)
        n, c = args.requests, args.concurrency
        await client.get(DEPLOY, names[0], namespace=namespace)  # warm the connection pool

        async def get(i: int) -> None:
            await client.get(DEPLOY, names[i % len(names)], namespace=namespace)

        async def apply(i: int) -> None:
            obj = {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": names[i % len(names)],
                    "namespace": namespace,
                    "annotations": {"bench.kro.run/round": str(i)},
                },
            }
            await client.apply(DEPLOY, obj, field_manager=FIELD_MANAGER, force=True)

        rows = [
            ("GET 4.5 KB Deployment", *await measure(n, c, get)),
            ("SSA PATCH (force)", *await measure(n, c, apply)),
        ]
        watch = {
            "replayed": await bench_watch_replayed(
                client, namespace, names, args.events, writer_args
            ),
            "live": await bench_watch_live(client, namespace, names, args.events, writer_args),
        }
        started, cpu = time.perf_counter(), time.process_time()
        items, _ = await client.list_all(DEPLOY, namespace=namespace, page_size=500)
        list_row = (time.perf_counter() - started) * 1e3, (time.process_time() - cpu) * 1e3
        del items
        print(f"\n{'operation':<28}{'client CPU/op':>16}{'ops/s':>12}")
        for label, cpu_us, rate in rows:
            print(f"{label:<28}{cpu_us:>13.0f} us{rate:>12.0f}")
        for mode, w in watch.items():
            print(
                f"{'watch event, ' + mode:<28}{w['cpu_us_per_event']:>13.0f} us"
                f"{w['events_per_s']:>12.0f}   {w['wakeups_per_event']:.2f} wakeups/event"
            )
        print(
            f"  (an idle loop waking {watch['live']['events_per_s']:.0f} times/s costs"
            f" {watch['live']['idle_wakeup_cpu_us']:.0f} us per wakeup)"
        )
        print(
            f"LIST {args.objects} Deployments: {list_row[0]:.0f} ms wall, "
            f"{list_row[1]:.0f} ms client CPU"
        )
        figures: dict[str, Any] = {
            "mode": where,
            "get": {"cpu_us": rows[0][1], "per_s": rows[0][2]},
            "ssa": {"cpu_us": rows[1][1], "per_s": rows[1][2]},
            "watch": watch,
            "list_ms": {"wall": list_row[0], "cpu": list_row[1]},
        }
        print("\ninformer cache, MiB per 1,000 objects (tracemalloc)")
        figures["cache_mib_per_1000"] = await bench_cache(client, namespace, args.objects)
        for label, mib in figures["cache_mib_per_1000"].items():
            print(f"  {label:<32}{mib:>8.2f}")
        save(figures, args, "fake" if url else "api_server")
    finally:
        await cleanup(client, namespace)
        await client.close()


def save(figures: dict[str, Any], args: argparse.Namespace, key: str) -> None:
    """Keep the latest run of each mode side by side: {"api_server": {...}, "fake": {...}}."""
    figures.update(
        objects=args.objects,
        events=args.events,
        python=sys.version.split()[0],
        gc_thresholds=list(gc.get_threshold()),
        when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    try:
        results = json.loads(RESULTS.read_text())
    except (OSError, ValueError):
        results = {}
    if not isinstance(results, dict):
        results = {}
    results[key] = figures
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"written to {RESULTS.relative_to(ROOT)}")


async def cleanup(client: Client, namespace: str) -> None:
    with contextlib.suppress(Exception):
        items, _ = await client.list_all(DEPLOY, namespace=namespace)

        async def release(i: int) -> None:
            name = items[i]["metadata"]["name"]
            await client.patch(
                DEPLOY, name, {"metadata": {"finalizers": None}}, namespace=namespace
            )
            await client.delete(DEPLOY, name, namespace=namespace)

        if items:
            await measure(len(items), 20, release)
        await client.delete(NAMESPACES, namespace)


async def write(args: argparse.Namespace) -> None:
    """The writer process: `--events` merge patches spread over the objects."""
    if args.url:
        client = Client.from_config(ConnectionConfig(server=args.url), OPTIONS)
    else:
        client = await Client.from_kubeconfig(options=OPTIONS)
    async with client:
        names = [f"bench-{i:05d}" for i in range(args.objects)]

        async def touch(i: int) -> None:
            patch = {"metadata": {"annotations": {"bench.kro.run/touch": f"{args.tag}-{i}"}}}
            await client.patch(DEPLOY, names[i % len(names)], patch, namespace=args.namespace)

        await measure(args.events, 20, touch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--namespace", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure("console", "warning")
    if args.writer:
        asyncio.run(write(args))
    elif os.environ.get("KUBECONFIG"):
        asyncio.run(run(args, None))
    else:
        child = subprocess.Popen(
            [sys.executable, "-m", "kro.testing.fakeapi"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            assert child.stdout is not None
            asyncio.run(run(args, child.stdout.readline().strip()))
        finally:
            child.terminate()
            child.wait(timeout=10)


if __name__ == "__main__":
    main()
