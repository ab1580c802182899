"""--replicas N: N `kro controller --shards=auto` replicas (kro.testing.kroprocess) over
instances spread across namespaces with random names (FNV-1a needs diverse names to spread).
Per replica: peak RSS, CPU, watch events received and objects cached (sharded parent informers
apart), both also as shares of the `--replicas 1` run's figures, and reconciles."""

from __future__ import annotations

import asyncio
import json
import secrets
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.testing.kroprocess import KroProcess

from .benchapp import INSTANCES, new_instance, wait_rgd_active
from .harness import (
    SETTINGS,
    admin_client,
    create_namespace,
    install_kro_crds,
    load_average,
    proc_usage,
    request_total,
    write_result,
)

WATCH_EVENTS = "kro_informer_watch_events_total"
CACHED_OBJECTS = "kro_informer_cached_objects"


def _scrape(process: KroProcess) -> str:
    with urllib.request.urlopen(process.health_url() + "/metrics", timeout=10) as response:
        return str(response.read().decode())


def _samples(text: str, name: str) -> dict[str, float]:
    """Every sample of `name`, keyed by its label text (`` when it has none)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith((f"{name}{{", f"{name} ")):
            series, value = line.rsplit(" ", 1)
            labels = series[len(name) :].strip("{}")
            found[labels] = found.get(labels, 0.0) + float(value)
    return found


def _replica_counters(process: KroProcess) -> dict[str, float]:
    """Watch events received (sharded parent informers, the others) and instance reconciles."""
    text = _scrape(process)
    events = _samples(text, WATCH_EVENTS)
    return {
        "watch_events_sharded": events.get('sharded="true"', 0.0),
        "watch_events_unsharded": events.get('sharded="false"', 0.0),
        "reconciles": sum(_samples(text, "instance_reconcile_total").values()),
    }


def _replica_cached(process: KroProcess) -> dict[str, float]:
    """Objects in the replica's informer caches now: in all, and in the sharded parent
    informers (instances and their children) and the others (RGDs, CRDs, ...) apart."""
    cached = _samples(_scrape(process), CACHED_OBJECTS)
    sharded, other = cached.get('sharded="true"', 0.0), cached.get('sharded="false"', 0.0)
    return {
        "cached_objects": sharded + other,
        "cached_objects_sharded": sharded,
        "cached_objects_unsharded": other,
    }


async def _cached_settled(
    replicas: Sequence[KroProcess], timeout_s: float = 60.0
) -> list[dict[str, float]]:
    """The replicas' cached objects once two scrapes a second apart agree (the last watch
    events of the run may still be arriving when every instance is ACTIVE)."""
    deadline = time.monotonic() + timeout_s
    last = [await asyncio.to_thread(_replica_cached, p) for p in replicas]
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        now = [await asyncio.to_thread(_replica_cached, p) for p in replicas]
        if now == last:
            break
        last = now
    return last


async def _settled(replicas: Sequence[KroProcess], timeout_s: float = 180.0) -> float:
    """Seconds until every replica sees all members and owns its full 1/n of the hash space."""
    n, started = len(replicas), time.monotonic()
    while time.monotonic() - started < timeout_s:
        texts = [await asyncio.to_thread(_scrape, p) for p in replicas]
        if all(
            _samples(t, "kro_shard_members").get("") == n
            and abs(_samples(t, "kro_shard_owned_range_fraction").get("", 0.0) - 1 / n) < 1e-6
            for t in texts
        ):
            return time.monotonic() - started
        await asyncio.sleep(0.5)
    raise TimeoutError(f"{n} replicas did not settle on one view within {timeout_s}s")


async def _create_spread(
    client: Client, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], float]:
    """Create the instances (namespace, name), 32 at a time; when each create returned."""
    created: dict[tuple[str, str], float] = {}
    limit = asyncio.Semaphore(32)

    async def one(namespace: str, name: str) -> None:
        async with limit:
            await client.create(INSTANCES, new_instance(namespace, name), namespace=namespace)
            created[(namespace, name)] = time.monotonic()

    await asyncio.gather(*(one(ns, name) for ns, name in keys))
    return created


async def _wait_active_spread(
    client: Client, namespaces: set[str], count: int, timeout_s: float
) -> dict[tuple[str, str], float]:
    """First time each instance of `namespaces` was seen ACTIVE (cluster-wide lists, 0.5 s)."""
    active: dict[tuple[str, str], float] = {}
    deadline = time.monotonic() + timeout_s
    while len(active) < count and time.monotonic() < deadline:
        items, _ = await client.list_all(INSTANCES)
        now = time.monotonic()
        for item in items:
            meta = item["metadata"]
            if (
                meta.get("namespace") in namespaces
                and (item.get("status") or {}).get("state") == "ACTIVE"
            ):
                active.setdefault((meta["namespace"], meta["name"]), now)
        await asyncio.sleep(0.5)
    return active


async def run_replicas(
    kubeconfig: str,
    instances: int,
    workers: int,
    replicas: int,
    *,
    namespaces: int,
    scenario: str,
    rgd: dict[str, Any],
) -> dict[str, Any]:
    """N `--shards=auto` replicas: per-replica RSS, CPU, watch events, and time to all ACTIVE."""
    load = load_average()
    client = await admin_client(kubeconfig)
    tag = f"bench-{int(time.time())}"
    names = [f"{tag}-{secrets.token_hex(3)}" for _ in range(namespaces)]
    lease_namespace = f"{tag}-leases"
    logs = Path(tempfile.mkdtemp(prefix="kro-bench-replicas-"))
    started_replicas: list[KroProcess] = []
    try:
        await install_kro_crds(client)
        for ns in [*names, lease_namespace]:
            await create_namespace(client, ns)
        args = [
            "--shards=auto",
            f"--leader-election-namespace={lease_namespace}",
            f"--dynamic-controller-concurrent-reconciles={workers}",
            *SETTINGS.client_flags(),
        ]
        for index in range(replicas):
            process = KroProcess(Path(kubeconfig), logs / f"replica-{index}.log", args)
            started_replicas.append(process.start())
        settle_s = await _settled(started_replicas)
        await client.apply(RGDS, rgd, field_manager="bench", force=True)
        await wait_rgd_active(client)
        await client.mapper.refresh()
        before = await request_total(client)
        counters_before = [_replica_counters(p) for p in started_replicas]
        cpu_before = [proc_usage(p.pid)[0] for p in started_replicas]
        started = time.monotonic()
        keys = [(names[i % namespaces], f"app-{i:05d}") for i in range(instances)]
        created = await _create_spread(client, keys)
        active = await _wait_active_spread(client, set(names), instances, timeout_s=1800)
        all_active_s = max(active.values()) - started if len(active) == instances else None
        after = await request_total(client)
        cached = await _cached_settled(started_replicas)
        per_replica = []
        for index, process in enumerate(started_replicas):
            cpu, peak = proc_usage(process.pid)
            counters = _replica_counters(process)
            per_replica.append(
                {
                    "replica": index,
                    "peak_rss_mib": peak / 2**20,
                    "cpu_s": cpu - cpu_before[index],
                    "cpu_s_since_start": cpu,
                    **{k: v - counters_before[index][k] for k, v in counters.items()},
                    **cached[index],
                }
            )
        latencies = sorted(active[k] - created[k] for k in active)
        return {
            "scenario": scenario,
            "load_average_at_start": load,
            "instances": instances,
            "namespaces": namespaces,
            "workers": workers,
            "replicas": replicas,
            "settle_s": settle_s,
            "active": len(active),
            "all_active_s": all_active_s,
            "p50_create_to_active_s": statistics.median(latencies) if latencies else None,
            "p99_create_to_active_s": latencies[int(0.99 * (len(latencies) - 1))]
            if latencies
            else None,
            "api_requests_per_instance": (after - before) / instances,
            "total_cpu_s": sum(r["cpu_s"] for r in per_replica),
            "max_peak_rss_mib": max(r["peak_rss_mib"] for r in per_replica),
            "per_replica": per_replica,
        }
    finally:
        for process in started_replicas:
            process.stop()
        await client.close()


def _result_name(result: dict[str, Any], replicas: int) -> str:
    return (
        f"controller-{result['scenario']}-{result['instances']}-w{result['workers']}"
        f"-r{replicas}.json"
    )


SHARED_FIGURES = {
    "watch_events_share": ("watch_events_sharded", "watch_events_unsharded"),
    "cached_objects_share": ("cached_objects",),
    "cached_objects_sharded_share": ("cached_objects_sharded",),
}
"""Each share: the replica's sum of these figures over the single replica's sum."""


def _add_shares(result: dict[str, Any]) -> None:
    """Each replica's share of the single-replica run's figures (same scenario, instances and
    workers; `--replicas 1` writes it), when that run's result is there and has them."""
    if result["replicas"] == 1:
        single = result["per_replica"][0]
    else:
        single_path = SETTINGS.results / _result_name(result, 1)
        if not single_path.exists():
            return
        single = json.loads(single_path.read_text())["per_replica"][0]
    for share, figures in SHARED_FIGURES.items():
        whole = sum(single.get(f) or 0.0 for f in figures)
        if not whole or any(f not in single for f in figures):
            continue
        for row in result["per_replica"]:
            row[share] = sum(row[f] for f in figures) / whole


def _percent(row: dict[str, Any], share: str) -> str:
    return f"{100 * row[share]:.0f} %" if share in row else "-"


def _together(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The replicas' figures summed (shares too: they have one denominator). Against the
    single replica's figures it shows what sharding adds: nothing received or cached twice."""
    return {"replica": "all", **{k: sum(r[k] for r in rows) for k in rows[0] if k != "replica"}}


def report_replicas(result: dict[str, Any]) -> None:
    for key, value in result.items():
        if key == "per_replica":
            continue
        print(f"  {key:28} {value:.3f}" if isinstance(value, float) else f"  {key:28} {value}")
    _add_shares(result)
    rows = result["per_replica"]
    if len(rows) > 1:
        rows = [*rows, _together(rows)]
    print("  replica  peak RSS MiB  CPU s  watch events (sharded/other)  share  reconciles")
    for row in rows:
        print(
            f"  {row['replica']:>7}  {row['peak_rss_mib']:12.1f}  {row['cpu_s']:5.1f}  "
            f"{row['watch_events_sharded']:>13.0f} / {row['watch_events_unsharded']:<12.0f}"
            f"  {_percent(row, 'watch_events_share'):>5}  {row['reconciles']:10.0f}"
        )
    print("  replica  cached objects  share  (sharded/other)  sharded share")
    for row in rows:
        print(
            f"  {row['replica']:>7}  {row['cached_objects']:14.0f}"
            f"  {_percent(row, 'cached_objects_share'):>5}"
            f"  {row['cached_objects_sharded']:>7.0f} / {row['cached_objects_unsharded']:<6.0f}"
            f"  {_percent(row, 'cached_objects_sharded_share'):>13}"
        )
    write_result(_result_name(result, result["replicas"]), result)
