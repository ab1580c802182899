"""e2e/sharding_fixtures.py: what the `kro controller --shards=auto` e2e modules share.

A module binds the two fixtures by name, `spawn, kro = sharding_fixtures()`: `spawn(name)`
starts one sharded replica as a real process (kro.testing.kroprocess, fast Lease timings, the
reconcile trace on) in the test's Lease namespace, `kro` is the test's KroEnv. Both use the
`kube_cluster` and `kube_namespace` fixtures of the module, so a module that defines its own
(a control plane with other feature gates) gets replicas on that cluster.

The checks read what the replicas say. Each logs `shard.reconcile_start`/`shard.reconcile_end`
per reconcile (KRO_SHARD_TRACE_RECONCILES=1): `assert_no_overlap` proves that no instance was
ever reconciled by two replicas at once, and `assert_reconciles_in` that after a mark each one
reconciled only namespaces of its range. /metrics says whether a replica has settled on a view
(`settled`) and whether it filters on the client (`kro_shard_fallback_mode`). The informers' list
records (`informer.listed`/`informer.relisted`, with `sharded`) say what each cache holds:
`caches_only` compares a sharded cache with the objects of the replica's range, for the
instances and for their ConfigMaps alike.

Namespace names: FNV-1a of names that differ only in their last characters lands in one narrow
band of the hash space (docs/sharding.md), so `spread_namespaces` draws random names until every
range of an assignment holds some: a replica with nothing to do proves nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import urllib.request
from collections import defaultdict
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Mapping,
    Sequence,
)
from datetime import datetime
from typing import Any

from kro_harness import KroEnv, is_ready, process_fixtures, wait_for

from kro.runtime import GVR, Client, errors
from kro.runtime.sharding import TRACE_ENV, Range, assign, contains, fnv1a64, namespace_of
from kro.testing.kroprocess import KroProcess

NAMESPACES_GVR = GVR("", "v1", "namespaces")
CONFIGMAPS_GVR = GVR("", "v1", "configmaps")
KIND = "Sharded"

Key = tuple[str, str]
"""(namespace, name) of an instance."""


def sharding_fixtures() -> tuple[Any, Any]:
    """`spawn` (starts `--shards=auto` replicas that trace their reconciles, stops them after
    the test) and `kro` (the test's KroEnv)."""
    return process_fixtures("--shards=auto", env={TRACE_ENV: "1"})


# -- the RGD, namespaces and instances ---------------------------------------------------------


def sharded_rgd(kro: KroEnv) -> dict[str, Any]:
    """One ConfigMap per instance carrying `spec.value`: what converged is easy to read."""
    return kro.value_rgd("sharded", KIND)


async def install_sharded_rgd(kro: KroEnv) -> GVR:
    """Apply `sharded_rgd`, wait until it is Active, return the instances' GVR."""
    definition = sharded_rgd(kro)
    await kro.apply_rgd(definition)
    await kro.wait_rgd_active(definition["metadata"]["name"])
    return await kro.gvr_of(KIND)


def spread_namespaces(prefix: str, members: Iterable[str], per_range: int) -> list[str]:
    """Random `prefix-xxxxxx` names, `per_range` in each range of `assign(members)`, ordered
    so that consecutive names fall in different ranges."""
    ranges = list(assign(members).values())
    buckets: list[list[str]] = [[] for _ in ranges]
    while any(len(b) < per_range for b in buckets):
        name = f"{prefix}-{secrets.token_hex(3)}"
        for bucket, owned in zip(buckets, ranges, strict=True):
            if len(bucket) < per_range and contains((owned,), fnv1a64(name)):
                bucket.append(name)
    return [name for row in zip(*buckets, strict=True) for name in row]


async def create_namespaces(client: Client, names: Iterable[str]) -> None:
    for ns in names:
        await client.create(
            NAMESPACES_GVR, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )


REPLICAS = ("r0", "r1", "r2")


async def random_namespaces(client: Client, prefix: str, count: int) -> list[str]:
    """`count` namespaces `<prefix>-<random>`, created: FNV-1a of names that differ only in
    their last characters lands in one narrow band of the hash space (docs/sharding.md)."""
    names = [f"{prefix}-{secrets.token_hex(3)}" for _ in range(count)]
    await create_namespaces(client, names)
    return names


async def delete_namespaces(client: Client, names: Iterable[str]) -> None:
    for ns in names:
        with contextlib.suppress(errors.NotFound):
            await client.delete(NAMESPACES_GVR, ns)


async def apply_all(kro: KroEnv, names: Sequence[Key], value: str) -> None:
    """Set `spec.value` of every instance (creating those that do not exist)."""
    for ns, name in names:
        await kro.apply_instance(KIND, name, {"value": value}, namespace=ns)


async def all_ready(client: Client, gvr: GVR, names: Sequence[Key]) -> bool:
    """Every instance exists and is ready (one list of the kind, not a read per instance: the
    probe must not load the API server the replicas share when there are hundreds)."""
    items, _ = await client.list_all(gvr)
    ready = {(namespace_of(item), item["metadata"]["name"]) for item in items if is_ready(item)}
    return all(key in ready for key in names)


async def wait_all_ready(
    client: Client,
    gvr: GVR,
    names: Sequence[Key],
    replicas: Mapping[str, KroProcess],
    timeout_s: float = 180,
) -> None:
    """Every instance ACTIVE; on timeout, say which replicas never served the kind (a replica
    that does not serve it still owns its range, so the instances there wait forever)."""
    try:
        await wait_for(
            lambda: all_ready(client, gvr, names), what="every instance ACTIVE", timeout_s=timeout_s
        )
    except AssertionError as error:
        silent = {
            name: [str(r.get("error")) for r in process.find("graphrevision.compile_failed")]
            for name, process in replicas.items()
            if not process.find("rgd.serving")
        }
        raise AssertionError(f"{error}; replicas not serving the kind: {silent}") from None


async def children_hold(client: Client, names: Sequence[Key], value: str) -> bool:
    """Every instance's ConfigMap exists and carries `value`."""
    for ns, name in names:
        try:
            cm = await client.get(CONFIGMAPS_GVR, f"{name}-config", namespace=ns)
        except errors.NotFound:
            return False
        if (cm.get("data") or {}).get("value") != value:
            return False
    return True


async def converge(kro: KroEnv, names: Sequence[Key], value: str, what: str) -> float:
    """Wait until every instance's ConfigMap carries `value`; the seconds it took."""
    began = asyncio.get_running_loop().time()
    await wait_for(lambda: children_hold(kro.client, names, value), what=what, timeout_s=120)
    return asyncio.get_running_loop().time() - began


# -- what the replicas said --------------------------------------------------------------------


def member_lease(process: KroProcess) -> str:
    """The replica's member Lease name: the name the assignment sorts (`assign`)."""
    return str(process.wait_event("controller.sharding")["member_lease"])


def _time(record: Mapping[str, Any]) -> float:
    return datetime.fromisoformat(str(record["timestamp"]).replace("Z", "+00:00")).timestamp()


def trace_key(record: Mapping[str, Any]) -> Key:
    """The object a reconcile-trace record is about; a member cluster's instances (M-23,
    `cluster=` in the record) are named `<cluster>/<namespace>`."""
    ns, cluster = str(record.get("ns")), record.get("cluster")
    return (f"{cluster}/{ns}" if cluster else ns, str(record.get("obj")))


def reconcile_intervals(
    replicas: Mapping[str, KroProcess],
) -> dict[Key, list[tuple[float, float, str]]]:
    """(namespace, name) -> [(start, end, replica)] from the reconcile trace.

    A reconcile still open in the log of a replica killed with kill -9 ended with the process
    (`killed_at`); any other is still running.
    """
    out: dict[Key, list[tuple[float, float, str]]] = defaultdict(list)
    for name, process in replicas.items():
        open_at: dict[Key, float] = {}
        for record in process.events():
            key = trace_key(record)
            if record.get("event") == "shard.reconcile_start":
                open_at[key] = _time(record)
            elif record.get("event") == "shard.reconcile_end" and key in open_at:
                out[key].append((open_at.pop(key), _time(record), name))
        ended = process.killed_at if process.killed_at is not None else float("inf")
        for key, began in open_at.items():
            out[key].append((began, ended, name))
    return out


def assert_no_overlap(replicas: Mapping[str, KroProcess]) -> int:
    """No instance was reconciled by two replicas at once; the number of reconciles."""
    total = 0
    for key, spans in reconcile_intervals(replicas).items():
        spans.sort()
        total += len(spans)
        for (_s1, e1, r1), (s2, _e2, r2) in itertools.pairwise(spans):
            assert r1 == r2 or e1 <= s2, f"{key} reconciled by {r1} and {r2} at once"
    return total


def reconciled_since(process: KroProcess, mark: int) -> list[Key]:
    return [
        (str(r["ns"]), str(r["obj"])) for r in process.find("shard.reconcile_start", since=mark)
    ]


def assert_reconciles_in(
    replicas: Mapping[str, KroProcess], marks: Mapping[str, int], ranges: Mapping[str, Range]
) -> dict[str, int]:
    """Each replica reconciled, after its mark, only namespaces of its range; and something.
    `ranges` is keyed like `replicas`. Returns the reconciles per replica."""
    counts: dict[str, int] = {}
    for name, process in replicas.items():
        done = reconciled_since(process, marks[name])
        outside = [key for key in done if not contains((ranges[name],), fnv1a64(key[0]))]
        assert not outside, f"{name} reconciled outside its range: {outside}"
        assert done, f"{name} reconciled nothing in its range"
        counts[name] = len(done)
    return counts


async def update_within_ranges(
    kro: KroEnv,
    names: Sequence[Key],
    value: str,
    replicas: Mapping[str, KroProcess],
    leases: Mapping[str, str],
) -> dict[str, int]:
    """Once the replicas have settled on the view of `leases` (replica -> member Lease): set
    every instance to `value`, wait until every ConfigMap carries it, and check that each
    replica reconciled only namespaces of its range meanwhile. The reconciles per replica."""
    ranges = assign(leases[name] for name in replicas)
    marks = {name: process.offset() for name, process in replicas.items()}
    await apply_all(kro, names, value)
    await converge(kro, names, value, f"every ConfigMap at {value!r} once settled")
    return assert_reconciles_in(replicas, marks, {n: ranges[leases[n]] for n in replicas})


def scrape(process: KroProcess) -> str:
    """The replica's /metrics page (probes and metrics share one address in these tests)."""
    with urllib.request.urlopen(process.health_url() + "/metrics", timeout=10) as response:
        return str(response.read().decode())


def metric(text: str, name: str) -> float | None:
    """The value of the sample `name` (labels included as exposed) on a /metrics page."""
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return None


def metric_sum(text: str, name: str) -> float:
    """The sum of every sample of `name`, whatever its labels, on a /metrics page."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith((f"{name} ", f"{name}{{"))
    )


async def settled(replicas: Collection[KroProcess]) -> None:
    """Wait until every replica sees exactly these members and owns its full 1/n share."""
    n = len(replicas)

    def probe() -> bool:
        for process in replicas:
            text = scrape(process)
            owned = metric(text, "kro_shard_owned_range_fraction")
            if metric(text, "kro_shard_members") != n or owned is None or abs(owned - 1 / n) > 1e-6:
                return False
        return True

    async def poll() -> bool:
        return await asyncio.to_thread(probe)

    await wait_for(poll, what=f"{n} replicas settled on one view", timeout_s=60)


def cached(process: KroProcess, gvr: GVR, since: int) -> int | None:
    """Objects in the replica's sharded cache of `gvr` after its last (re)list since byte
    `since`, if any (the `informer.listed`/`informer.relisted` records)."""
    lists = [
        r
        for r in process.events(since)
        if r.get("event") in ("informer.listed", "informer.relisted")
        and r.get("gvr") == str(gvr)
        and r.get("sharded") is True
    ]
    return int(lists[-1]["objects"]) if lists else None


def whole_kind_lists(process: KroProcess, gvr: GVR) -> list[dict[str, Any]]:
    """The replica's lists of `gvr` by an unsharded informer (every namespace's objects)."""
    return [
        r
        for r in process.events()
        if r.get("event") in ("informer.listed", "informer.relisted")
        and r.get("gvr") == str(gvr)
        and r.get("sharded") is False
    ]


async def objects_in_range(client: Client, gvr: GVR, owned: Range) -> int:
    """How many objects of `gvr` (all namespaces) the API server holds in range `owned`."""
    items, _ = await client.list_all(gvr)
    return sum(1 for item in items if contains((owned,), fnv1a64(namespace_of(item))))


async def caches_only(
    process: KroProcess, gvr: GVR, since: int, expected: Callable[[], Awaitable[int]]
) -> None:
    """Wait until the replica's last (re)list of `gvr` since byte `since` cached `expected()`
    objects: what its sharded cache holds until the next relist, as long as nothing of the
    kind is created or deleted meanwhile."""
    seen: list[tuple[int | None, int]] = []

    async def probe() -> bool:
        seen.append((cached(process, gvr, since), await expected()))
        return seen[-1][0] == seen[-1][1]

    try:
        await wait_for(probe, what=f"a relist of {gvr} caching exactly its range")
    except AssertionError as error:
        raise AssertionError(f"{error}; (cached, in range): {sorted(set(seen))}") from None


def open_reconciles(process: KroProcess) -> list[Key]:
    """The reconciles the replica started and never ended, per its trace."""
    started: list[Key] = []
    for record in process.events():
        key = trace_key(record)
        if record.get("event") == "shard.reconcile_start":
            started.append(key)
        elif record.get("event") == "shard.reconcile_end" and key in started:
            started.remove(key)
    return started


def leaders(
    replicas: Mapping[str, KroProcess], since: Mapping[str, int] | None = None
) -> list[str]:
    """The replicas that logged winning the leader Lease (since their offsets in `since`)."""
    return [
        n
        for n, p in replicas.items()
        if p.find("leadership.promoted", since=(since or {}).get(n, 0))
    ]


def events_about(process: KroProcess, event: str, rgd: str, since: int = 0) -> list[dict[str, Any]]:
    """`event` records of `process` that name RGD `rgd`."""
    return [r for r in process.find(event, since=since) if r.get("rgd") == rgd]
