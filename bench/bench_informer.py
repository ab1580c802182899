"""Informer figures: time to sync 5,000 objects, sustained events/s, memory per 1,000 objects.

    .venv/bin/python bench/bench_informer.py [--objects 5000] [--events 5000]

With KUBECONFIG set, it runs against that API server in a fresh namespace (deleted afterwards)
and a separate writer process produces the watch events. Without it, the fake API server
(kro.testing.fakeapi) runs in this process: objects are seeded and changed directly in its
state (no HTTP writes), but every LIST page and watch event is still served over loopback HTTP
and decoded by the informer, so the CPU figures include the fake's own encoding.

Rows (printed, and written to bench/results/informer.json under "api_server" or "fake", so the
latest run of each mode is kept; never asserted):
* sync        wall time from `Informer.run()` to `has_synced()` for all objects (paginated LIST,
              pages of 500, decode, transform, store), full objects and metadata-only, the
              median of 3 runs;
* events      this process's CPU per MODIFIED event delivered to a handler (watch read, decode,
              managedFields stripped, store update, handler call), and events/s, two ways:
              - replayed: the informer lists, then its watch is held back while the writer makes
                all its changes; the watch then starts from the list's version and the server
                replays them in one burst, many events per wakeup: the CPU of handling an event;
              - live: the writer changes objects while the informer watches, so events arrive at
                the writer's pace and each wakeup of this process handles only a few: the CPU
                per event then includes waking up (`wakeups_per_event` counts voluntary context
                switches; on a shared 2-core VM one costs ~50 us at ~1,000 wakeups/s).
              Against a real server the writer is a child process, so its CPU is not counted.
* memory      tracemalloc bytes an informer's cache retains per 1,000 objects: full objects
              with managedFields stripped (the default transform), full with managedFields,
              and metadata-only (PartialObjectMetadata, stripped).
Objects are ConfigMaps of ~1 KB (8 data keys, 3 labels, an annotation).
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
import statistics
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

from kro.runtime import GVR, Client, ClientOptions, Informer, configure_logging
from kro.runtime.config import ConnectionConfig

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "informer.json"
CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")
OPTIONS = ClientOptions(qps=0, request_timeout_s=60.0)
WRITERS = 32


def configmap(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": "bench", "tier": "web", "bench.kro.run/shard": name[-1]},
            "annotations": {"bench.kro.run/description": "x" * 120},
        },
        "data": {f"setting-{i}": f"value-{i}-{secrets.token_hex(40)}" for i in range(8)},
    }


class Counter:
    """Counts MODIFIED events; notes time, CPU and sleeps at the first and at the target-th."""

    def __init__(self, target: int) -> None:
        self.updates = 0
        self.target = target
        self.first: tuple[float, float, int] = (0.0, 0.0, 0)
        self.last = self.first
        self.done = asyncio.Event()

    def on_add(self, obj: dict[str, Any]) -> None:
        pass

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.updates += 1
        if self.updates == 1:
            self.first = _sample()
        elif self.updates == self.target:
            self.last = _sample()
            self.done.set()

    def on_delete(self, obj: dict[str, Any]) -> None:
        pass

    def figures(self) -> dict[str, float]:
        """Per event after the first: rates count the intervals between events."""
        (wall0, cpu0, sleeps0), (wall1, cpu1, sleeps1) = self.first, self.last
        n = self.target - 1
        return {
            "count": self.target,
            "events_per_s": n / (wall1 - wall0) if wall1 > wall0 else 0.0,
            "cpu_us_per_event": (cpu1 - cpu0) / n * 1e6,
            "wakeups_per_event": (sleeps1 - sleeps0) / n,
        }


def _sample() -> tuple[float, float, int]:
    """(wall s, CPU s, voluntary context switches) of this process."""
    sleeps = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    return time.perf_counter(), time.process_time(), sleeps


class HeldInformer(Informer):
    """An informer whose watches wait for `release`: changes made meanwhile are replayed by the
    server from the list's resourceVersion as one burst (the reading path is unchanged)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = asyncio.Event()

    async def _watch(self) -> bool:
        await self.release.wait()
        return await super()._watch()


@contextlib.asynccontextmanager
async def synced(informer: Informer) -> AsyncIterator[float]:
    """Run the informer; yields the seconds its first sync took."""
    began = time.perf_counter()
    task = asyncio.create_task(informer.run(), name="bench.informer")
    try:
        await asyncio.wait_for(informer.wait_for_sync(), timeout=120)
        yield time.perf_counter() - began
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def bench_sync(client: Client, ns: str, count: int, runs: int = 3) -> dict[str, float]:
    """Median of `runs` first syncs, for full objects and for metadata only."""
    out = {}
    for label, metadata_only in (("full", False), ("metadata_only", True)):
        times = []
        for _ in range(runs):
            gc.collect()
            informer = Informer(client, CONFIGMAPS, namespace=ns, metadata_only=metadata_only)
            async with synced(informer) as seconds:
                assert len(informer.store) >= count, (len(informer.store), count)
            times.append(seconds)
        out[label] = statistics.median(times)
    return out


async def bench_memory(client: Client, ns: str, count: int) -> dict[str, float]:
    from kro.runtime.informer import strip_managed_fields

    cases: dict[str, dict[str, Any]] = {
        "full, managedFields stripped (default)": {"transform": strip_managed_fields},
        "full, with managedFields": {"transform": None},
        "metadata-only, stripped": {"transform": strip_managed_fields, "metadata_only": True},
    }
    out = {}
    for label, kwargs in cases.items():
        gc.collect()
        tracemalloc.start()
        informer = Informer(client, CONFIGMAPS, namespace=ns, **kwargs)
        async with synced(informer):
            gc.collect()
            with_cache = tracemalloc.get_traced_memory()[0]
        del informer
        await asyncio.sleep(0.05)  # the stopped task's callbacks run; then nothing holds it
        gc.collect()
        without = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        out[label] = (with_cache - without) / count * 1000 / 2**20
    return out


async def bench_events(
    client: Client,
    ns: str,
    events: int,
    produce: Callable[[], Coroutine[Any, Any, None]],
    *,
    replayed: bool,
) -> dict[str, float]:
    """`events` changes made by `produce`, watched live or replayed after it finished."""
    informer = HeldInformer(client, CONFIGMAPS, namespace=ns)
    counter = Counter(events)
    informer.add_handler(counter)
    if not replayed:
        informer.release.set()
    async with synced(informer):
        producer = asyncio.create_task(produce(), name="bench.producer")
        try:
            if replayed:
                await producer
                informer.release.set()
            await asyncio.wait_for(counter.done.wait(), timeout=120)
        finally:
            await producer
    return counter.figures()


async def seed_over_http(client: Client, ns: str, names: list[str]) -> float:
    pending = iter(names)

    async def worker() -> None:
        for name in pending:
            await client.create(CONFIGMAPS, configmap(name, ns), namespace=ns)

    began = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(WRITERS):
            group.create_task(worker())
    return len(names) / (time.perf_counter() - began)


async def run_against_server(args: argparse.Namespace) -> dict[str, Any]:
    client = await Client.from_kubeconfig(options=OPTIONS)
    ns = f"kro-bench-{secrets.token_hex(3)}"
    names = [f"bench-{i:05d}" for i in range(args.objects)]
    try:
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        seed_rate = await seed_over_http(client, ns, names)
        sync = await bench_sync(client, ns, args.objects)

        events = {}
        for mode in ("replayed", "live"):

            async def produce(tag: str = mode) -> None:
                argv = ["--writer", ns, str(args.events), str(args.objects), tag]
                writer = await asyncio.create_subprocess_exec(sys.executable, __file__, *argv)
                if await writer.wait():
                    raise RuntimeError(f"writer exited with {writer.returncode}")

            events[mode] = await bench_events(
                client, ns, args.events, produce, replayed=mode == "replayed"
            )
        memory = await bench_memory(client, ns, args.objects)
        return {
            "mode": "api-server (KUBECONFIG)",
            "server": client.config.server,
            "seed_creates_per_s": seed_rate,
            "sync_s": sync,
            "events": events,
            "memory_mib_per_1000": memory,
        }
    finally:
        with contextlib.suppress(Exception):
            await client.delete(NAMESPACES, ns)
        await client.close()


async def write(ns: str, events: int, objects: int, tag: str) -> None:
    """The writer process: `events` merge patches spread over the objects, 32 in flight; `tag`
    makes each round's values new, so every patch is a change and produces an event."""
    async with await Client.from_kubeconfig(options=OPTIONS) as client:
        pending = iter(range(events))

        async def worker() -> None:
            for i in pending:
                patch = {"metadata": {"annotations": {"bench.kro.run/touch": f"{tag}-{i}"}}}
                await client.patch(CONFIGMAPS, f"bench-{i % objects:05d}", patch, namespace=ns)

        async with asyncio.TaskGroup() as group:
            for _ in range(WRITERS):
                group.create_task(worker())


async def run_against_fake(args: argparse.Namespace) -> dict[str, Any]:
    from kro.testing.fakeapi import FakeApiServer  # kro[testing]: imported only here

    ns = "bench"
    async with FakeApiServer() as api:
        objs = [api.seed(CONFIGMAPS, configmap(f"bench-{i:05d}", ns)) for i in range(args.objects)]
        client = Client.from_config(ConnectionConfig(server=api.url), OPTIONS)
        async with client:
            sync = await bench_sync(client, ns, args.objects)

            events = {}
            for mode in ("replayed", "live"):

                async def produce(tag: str = mode) -> None:
                    for i in range(args.events):
                        obj = objs[i % len(objs)]
                        obj["metadata"]["annotations"]["bench.kro.run/touch"] = f"{tag}-{i}"
                        obj["metadata"].pop("resourceVersion", None)
                        api.modify(CONFIGMAPS, obj)
                        if i % 50 == 49:
                            await asyncio.sleep(0)  # let the server stream what is queued

                events[mode] = await bench_events(
                    client, ns, args.events, produce, replayed=mode == "replayed"
                )
            api.requests.clear()  # the fake records every request; not part of the cache
            memory = await bench_memory(client, ns, args.objects)
    return {
        "mode": "fake API server (in-process; its encoding CPU is included)",
        "server": "kro.testing.fakeapi",
        "sync_s": sync,
        "events": events,
        "memory_mib_per_1000": memory,
    }


def report(figures: dict[str, Any], args: argparse.Namespace) -> None:
    n = args.objects
    print(f"kro.runtime informer bench: {figures['mode']}, python {sys.version.split()[0]}")
    if "seed_creates_per_s" in figures:
        print(f"seed           {n} ConfigMaps at {figures['seed_creates_per_s']:.0f} creates/s")
    for label, seconds in figures["sync_s"].items():
        print(f"sync {label:<14}{n} objects in {seconds * 1e3:7.0f} ms  ({n / seconds:8.0f} obj/s)")
    for mode, events in figures["events"].items():
        print(
            f"events {mode:<8}{events['cpu_us_per_event']:6.0f} us CPU/event,"
            f" {events['events_per_s']:6.0f} events/s over {events['count']},"
            f" {events['wakeups_per_event']:.2f} wakeups/event"
        )
    print("memory per 1,000 cached objects (tracemalloc):")
    for label, mib in figures["memory_mib_per_1000"].items():
        print(f"  {label:<40}{mib:7.2f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--writer", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_logging("console", "warning")
    if args.writer:
        ns, events, objects, tag = args.writer
        asyncio.run(write(ns, int(events), int(objects), tag))
        return
    began = time.perf_counter()
    real = bool(os.environ.get("KUBECONFIG"))
    figures = asyncio.run(run_against_server(args) if real else run_against_fake(args))
    figures.update(
        objects=args.objects,
        python=sys.version.split()[0],
        gc_thresholds=list(gc.get_threshold()),
        bench_s=round(time.perf_counter() - began, 1),
        when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    report(figures, args)
    save(figures, "api_server" if real else "fake")
    print(f"written to {RESULTS.relative_to(ROOT)} in {figures['bench_s']}s")


def save(figures: dict[str, Any], key: str) -> None:
    """Keep the latest run of each mode side by side: {"api_server": {...}, "fake": {...}}."""
    try:
        results = json.loads(RESULTS.read_text())
    except (OSError, ValueError):
        results = {}
    if not isinstance(results, dict) or not all(isinstance(v, dict) for v in results.values()):
        results = {}
    results[key] = figures
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
