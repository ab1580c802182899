"""Controller at scale: N instances of a 3-resource RGD on the local control plane.

Measures, for one run: time until every instance is ACTIVE (`all_active_s`) and until the
controller's requests have stopped after that (`all_settled_s`: the last request before 3 s
without any), p50/p99 create-to-ACTIVE, API requests per instance until settled
(kube-apiserver's apiserver_request_total before/after; includes this script's own creates and
reads, reported separately), controller CPU seconds and peak RSS, and writes during a
steady-state window with no changes that starts once settled (every write to the
RGD's objects, seen through watches, per object and per field manager; the target is 0). With
`--fight` the
Deployment template also sets `deployment.kubernetes.io/revision`, which kube-controller-manager
owns: the window starts once kro reports FieldConflict on every instance, and must show 0 writes.
Results are printed and written to bench/results/controller-<scenario>-<N>-w<W>[-fight].json.

Scenarios (`--scenario`): `three` (ConfigMap, Deployment, Service: time to ACTIVE is set by
kube-controller-manager and the fake nodes), `configmaps` (five ConfigMaps, the second reading
the first: kro's own work decides the time), `fifty` (fifty ConfigMaps, the second reading the
first). `--floor` also runs, in a fresh namespace with kro
stopped, a plain client that creates the same objects with the same concurrency (floor 1), and
one that server-side-applies them and writes one status per instance (floor 2), and one that
sends exactly the writes upstream's controller makes for a new instance, replaying what kro
wrote for its first instance (floor 3: the instance's create, the labeller's and the
inventory's applies, the children's applies with kro's labels, kro's status), and prints the
ratios. `--restart` restarts the controller once everything is ACTIVE and settled, and reports
the time until its requests stop, its writes and its requests per instance. `--replicas N` runs
N `kro controller --shards=auto` replicas instead (kro.testing.kroprocess) over instances spread
across `--namespaces` namespaces with random names (FNV-1a needs diverse names to spread), waits
until they have settled on one view, and reports per replica its peak RSS, CPU seconds, watch
events received (`kro_informer_watch_events_total`, sharded parent informers apart), objects
cached once settled (`kro_informer_cached_objects`, the same way), both also as shares of the
`--replicas 1` run's figures when its result file is there, and reconciles, plus the time
until every instance is ACTIVE; results go to
bench/results/controller-<scenario>-<N>-w<W>-r<replicas>.json. The load average at the start is
recorded with every result.

    python bench/bench_controller.py --instances 200 --workers 16
    python bench/bench_controller.py --instances 1000 --workers 16 --steady-seconds 60
    python bench/bench_controller.py --scaling 50          # throughput per worker count
    python bench/bench_controller.py --instances 20 --fight --steady-seconds 60
    python bench/bench_controller.py --instances 1000 --no-state-gauges  # their CPU cost
    python bench/bench_controller.py --scenario configmaps --instances 200 --floor --restart
    python bench/bench_controller.py --scenario configmaps --instances 300 --replicas 3
    python bench/bench_controller.py --scenario configmaps --instances 1000 --floor --pin

Without KUBECONFIG it starts its own local control plane (with fake nodes, so Deployments
become Available and `readyWhen` passes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kro.api.crds import kro_crds
from kro.api.names import (
    ANNOTATION_APPLYSET_TOOLING,
    FIELD_MANAGER_APPLYSET,
    FIELD_MANAGER_APPLYSET_PARENT,
    FIELD_MANAGER_LABELLER,
    LABEL_RGD_ID,
    LABEL_RGD_NAME,
)
from kro.api.objects import status_update
from kro.applyset import Inventory, Parent
from kro.applyset.identity import GroupKind
from kro.applyset.inventory import render
from kro.controllers.crd import CRDS, wait_established
from kro.controllers.instance.labels import instance_labels, labeller_body
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client, ClientOptions
from kro.runtime.errors import AlreadyExists, KubeError
from kro.runtime.gvk import GVR
from kro.testing.cluster import ClusterOptions, LocalCluster
from kro.testing.kroprocess import KroProcess
from kro.testing.processes import free_port, stop_pid

RESULTS = Path(__file__).resolve().parent / "results"
CLIENT_QPS = [500.0]
SKIP_UNCHANGED = [True]
"""The controller's --skip-unchanged, set off by --no-skip-unchanged."""
"""The controller's --client-qps (burst twice that), set by --client-qps."""
CONTROL_PLANE: dict[str, int] = {}
"""The local control plane's processes (name -> pid) when this script started it, to sum their
CPU over each measured window; empty with KUBECONFIG (its processes are not known here)."""
PINNED: list[str] = []
"""With --pin: how the CPUs were split, recorded with the result."""
GROUP = "bench.kro.run"
INSTANCES = GVR(GROUP, "v1alpha1", "benchapps")
NAMESPACES = GVR("", "v1", "namespaces")

RGD: dict[str, Any] = {
    "apiVersion": "kro.run/v1alpha1",
    "kind": "ResourceGraphDefinition",
    "metadata": {"name": "benchapps"},
    "spec": {
        "schema": {
            "apiVersion": "v1alpha1",
            "group": GROUP,
            "kind": "BenchApp",
            "spec": {"replicas": "integer | default=1", "message": "string | default=hello"},
            "status": {"available": "${deployment.status.availableReplicas}"},
        },
        "resources": [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"message": "${schema.spec.message}"},
                },
            },
            {
                "id": "deployment",
                "readyWhen": ["${deployment.status.availableReplicas >= deployment.spec.replicas}"],
                "template": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {
                        "name": "${schema.metadata.name}",
                        "annotations": {"config": "${config.metadata.name}"},
                    },
                    "spec": {
                        "replicas": "${schema.spec.replicas}",
                        "selector": {"matchLabels": {"app": "${schema.metadata.name}"}},
                        "template": {
                            "metadata": {"labels": {"app": "${schema.metadata.name}"}},
                            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                        },
                    },
                },
            },
            {
                "id": "service",
                "template": {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "spec": {
                        "selector": "${deployment.spec.selector.matchLabels}",
                        "ports": [{"port": 80}],
                    },
                },
            },
        ],
    },
}


def _configmap(node_id: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "id": node_id,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.metadata.name}-" + node_id},
            "data": data,
        },
    }


def configmaps_rgd(count: int, chain: int) -> dict[str, Any]:
    """`count` ConfigMaps per instance; the first `chain` each read the one before (a wave
    per link), the others only the instance's spec. No readiness on Pods anywhere."""
    resources = []
    for i in range(count):
        data = {"message": "${schema.spec.message}"}
        if 0 < i < chain:
            data["previous"] = "${cm" + str(i - 1) + ".data.message}"
        resources.append(_configmap(f"cm{i}", data))
    rgd: dict[str, Any] = json.loads(json.dumps(RGD))
    rgd["spec"]["schema"]["status"] = {"first": "${cm0.metadata.name}"}
    rgd["spec"]["resources"] = resources
    return rgd


def scenario_rgd(scenario: str) -> dict[str, Any]:
    if scenario == "configmaps":
        return configmaps_rgd(5, 2)
    if scenario == "fifty":
        return configmaps_rgd(50, 2)
    return RGD


def fighting_rgd() -> dict[str, Any]:
    """The RGD whose Deployment also sets `deployment.kubernetes.io/revision`, which
    kube-controller-manager owns and rewrites: kro and it would rewrite it in turn forever."""
    rgd: dict[str, Any] = json.loads(json.dumps(RGD))
    deployment = next(r for r in rgd["spec"]["resources"] if r["id"] == "deployment")
    deployment["template"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "7"
    return rgd


async def _request_total(client: Client) -> float:
    return sum((await _requests_by_verb(client)).values())


async def _requests_by_verb(client: Client) -> dict[str, float]:
    """kube-apiserver's apiserver_request_total summed by "VERB resource[/subresource]"."""
    text = await client.request("GET", "/metrics", accept="text/plain")
    found: dict[str, float] = {}
    for line in str(text).splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        key = f"{labels.get('verb', '')} {labels.get('resource', '')}"
        if labels.get("subresource"):
            key += "/" + labels["subresource"]
        found[key] = found.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def _per_instance(before: dict[str, float], after: dict[str, float], n: int) -> dict[str, float]:
    """Requests per instance by verb and resource between two scrapes, largest first."""
    diff = {k: (after.get(k, 0.0) - before.get(k, 0.0)) / n for k in after}
    return dict(sorted(((k, round(v, 2)) for k, v in diff.items() if v > 0), key=lambda kv: -kv[1]))


def _proc_usage(pid: int) -> tuple[float, int]:
    """(CPU seconds, peak RSS bytes) of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    peak = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) * 1024
    return cpu, peak


def _control_plane_cpu() -> float | None:
    """CPU seconds the local control plane's processes (etcd, kube-apiserver,
    kube-controller-manager, the scheduler, the fake nodes) have used so far."""
    if not CONTROL_PLANE:
        return None
    return sum(_proc_usage(pid)[0] for pid in CONTROL_PLANE.values())


def _cpu_between(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def pin_control_plane(pids: dict[str, int]) -> str:
    """--pin: the control plane on the first CPU, this script and what it starts later (the
    controller, the floors' client) on the others. Every thread of a process is pinned (Go
    runs many; threads made later inherit their creator's CPUs). The control plane's CPU then
    shows how busy the API server is, apart from the controller: a busy first CPU with an idle
    second says the API server sets the time, not kro."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("--pin needs at least two CPUs")
    plane, rest = {cpus[0]}, set(cpus[1:])
    for pid in pids.values():
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(int(task.name), plane)
    os.sched_setaffinity(0, rest)
    return f"control plane on CPU {cpus[0]}, kro and this script on {sorted(rest)}"


def _controller_requests(port: int) -> float:
    """The controller's own API requests so far (its rest_client_requests_total)."""
    return sum(_controller_requests_by_method(port).values())


def _controller_requests_by_method(port: int) -> dict[str, float]:
    """The controller's own API requests so far, by HTTP method."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("rest_client_requests_total{"):
            method = line.split('method="', 1)[1].split('"', 1)[0]
            found[method] = found.get(method, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def _load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


_LAUNCHER = """
import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
sys.path.insert(0, sys.argv.pop(1))
sys.argv[0] = "kro"
runpy.run_module("kro.cli.main", run_name="__main__")
"""
"""Runs `kro` from the checkout named by KRO_BENCH_SOURCE (e.g. a `git worktree` of an older
commit), bypassing the editable install, to measure before and after on one machine."""


_PROFILED_LAUNCHER = """
import collections, gc, io, os, pstats, runpy, signal, sys
mode, out, source = sys.argv[1:4]
del sys.argv[1:4]
if source:
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
    sys.path.insert(0, source)
sys.argv[0] = "kro"
if mode == "memory":
    import tracemalloc
    tracemalloc.start(6)

    def report():
        current, peak = tracemalloc.get_traced_memory()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()  # the analysis below would be traced too, and slowly
        snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        lines = [f"traced now {current / 2**20:.1f} MiB, traced peak {peak / 2**20:.1f} MiB"]
        lines.append("-- by file")
        lines += [str(s) for s in snapshot.statistics("filename")[:25]]
        lines.append("-- by line")
        lines += [str(s) for s in snapshot.statistics("lineno")[:40]]
        lines.append("-- by kro line (innermost frame in kro/ that allocated, or called what did)")
        by_kro = collections.Counter()
        for trace in snapshot.traces:
            frame = next(
                (f for f in trace.traceback if "/kro/" in f.filename), trace.traceback[0]
            )
            by_kro[f"{frame.filename}:{frame.lineno}"] += trace.size
        lines += [f"{where}: {size / 2**20:.2f} MiB" for where, size in by_kro.most_common(40)]
        lines.append("-- live objects by type (gc)")
        types = collections.Counter(type(o).__name__ for o in gc.get_objects())
        lines += [f"{name}: {count}" for name, count in types.most_common(25)]
        return "\\n".join(lines)
else:
    import cProfile
    profile = cProfile.Profile()

    def report():
        profile.disable()
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(40)
        stats.print_callers(12)  # who calls the 12 most expensive by self time
        return text.getvalue()

    profile.enable()


def dump(signum, frame):
    with open(out + ".part", "w") as f:
        f.write(report())
    os.replace(out + ".part", out)


signal.signal(signal.SIGUSR1, dump)
runpy.run_module("kro.cli.main", run_name="__main__")
"""
"""`--profile memory|cpu`: the controller runs under tracemalloc (6 frames) or cProfile, and
SIGUSR1 writes the top allocations by file, line and innermost kro line plus live objects by type,
or the top functions by cumulative and self time (and the callers of the costliest), to the file
named on its command line. Both
slow the controller (tracemalloc about twice): profiled runs are for where, not how much."""


def _start_controller(
    kubeconfig: str,
    workers: int,
    metrics_port: int,
    profile: tuple[str, Path] | None = None,
    extra_args: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """`kro controller`; with KRO_BENCH_LOG=<path> its debug log (JSON lines) goes there,
    with KRO_BENCH_SOURCE=<checkout> it runs that checkout's kro, with `profile` (mode, output)
    under _PROFILED_LAUNCHER; `extra_args` are appended (the Graph scenario's gate and flags)."""
    log = Path(os.environ["KRO_BENCH_LOG"]) if os.environ.get("KRO_BENCH_LOG") else None
    source = os.environ.get("KRO_BENCH_SOURCE")
    launcher = ["-c", _LAUNCHER, source] if source else ["-m", "kro.cli.main"]
    if profile:
        launcher = ["-c", _PROFILED_LAUNCHER, profile[0], str(profile[1]), source or ""]
    return subprocess.Popen(
        [
            sys.executable,
            *launcher,
            "controller",
            f"--kubeconfig={kubeconfig}",
            f"--metrics-bind-address=127.0.0.1:{metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            f"--dynamic-controller-concurrent-reconciles={workers}",
            f"--client-qps={CLIENT_QPS[0]:g}",
            f"--client-burst={max(1, int(CLIENT_QPS[0] * 2))}",
            f"--skip-unchanged={str(SKIP_UNCHANGED[0]).lower()}",
            f"--log-level={'debug' if log else 'warn'}",
            "--zap-encoder=json",
            *extra_args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab") if log else subprocess.DEVNULL,
    )


async def _wait_rgd_active(client: Client) -> None:
    while True:
        live = await client.get(RGDS, "benchapps")
        if (live.get("status") or {}).get("state") == "Active":
            return
        await asyncio.sleep(0.2)


def new_instance(namespace: str, name: str) -> dict[str, Any]:
    """An instance as the user creates it: every spec field left to its default."""
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "BenchApp",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {},
    }


async def _create(client: Client, namespace: str, names: list[str]) -> dict[str, float]:
    created: dict[str, float] = {}
    limit = asyncio.Semaphore(32)

    async def one(name: str) -> None:
        async with limit:
            await client.create(INSTANCES, new_instance(namespace, name), namespace=namespace)
            created[name] = time.monotonic()

    await asyncio.gather(*(one(n) for n in names))
    return created


@dataclass
class Progress:
    """When each instance was first seen ACTIVE."""

    count: int = 0
    active: dict[str, float] = field(default_factory=dict)
    control_plane_cpu_at_all_active: float | None = None

    def see(self, item: dict[str, Any], now: float) -> None:
        meta = item["metadata"]
        if (item.get("status") or {}).get("state") == "ACTIVE":
            if meta["name"] not in self.active and len(self.active) + 1 == self.count:
                self.control_plane_cpu_at_all_active = _control_plane_cpu()
            self.active.setdefault(meta["name"], now)


async def _wait_active(
    client: Client, namespace: str, count: int, timeout_s: float, watch_s: float = 60.0
) -> Progress:
    """Follow the instances until every one is ACTIVE. One list, then a watch from its
    version, relisting only if the watch ends: a list of every instance each half second, as
    this used to poll, loaded the API server it measured."""
    progress = Progress(count=count)

    def done() -> bool:
        return len(progress.active) >= count

    async def follow() -> None:
        while not done():
            page = await client.list(INSTANCES, namespace=namespace)
            now = time.monotonic()
            for item in page.get("items") or []:
                progress.see(item, now)
            stream = client.watch(
                INSTANCES,
                namespace=namespace,
                resource_version=page["metadata"]["resourceVersion"],
                drop_managed_fields=True,
                timeout_s=int(watch_s),
            )
            with contextlib.suppress(KubeError):
                async with contextlib.aclosing(stream) as events:
                    async for event in events:
                        if event.type in ("ADDED", "MODIFIED"):
                            progress.see(event.object, time.monotonic())
                        if done():
                            return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(follow(), timeout_s)
    return progress


WATCHED = (
    INSTANCES,
    GVR("", "v1", "configmaps"),
    GVR("apps", "v1", "deployments"),
    GVR("", "v1", "services"),
)


def _last_writer(obj: dict[str, Any]) -> str:
    """The field manager of the newest managedFields entry: who wrote this version."""
    entries = obj.get("metadata", {}).get("managedFields") or []
    latest: dict[str, Any] = max(entries, key=lambda e: str(e.get("time") or ""), default={})
    return f"{latest.get('manager', '?')}/{latest.get('operation', '?')}"


async def _count_writes(
    client: Client, namespace: str, seconds: float
) -> dict[str, dict[str, int]]:
    """Every write to the RGD's objects during `seconds`: object -> {manager/operation: n}."""
    writes: dict[str, dict[str, int]] = {}

    async def one(gvr: GVR) -> None:
        page = await client.list(gvr, namespace=namespace)
        version = page["metadata"]["resourceVersion"]
        stream = client.watch(
            gvr, namespace=namespace, resource_version=version, allow_bookmarks=False
        )
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                if event.type != "MODIFIED":
                    continue
                key = f"{gvr.resource}/{event.object['metadata']['name']}"
                per = writes.setdefault(key, {})
                writer = _last_writer(event.object)
                per[writer] = per.get(writer, 0) + 1

    tasks = [asyncio.create_task(one(gvr)) for gvr in WATCHED]
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return writes


async def _wait_fights_detected(client: Client, namespace: str, count: int) -> float:
    """With --fight: seconds until every instance reports FieldConflict (kro yielded)."""
    started = time.monotonic()
    while True:
        items, _ = await client.list_all(INSTANCES, namespace=namespace)
        detected = [
            i
            for i in items
            if any(
                c.get("type") == "FieldConflict" and c.get("status") == "True"
                for c in (i.get("status") or {}).get("conditions") or []
            )
        ]
        if len(detected) >= count:
            return time.monotonic() - started
        if time.monotonic() - started > 600:
            raise TimeoutError(f"{len(detected)} of {count} instances reported FieldConflict")
        await asyncio.sleep(0.5)


def floor_objects(scenario: str, name: str, namespace: str) -> list[tuple[GVR, dict[str, Any]]]:
    """The children kro would create for instance `name`, rendered by hand (defaults)."""
    meta = {"name": name, "namespace": namespace}
    if scenario in ("configmaps", "fifty"):
        count = 5 if scenario == "configmaps" else 50
        objects = []
        for i in range(count):
            data = {"message": "hello"}
            if i == 1:
                data["previous"] = "hello"
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {**meta, "name": f"{name}-cm{i}"},
                "data": data,
            }
            objects.append((GVR("", "v1", "configmaps"), body))
        return objects
    labels = {"app": name}
    return [
        (
            GVR("", "v1", "configmaps"),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta,
                "data": {"message": "hello"},
            },
        ),
        (
            GVR("apps", "v1", "deployments"),
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {**meta, "annotations": {"config": name}},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                    },
                },
            },
        ),
        (
            GVR("", "v1", "services"),
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": meta,
                "spec": {"selector": labels, "ports": [{"port": 80}]},
            },
        ),
    ]


async def _deployments_available(client: Client, namespace: str, count: int) -> None:
    deployments = GVR("apps", "v1", "deployments")
    while True:
        items, _ = await client.list_all(deployments, namespace=namespace)
        ready = [i for i in items if ((i.get("status") or {}).get("availableReplicas") or 0) >= 1]
        if len(ready) >= count:
            return
        await asyncio.sleep(0.5)


@dataclass(frozen=True)
class KroShape:
    """What kro wrote for one instance of its run (`app-00000`), to replay as floor 3: the
    labels and finalizer its labeller applied, the ApplySet tooling, every child's labels and
    annotations, and the status it put. Names, uids, namespaces and ApplySet ids in them are
    swapped for each floor instance's own."""

    name: str
    namespace: str
    uid: str
    applyset_id: str
    labels: dict[str, str]
    tooling: str
    children: list[dict[str, Any]]
    status: dict[str, Any]


async def capture_kro_shape(client: Client, scenario: str, namespace: str) -> KroShape:
    """Read `app-00000` and its children as kro left them."""
    name = "app-00000"
    live = await client.get(INSTANCES, name, namespace=namespace)
    meta = live["metadata"]
    children = []
    for gvr, body in floor_objects(scenario, name, namespace):
        child = await client.get(gvr, body["metadata"]["name"], namespace=namespace)
        child_meta = child["metadata"]
        children.append(
            {
                "labels": dict(child_meta.get("labels") or {}),
                "annotations": dict(child_meta.get("annotations") or {}),
            }
        )
    return KroShape(
        name=name,
        namespace=namespace,
        uid=meta["uid"],
        applyset_id=Parent.from_object(live, INSTANCES).id,
        labels=instance_labels(meta["labels"][LABEL_RGD_NAME], meta["labels"][LABEL_RGD_ID]),
        tooling=(meta.get("annotations") or {})[ANNOTATION_APPLYSET_TOOLING],
        children=children,
        status=live.get("status") or {},
    )


def _swap(value: Any, shape: KroShape, created: dict[str, Any], applyset_id: str) -> Any:
    """`value` (from kro's `app-00000`) with that instance's identity swapped for `created`'s."""
    meta = created["metadata"]
    text = json.dumps(value)
    for old, new in (
        (shape.uid, meta["uid"]),
        (shape.applyset_id, applyset_id),
        (shape.namespace, meta["namespace"]),
        (shape.name, meta["name"]),
    ):
        text = text.replace(old, new)
    return json.loads(text)


async def run_floor(
    client: Client,
    scenario: str,
    instances: int,
    workers: int,
    *,
    mode: str,
    shape: KroShape | None = None,
) -> float:
    """Seconds for a plain client to make what kro makes, `workers` requests at a time, with no
    watch and no read: create every child (floor 1, `create`); server-side-apply every child,
    create the instance and write one status (floor 2, `apply`); or send exactly the writes
    upstream's controller makes for a new instance (floor 3, `upstream`, replaying `shape`):
    the instance's create, the labeller's apply (labels, finalizer, an empty ApplySet
    inventory), the inventory's apply, every child's apply with kro's labels, and kro's status.
    With Deployments, until all are available."""
    namespace = f"floor-{mode}-{int(time.time())}"
    await client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    limit = asyncio.Semaphore(workers)
    names = [f"app-{i:05d}" for i in range(instances)]
    upstream = mode == "upstream"
    if upstream and shape is None:
        raise ValueError("floor 3 replays what kro wrote: capture its shape first")

    async def child(gvr: GVR, body: dict[str, Any]) -> None:
        async with limit:
            if mode == "create":
                await client.create(gvr, body, namespace=namespace)
            else:
                manager = FIELD_MANAGER_APPLYSET if upstream else "floor"
                await client.apply(
                    gvr, body, field_manager=manager, force=True, namespace=namespace
                )

    async def write(call: Awaitable[Mapping[str, Any]]) -> dict[str, Any]:
        async with limit:
            return dict(await call)

    async def instance(name: str) -> None:
        children = floor_objects(scenario, name, namespace)
        if mode == "create":
            await asyncio.gather(*(child(g, b) for g, b in children))
            return
        created = await write(
            client.create(INSTANCES, new_instance(namespace, name), namespace=namespace)
        )
        latest, status = created, {"state": "ACTIVE"}
        if shape is not None and upstream:
            parent = Parent.from_object(created, INSTANCES)
            labeller, _ = labeller_body(
                INSTANCES, "BenchApp", created["metadata"], shape.labels, tooling=shape.tooling
            )
            await write(
                client.apply(INSTANCES, labeller, field_manager=FIELD_MANAGER_LABELLER, force=True)
            )
            group_kinds = {(GroupKind(g.group, b["kind"]), namespace) for g, b in children}
            fragment = render(Inventory.of(parent, group_kinds), shape.tooling)
            inventory = {
                "apiVersion": created["apiVersion"],
                "kind": "BenchApp",
                "metadata": {"name": name, "namespace": namespace, **fragment},
            }
            latest = await write(
                client.apply(
                    INSTANCES, inventory, field_manager=FIELD_MANAGER_APPLYSET_PARENT, force=True
                )
            )
            for (_, body), kro_meta in zip(children, shape.children, strict=True):
                body["metadata"].update(_swap(kro_meta, shape, created, parent.id))
            status = _swap(shape.status, shape, created, parent.id)
        await asyncio.gather(*(child(g, b) for g, b in children))
        await write(
            client.update_status(INSTANCES, status_update(latest, status), namespace=namespace)
        )

    started = time.monotonic()
    await asyncio.gather(*(instance(n) for n in names))
    if scenario == "three":
        await _deployments_available(client, namespace, instances)
    return time.monotonic() - started


FLOOR_NAMES = {
    "create": "floor_create",
    "apply": "floor_apply_status",
    "upstream": "floor_upstream",
}
"""Result keys of the floors: floor 1 (plain creates), floor 2 (applies and one status), floor 3
(upstream's writes replayed)."""


def _floor_order(text: str) -> tuple[str, ...]:
    order = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [mode for mode in order if mode not in FLOOR_NAMES]
    if unknown or len(set(order)) != len(order):
        raise argparse.ArgumentTypeError(f"floors are {', '.join(FLOOR_NAMES)}, each once")
    return order


async def run_floors(
    client: Client,
    scenario: str,
    instances: int,
    workers: int,
    *,
    all_active_s: float,
    shape: KroShape,
    order: Sequence[str] = tuple(FLOOR_NAMES),
) -> dict[str, Any]:
    """Each floor in turn (`order`), with its time, its control plane's CPU and kro's ratio to
    it. Each runs in a namespace of its own on the cluster kro's run and the floors before it
    filled, so a later floor finds more objects there than an earlier one."""
    out: dict[str, Any] = {"floor_order": list(order)}
    for mode in order:
        key = FLOOR_NAMES[mode]
        plane_before = _control_plane_cpu()
        seconds = await run_floor(client, scenario, instances, workers, mode=mode, shape=shape)
        out[f"{key}_s"] = seconds
        out[f"{key}_control_plane_cpu_s"] = _cpu_between(plane_before, _control_plane_cpu())
        out[f"ratio_to_{key}"] = all_active_s / seconds
    if "floor_create_s" in out and "floor_upstream_s" in out:
        # Whether any controller that keeps upstream's writes could reach a given ratio to
        # floor 1: floor 3 sends just those writes, with no watch and no read.
        out["floor_upstream_to_floor_create"] = out["floor_upstream_s"] / out["floor_create_s"]
    return out


async def _startup_usage(controller: subprocess.Popen[bytes], port: int) -> dict[str, float]:
    """CPU and RSS of the controller once it serves /metrics and has listed (no RGD yet)."""
    started = time.monotonic()
    while True:
        try:
            _controller_requests(port)
            break
        except OSError:
            await asyncio.sleep(0.05)
    up_s = time.monotonic() - started
    await asyncio.sleep(2.0)  # its informers list and the first RGD pass finds nothing
    cpu, _ = _proc_usage(controller.pid)
    return {
        "startup_up_s": up_s,
        "startup_cpu_s": cpu,
        "startup_rss_mib": _rss(controller.pid) / 2**20,
    }


def _rss(pid: int) -> int:
    """Resident set size in bytes, now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def _profile_report(controller: subprocess.Popen[bytes], dump: Path) -> str:
    """Ask the profiled controller (SIGUSR1) for its report once every instance is ACTIVE."""
    controller.send_signal(signal.SIGUSR1)
    for _ in range(2400):  # a snapshot of a large heap takes minutes to sort
        await asyncio.sleep(0.5)
        if text := _take_report(dump):
            return text
    return "(no report from the controller)"


def _take_report(dump: Path) -> str:
    """The report once the controller has renamed it into place (empty until then)."""
    text = dump.read_text()
    if text:
        dump.unlink()
    return text


async def _quiet(port: int, quiet_s: float, limit_s: float) -> float:
    """Seconds (from now) until the controller's request count last moved, once it has not
    moved for `quiet_s` (or `limit_s` passed)."""
    started = time.monotonic()
    last, last_change = _controller_requests(port), started
    while time.monotonic() - last_change < quiet_s and time.monotonic() - started < limit_s:
        await asyncio.sleep(0.25)
        now = _controller_requests(port)
        if now != last:
            last, last_change = now, time.monotonic()
    return last_change - started


async def run_restart(
    kubeconfig: str, workers: int, instances: int, old: subprocess.Popen[bytes]
) -> dict[str, Any]:
    """Stop the converged controller, start another; measure until its requests stop."""
    stop_pid(old.pid, reap=old.poll)
    port = free_port()
    started = time.monotonic()
    controller = _start_controller(kubeconfig, workers, port)
    try:
        while True:  # its metrics endpoint answers once it is up
            try:
                _controller_requests(port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        up_s = time.monotonic() - started
        settled_s = up_s + await _quiet(port, quiet_s=5.0, limit_s=300.0)
        by_method = _controller_requests_by_method(port)
        cpu, peak = _proc_usage(controller.pid)
        writes = sum(v for k, v in by_method.items() if k != "GET")
        return {
            "restart_up_s": up_s,
            "restart_steady_s": settled_s,
            "restart_requests_by_method": by_method,
            "restart_writes": writes,
            "restart_requests_per_instance": sum(by_method.values()) / instances,
            "restart_cpu_s": cpu,
            "restart_peak_rss_mib": peak / 2**20,
        }
    finally:
        stop_pid(controller.pid, reap=controller.poll)


async def run_once(
    kubeconfig: str,
    instances: int,
    workers: int,
    steady_s: float,
    *,
    fight: bool = False,
    scenario: str = "three",
    floor: bool = False,
    floor_order: Sequence[str] = tuple(FLOOR_NAMES),
    restart: bool = False,
    profile: str | None = None,
) -> dict[str, Any]:
    load = _load_average()
    client = await Client.from_kubeconfig(kubeconfig, options=ClientOptions(qps=0))
    namespace = f"bench-{int(time.time())}"
    try:
        for crd in kro_crds():
            with contextlib.suppress(AlreadyExists):
                await client.create(CRDS, crd)
            await wait_established(client, crd["metadata"]["name"])
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        metrics_port = free_port()
        dump = Path(tempfile.mkstemp(prefix="kro-profile-")[1]) if profile else None
        controller = _start_controller(
            kubeconfig, workers, metrics_port, (profile, dump) if profile and dump else None
        )
        try:
            startup = await _startup_usage(controller, metrics_port)
            await client.apply(
                RGDS,
                fighting_rgd() if fight else scenario_rgd(scenario),
                field_manager="bench",
                force=True,
            )
            await _wait_rgd_active(client)
            await client.mapper.refresh()
            by_verb_before = await _requests_by_verb(client)
            before = sum(by_verb_before.values())
            controller_before = _controller_requests(metrics_port)
            cpu_before, _ = _proc_usage(controller.pid)
            plane_before = _control_plane_cpu()
            started = time.monotonic()
            names = [f"app-{i:05d}" for i in range(instances)]
            created = await _create(client, namespace, names)
            progress = await _wait_active(client, namespace, instances, timeout_s=1800)
            active = progress.active
            all_active_s = max(active.values()) - started if len(active) == instances else None
            # Settled: the controller's requests have stopped (the passes after ACTIVE, such as
            # the follow-up of a pass that created children, are done).
            quiet_from = time.monotonic()
            all_settled_s = quiet_from + await _quiet(metrics_port, 3.0, 300.0) - started
            by_verb_after = await _requests_by_verb(client)
            after = sum(by_verb_after.values())
            controller_after = _controller_requests(metrics_port)
            cpu_after, peak = _proc_usage(controller.pid)
            plane_active = _cpu_between(plane_before, progress.control_plane_cpu_at_all_active)
            plane_settled = _cpu_between(plane_before, _control_plane_cpu())
            latencies = sorted(active[n] - created[n] for n in active)
            profile_report = await _profile_report(controller, dump) if dump else None
            detection_s = (
                await _wait_fights_detected(client, namespace, instances) if fight else None
            )
            steady_before = _controller_requests(metrics_port)
            writes = await _count_writes(client, namespace, steady_s)
            steady_requests = _controller_requests(metrics_port) - steady_before
            total_writes = sum(n for per in writes.values() for n in per.values())
            extra: dict[str, Any] = {}
            if restart:
                extra.update(await run_restart(kubeconfig, workers, instances, controller))
            if floor:
                stop_pid(controller.pid, reap=controller.poll)
                extra.update(
                    await run_floors(
                        client,
                        scenario,
                        instances,
                        workers,
                        all_active_s=all_active_s or 0.0,
                        shape=await capture_kro_shape(client, scenario, namespace),
                        order=floor_order,
                    )
                )
            return {
                "scenario": scenario,
                "load_average_at_start": load,
                "instances": instances,
                "workers": workers,
                "client_qps": CLIENT_QPS[0],
                "skip_unchanged": SKIP_UNCHANGED[0],
                "active": len(active),
                "all_active_s": all_active_s,
                "all_settled_s": all_settled_s,
                "throughput_per_s": len(active) / (max(active.values()) - started)
                if active
                else 0.0,
                "p50_create_to_active_s": statistics.median(latencies) if latencies else None,
                "p99_create_to_active_s": latencies[int(0.99 * (len(latencies) - 1))]
                if latencies
                else None,
                "api_requests_total": after - before,
                "api_requests_per_instance": (after - before) / instances,
                "api_requests_per_instance_by_verb": _per_instance(
                    by_verb_before, by_verb_after, instances
                ),
                "controller_requests_per_instance": (controller_after - controller_before)
                / instances,
                "controller_cpu_s": cpu_after - cpu_before,
                "controller_peak_rss_mib": peak / 2**20,
                "pinned": PINNED[0] if PINNED else None,
                "control_plane_cpu_until_all_active_s": plane_active,
                "control_plane_cpu_until_all_settled_s": plane_settled,
                "fight": fight,
                "fight_detected_after_s": detection_s,
                "steady_state_s": steady_s,
                "steady_state_objects_written": len(writes),
                "steady_state_writes": total_writes,
                "steady_state_writes_per_min": total_writes * 60.0 / steady_s if steady_s else 0.0,
                "steady_state_writes_by_object": writes,
                "steady_state_controller_requests": steady_requests,
                **startup,
                **extra,
                **({"profile": profile, "profile_report": profile_report} if profile else {}),
            }
        finally:
            stop_pid(controller.pid, reap=controller.poll)
    finally:
        await client.close()


# -- a Graph decorating Namespaces (--scenario graph-decorator) ---------------------------------

GRAPHS = GVR("kro.run", "v1alpha1", "graphs")
POLICIES = GVR("networking.k8s.io", "v1", "networkpolicies")
SERVICE_ACCOUNTS = GVR("", "v1", "serviceaccounts")
CONFIGMAPS = GVR("", "v1", "configmaps")
CLUSTER_ROLES = GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = GVR("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
DECORATE_LABEL = "bench.kro.run/decorate"
DECORATOR = "baseline"
"""The Graph's name, its ServiceAccount's, and the ClusterRole's (prefixed with the run's tag)."""
GRAPH_GATE = (
    "--feature-gates=GraphKind=true",
    "--controller-namespace=kro-system",
    "--controller-service-account=kro",
)
"""The Graph controller's gate and the two flags it requires (kro's own ServiceAccount, which no
Graph may apply as; the bench's Graph applies as its own ServiceAccount, never that one)."""
POLICY_SELECTOR = "kro.run/node-id=policies"


def decorator_graph(namespace: str) -> dict[str, Any]:
    """Every Namespace labelled DECORATE_LABEL=on gets a default-deny NetworkPolicy: a `ref` by
    selector over Namespaces (a list), and a `template` with one row per listed Namespace."""
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": DECORATOR, "namespace": namespace},
        "spec": {
            "serviceAccountName": DECORATOR,
            "nodes": [
                {
                    "id": "targets",
                    "ref": {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"selector": {"matchLabels": {DECORATE_LABEL: "on"}}},
                    },
                },
                {
                    "id": "policies",
                    "forEach": [{"target": "${targets}"}],
                    "template": {
                        "apiVersion": "networking.k8s.io/v1",
                        "kind": "NetworkPolicy",
                        "metadata": {
                            "name": "baseline-deny",
                            "namespace": "${target.metadata.name}",
                        },
                        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
                    },
                },
            ],
        },
    }


def decorator_applier(namespace: str, tag: str) -> list[tuple[GVR, dict[str, Any], str | None]]:
    """The ServiceAccount the Graph applies as, with only what its nodes need: read Namespaces,
    write NetworkPolicies in any namespace. kro itself keeps its own (admin) identity for the
    watches and the Graph's status; every read and write of the Graph's nodes is impersonated."""
    role = f"{tag}-{DECORATOR}"
    writes = ["get", "list", "watch", "create", "update", "patch", "delete"]
    return [
        (SERVICE_ACCOUNTS, {"metadata": {"name": DECORATOR}}, namespace),
        (
            CLUSTER_ROLES,
            {
                "metadata": {"name": role},
                "rules": [
                    {"apiGroups": [""], "resources": ["namespaces"], "verbs": writes[:3]},
                    {
                        "apiGroups": ["networking.k8s.io"],
                        "resources": ["networkpolicies"],
                        "verbs": writes,
                    },
                ],
            },
            None,
        ),
        (
            CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": DECORATOR, "namespace": namespace}],
            },
            None,
        ),
    ]


@dataclass
class Decorated:
    """What the bench has seen of the decorator's work through two watches: when a policy first
    appeared in each namespace, the `kro.run/collection-size` each carries now, and the Graph as
    last seen. `changed` wakes whoever waits for a figure."""

    policies: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, str] = field(default_factory=dict)
    graph: dict[str, Any] = field(default_factory=dict)
    graph_gone: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def see_policy(self, kind: str, obj: dict[str, Any], now: float) -> None:
        namespace = obj["metadata"]["namespace"]
        if kind == "DELETED":
            self.policies.pop(namespace, None)
            self.sizes.pop(namespace, None)
        else:
            self.policies.setdefault(namespace, now)
            labels = obj["metadata"].get("labels") or {}
            self.sizes[namespace] = str(labels.get("kro.run/collection-size", ""))
        self.changed.set()

    def list_policies(self, items: list[dict[str, Any]], now: float) -> None:
        """A (re)list: what is not in it is gone, even if its DELETED event was missed."""
        present = {i["metadata"]["namespace"] for i in items}
        for namespace in set(self.policies) - present:
            self.see_policy("DELETED", {"metadata": {"namespace": namespace}}, now)
        for item in items:
            self.see_policy("ADDED", item, now)

    def see_graph(self, kind: str, obj: dict[str, Any], now: float) -> None:
        self.graph, self.graph_gone = (obj, kind == "DELETED")
        self.changed.set()

    def list_graphs(self, items: list[dict[str, Any]], now: float) -> None:
        if items:
            self.see_graph("ADDED", items[0], now)
        elif self.graph:
            self.see_graph("DELETED", self.graph, now)

    def graph_converged(self, count: int) -> bool:
        """Ready, with `count` entries in managedResources, each with the UID of its object."""
        status = self.graph.get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        entries = status.get("managedResources") or []
        return ready and len(entries) == count and all(e.get("uid") for e in entries)

    async def until(self, done: Any, timeout_s: float) -> float | None:
        """The monotonic time `done()` was first seen true, or None after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not done():
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)
        return time.monotonic()


async def _follow(
    client: Client,
    gvr: GVR,
    listed: Any,
    see: Any,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
) -> None:
    """List `gvr` (to `listed(items, when)`), then watch it from that version (each event to
    `see(type, object, when)`), relisting whenever the watch ends. One watch each, rather than
    polling lists, so following the run adds next to nothing to the API server it measures."""
    while True:
        items, version = await client.list_all(
            gvr, namespace=namespace, label_selector=label_selector
        )
        listed(items, time.monotonic())
        stream = client.watch(
            gvr,
            namespace=namespace,
            resource_version=version,
            label_selector=label_selector,
            drop_managed_fields=True,
            timeout_s=60,
        )
        with contextlib.suppress(KubeError):
            async with contextlib.aclosing(stream) as events:
                async for event in events:
                    if event.type in ("ADDED", "MODIFIED", "DELETED"):
                        see(event.type, event.object, time.monotonic())


async def _create_namespaces(client: Client, names: Sequence[str], labels: dict[str, str]) -> None:
    limit = asyncio.Semaphore(32)

    async def one(name: str) -> None:
        async with limit:
            body = {"apiVersion": "v1", "kind": "Namespace"}
            await client.create(NAMESPACES, {**body, "metadata": {"name": name, "labels": labels}})

    await asyncio.gather(*(one(n) for n in names))


async def _namespaces_furnished(client: Client, names: Sequence[str], timeout_s: float) -> None:
    """Wait until kube-controller-manager has given every new namespace its `default`
    ServiceAccount and `kube-root-ca.crt` ConfigMap: those creates would otherwise land in the
    measured window and be counted as the decorator's requests."""
    wanted = set(names)
    deadline = time.monotonic() + timeout_s
    for gvr, name in ((SERVICE_ACCOUNTS, "default"), (CONFIGMAPS, "kube-root-ca.crt")):
        while True:
            items, _ = await client.list_all(gvr, field_selector=f"metadata.name={name}")
            if wanted <= {i["metadata"]["namespace"] for i in items}:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"namespaces still without {gvr.resource} {name}")
            await asyncio.sleep(0.5)


async def _label_namespaces(client: Client, names: Sequence[str]) -> None:
    limit = asyncio.Semaphore(32)

    async def one(name: str) -> None:
        async with limit:
            await client.patch(NAMESPACES, name, {"metadata": {"labels": {DECORATE_LABEL: "on"}}})

    await asyncio.gather(*(one(n) for n in names))


async def _quiet_patient(port: int, quiet_s: float, limit_s: float) -> float:
    """`_quiet` for a controller whose event loop may be busy for seconds at a time (a pass
    over hundreds of objects): an unanswered scrape counts as activity, not an error."""
    started = time.monotonic()
    last, last_change = -1.0, started
    while time.monotonic() - last_change < quiet_s and time.monotonic() - started < limit_s:
        await asyncio.sleep(0.25)
        try:
            now = await asyncio.to_thread(_controller_requests, port)
        except OSError:  # timed out (TimeoutError is an OSError): busy
            now = -1.0
        if now < 0 or now != last:
            last, last_change = now, time.monotonic()
    return last_change - started


@dataclass
class Responsiveness:
    """The longest the controller took to answer a /metrics scrape while a phase ran, probed
    every half second from a thread: how long its event loop went without serving anything
    else (health probes, watch events, other Graphs)."""

    port: int
    slowest_s: float = 0.0

    def _probe(self) -> None:
        asked = time.monotonic()
        with contextlib.suppress(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=120).close()
        self.slowest_s = max(self.slowest_s, time.monotonic() - asked)

    async def run(self) -> None:
        while True:
            await asyncio.to_thread(self._probe)
            await asyncio.sleep(0.5)


async def _decorator_phase(
    client: Client,
    controller: subprocess.Popen[bytes],
    port: int,
    seen: Decorated,
    *,
    act: Awaitable[Any],
    wanted: Sequence[str],
    total: int,
    timeout_s: float,
) -> dict[str, Any]:
    """Run `act` (create the Graph, or label Namespaces), then time until a policy exists in
    every namespace of `wanted` and until the Graph reports Ready over `total` objects; count
    the API server's requests, and the controller's, until the controller has been quiet 3 s."""
    by_verb_before = await _requests_by_verb(client)
    controller_before = _controller_requests(port)
    cpu_before, _ = _proc_usage(controller.pid)
    plane_before = _control_plane_cpu()
    probe = Responsiveness(port)
    probing = asyncio.create_task(probe.run())
    started = time.monotonic()
    await act
    policies_at = await seen.until(lambda: all(ns in seen.policies for ns in wanted), timeout_s)
    graph_at = await seen.until(lambda: seen.graph_converged(total), timeout_s)
    quiet_from = time.monotonic()
    settled_s = quiet_from + await _quiet_patient(port, 3.0, 600.0) - started
    probing.cancel()
    await asyncio.gather(probing, return_exceptions=True)
    by_verb_after = await _requests_by_verb(client)
    cpu_after, peak = _proc_usage(controller.pid)
    n = len(wanted)
    api = sum(by_verb_after.values()) - sum(by_verb_before.values())
    return {
        "namespaces": n,
        "policies_s": policies_at - started if policies_at else None,
        "policies_found": sum(ns in seen.policies for ns in wanted),
        "graph_ready_s": graph_at - started if graph_at else None,
        "settled_s": settled_s,
        "controller_longest_unresponsive_s": probe.slowest_s,
        "policies_labelled_with_final_size": sum(v == str(total) for v in seen.sizes.values()),
        "api_requests": api,
        "api_requests_per_namespace": api / n,
        "api_requests_per_namespace_by_verb": _per_instance(by_verb_before, by_verb_after, n),
        "controller_requests_per_namespace": (_controller_requests(port) - controller_before) / n,
        "controller_cpu_s": cpu_after - cpu_before,
        "controller_peak_rss_mib": peak / 2**20,
        "control_plane_cpu_s": _cpu_between(plane_before, _control_plane_cpu()),
    }


async def run_graph_decorator(
    kubeconfig: str,
    namespaces: int,
    more: int,
    workers: int,
    *,
    profile: str | None = None,
    timeout_s: float = 1800.0,
) -> dict[str, Any]:
    """One Graph decorating `namespaces` labelled Namespaces with a NetworkPolicy each (created
    after the Namespaces), then `more` Namespaces labelled at once, then the Graph deleted.
    With `profile`, the controller runs profiled and reports once the first phase settled."""
    load = _load_average()
    client = await Client.from_kubeconfig(kubeconfig, options=ClientOptions(qps=0))
    tag = f"deco-{int(time.time())}"
    home = f"{tag}-graphs"
    labelled = [f"{tag}-{i:04d}" for i in range(namespaces)]
    later = [f"{tag}-more-{i:04d}" for i in range(more)]
    seen = Decorated()
    followers: list[asyncio.Task[None]] = []
    try:
        for crd in kro_crds():
            with contextlib.suppress(AlreadyExists):
                await client.create(CRDS, crd)
            await wait_established(client, crd["metadata"]["name"])
        await _create_namespaces(client, [home], {})
        for gvr, body, namespace in decorator_applier(home, tag):
            await client.create(gvr, body, namespace=namespace)
        await _create_namespaces(client, labelled, {DECORATE_LABEL: "on"})
        await _create_namespaces(client, later, {})
        await _namespaces_furnished(client, [*labelled, *later], timeout_s)
        followers = [
            asyncio.create_task(
                _follow(
                    client,
                    POLICIES,
                    seen.list_policies,
                    seen.see_policy,
                    label_selector=POLICY_SELECTOR,
                )
            ),
            asyncio.create_task(
                _follow(client, GRAPHS, seen.list_graphs, seen.see_graph, namespace=home)
            ),
        ]
        port = free_port()
        dump = Path(tempfile.mkstemp(prefix="kro-profile-")[1]) if profile else None
        controller = _start_controller(
            kubeconfig,
            workers,
            port,
            (profile, dump) if profile and dump else None,
            extra_args=GRAPH_GATE,
        )
        try:
            startup = await _startup_usage(controller, port)
            await client.mapper.refresh()
            decorate = await _decorator_phase(
                client,
                controller,
                port,
                seen,
                act=client.create(GRAPHS, decorator_graph(home), namespace=home),
                wanted=labelled,
                total=namespaces,
                timeout_s=timeout_s,
            )
            profile_report = await _profile_report(controller, dump) if dump else None
            label_more = await _decorator_phase(
                client,
                controller,
                port,
                seen,
                act=_label_namespaces(client, later),
                wanted=later,
                total=namespaces + more,
                timeout_s=timeout_s,
            )
            started = time.monotonic()
            await client.delete(GRAPHS, DECORATOR, namespace=home)
            gone_at = await seen.until(lambda: seen.graph_gone and not seen.policies, timeout_s)
            _, peak = _proc_usage(controller.pid)
        finally:
            stop_pid(controller.pid, reap=controller.poll)
        return {
            "scenario": "graph-decorator",
            "load_average_at_start": load,
            "namespaces": namespaces,
            "more_namespaces": more,
            "client_qps": CLIENT_QPS[0],
            "pinned": PINNED[0] if PINNED else None,
            **startup,
            "decorate": decorate,
            "label_more": label_more,
            "delete_graph_s": gone_at - started if gone_at else None,
            "policies_left_after_delete": len(seen.policies),
            "controller_peak_rss_mib": peak / 2**20,
            **({"profile": profile, "profile_report": profile_report} if profile else {}),
        }
    finally:
        for task in followers:
            task.cancel()
        await asyncio.gather(*followers, return_exceptions=True)
        await client.close()


def _report_graph_decorator(result: dict[str, Any]) -> None:
    for key, value in result.items():
        if key == "profile_report":
            print(value)
            continue
        if isinstance(value, dict):
            print(f"  {key}:")
            for inner, figure in value.items():
                shown = f"{figure:.3f}" if isinstance(figure, float) else figure
                print(f"    {inner:36} {shown}")
            continue
        print(f"  {key:38} {value:.3f}" if isinstance(value, float) else f"  {key:38} {value}")
    RESULTS.mkdir(exist_ok=True)
    suffix = f"-profile-{result['profile']}" if result.get("profile") else ""
    path = RESULTS / f"controller-graph-decorator-{result['namespaces']}ns{suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"  written to {path}")


# -- sharded replicas (--replicas) -------------------------------------------------------------

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
) -> dict[str, Any]:
    """N `--shards=auto` replicas: per-replica RSS, CPU, watch events, and time to all ACTIVE."""
    load = _load_average()
    client = await Client.from_kubeconfig(kubeconfig, options=ClientOptions(qps=0))
    tag = f"bench-{int(time.time())}"
    names = [f"{tag}-{secrets.token_hex(3)}" for _ in range(namespaces)]
    lease_namespace = f"{tag}-leases"
    logs = Path(tempfile.mkdtemp(prefix="kro-bench-replicas-"))
    started_replicas: list[KroProcess] = []
    try:
        for crd in kro_crds():
            with contextlib.suppress(AlreadyExists):
                await client.create(CRDS, crd)
            await wait_established(client, crd["metadata"]["name"])
        for ns in [*names, lease_namespace]:
            await client.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            )
        args = [
            "--shards=auto",
            f"--leader-election-namespace={lease_namespace}",
            f"--dynamic-controller-concurrent-reconciles={workers}",
            f"--client-qps={CLIENT_QPS[0]:g}",
            f"--client-burst={max(1, int(CLIENT_QPS[0] * 2))}",
            f"--skip-unchanged={str(SKIP_UNCHANGED[0]).lower()}",
        ]
        for index in range(replicas):
            process = KroProcess(Path(kubeconfig), logs / f"replica-{index}.log", args)
            started_replicas.append(process.start())
        settle_s = await _settled(started_replicas)
        await client.apply(RGDS, scenario_rgd(scenario), field_manager="bench", force=True)
        await _wait_rgd_active(client)
        await client.mapper.refresh()
        before = await _request_total(client)
        counters_before = [_replica_counters(p) for p in started_replicas]
        cpu_before = [_proc_usage(p.pid)[0] for p in started_replicas]
        started = time.monotonic()
        keys = [(names[i % namespaces], f"app-{i:05d}") for i in range(instances)]
        created = await _create_spread(client, keys)
        active = await _wait_active_spread(client, set(names), instances, timeout_s=1800)
        all_active_s = max(active.values()) - started if len(active) == instances else None
        after = await _request_total(client)
        cached = await _cached_settled(started_replicas)
        per_replica = []
        for index, process in enumerate(started_replicas):
            cpu, peak = _proc_usage(process.pid)
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


def _replicas_result_path(result: dict[str, Any], replicas: int) -> Path:
    return RESULTS / (
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
        single_path = _replicas_result_path(result, 1)
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


def _report_replicas(result: dict[str, Any]) -> None:
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
    RESULTS.mkdir(exist_ok=True)
    path = _replicas_result_path(result, result["replicas"])
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"  written to {path}")


def _report(result: dict[str, Any]) -> None:
    for key, value in result.items():
        if key == "profile_report":
            print(value)
            continue
        if key == "steady_state_writes_by_object":
            for obj, per in sorted(value.items()):
                print(f"    {obj:40} {per}")
            continue
        print(f"  {key:28} {value:.3f}" if isinstance(value, float) else f"  {key:28} {value}")
    RESULTS.mkdir(exist_ok=True)
    suffix = "-fight" if result.get("fight") else ""
    suffix += f"-profile-{result['profile']}" if result.get("profile") else ""
    suffix += "-scaling" if result.get("scaling") else ""
    suffix += "-pinned" if result.get("pinned") else ""
    suffix += "-noskip" if result.get("skip_unchanged") is False else ""
    scenario = result.get("scenario", "three")
    name = f"controller-{scenario}-{result['instances']}-w{result['workers']}{suffix}.json"
    path = RESULTS / name
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"  written to {path}")


async def _main(args: argparse.Namespace, kubeconfig: str) -> None:
    if args.scenario == "graph-decorator":
        print(
            f"== graph-decorator: one Graph over {args.namespaces} labelled namespaces, "
            f"then {args.more_namespaces} more labelled"
        )
        _report_graph_decorator(
            await run_graph_decorator(
                kubeconfig,
                args.namespaces,
                args.more_namespaces,
                args.workers,
                profile=args.profile,
            )
        )
        return
    if args.replicas:
        print(
            f"== {args.scenario}: {args.instances} instances in {args.namespaces} namespaces, "
            f"{args.replicas} sharded replica(s), {args.workers} workers each"
        )
        _report_replicas(
            await run_replicas(
                kubeconfig,
                args.instances,
                args.workers,
                args.replicas,
                namespaces=args.namespaces,
                scenario=args.scenario,
            )
        )
        return
    print(f"== {args.scenario}: {args.instances} instances, {args.workers} workers")
    _report(
        await run_once(
            kubeconfig,
            args.instances,
            args.workers,
            args.steady_seconds,
            fight=args.fight,
            scenario=args.scenario,
            floor=args.floor,
            floor_order=args.floor_order,
            restart=args.restart,
            profile=args.profile,
        )
    )


def _scaling(instances: int, scenario: str) -> None:
    """Throughput per worker count, each on a fresh cluster so runs do not see each other.
    Results go to controller-<scenario>-<N>-w<W>-scaling.json."""
    rows = []
    for workers in (1, 2, 4, 8, 16, 32):
        print(f"== {scenario}: {instances} instances, {workers} workers")
        with LocalCluster(options=ClusterOptions(nodes=1)) as state:
            result = asyncio.run(
                run_once(str(state.bearer_kubeconfig()), instances, workers, 0, scenario=scenario)
            )
        result["scaling"] = True
        _report(result)
        rows.append(
            (
                workers,
                result["load_average_at_start"][0],
                result["all_active_s"] or 0.0,
                result["throughput_per_s"],
                result["controller_cpu_s"],
                result["controller_requests_per_instance"],
                result["controller_peak_rss_mib"],
            )
        )
    print("workers  load  all ACTIVE s  instances/s  controller CPU s  requests/instance  peak MiB")
    for workers, load, active_s, throughput, cpu, requests, rss in rows:
        print(
            f"{workers:7}  {load:4.2f}  {active_s:12.1f}  {throughput:11.2f}  {cpu:16.2f}  "
            f"{requests:17.1f}  {rss:8.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--steady-seconds", type=float, default=60.0)
    parser.add_argument(
        "--scenario",
        choices=("three", "configmaps", "fifty", "graph-decorator"),
        default="three",
    )
    parser.add_argument(
        "--floor", action="store_true", help="also time a plain client making the same objects"
    )
    parser.add_argument(
        "--floor-order",
        type=_floor_order,
        default=tuple(FLOOR_NAMES),
        help="the order the floors run in after kro's run (default create,apply,upstream)",
    )
    parser.add_argument(
        "--restart",
        action="store_true",
        help="restart the controller once converged: time to steady state, writes, requests",
    )
    parser.add_argument(
        "--fight",
        action="store_true",
        help="the Deployment template also sets an annotation kube-controller-manager owns; "
        "the steady window starts once kro has yielded it on every instance",
    )
    parser.add_argument(
        "--scaling", type=int, default=0, help="instead: this many instances for each worker count"
    )
    parser.add_argument(
        "--no-state-gauges",
        action="store_true",
        help="run the controller without instances_by_state / rgds_by_state (KRO_STATE_GAUGES=0), "
        "to compare its CPU with a default run",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=0,
        help="run this many `kro controller --shards=auto` replicas instead of one controller",
    )
    parser.add_argument(
        "--namespaces",
        type=int,
        default=30,
        help="with --replicas: spread the instances over this many namespaces; with "
        "--scenario graph-decorator: the labelled Namespaces the Graph decorates",
    )
    parser.add_argument(
        "--more-namespaces",
        type=int,
        default=50,
        help="with --scenario graph-decorator: Namespaces labelled once the first are decorated",
    )
    parser.add_argument(
        "--profile",
        choices=("memory", "cpu"),
        help="run the controller under tracemalloc or cProfile and print, once every instance "
        "is ACTIVE, its top allocations (by file, line, kro line; live objects by type) or its "
        "top functions by cumulative and self time",
    )
    parser.add_argument(
        "--client-qps",
        type=float,
        default=CLIENT_QPS[0],
        help="the controller's --client-qps (burst: twice that). 500 is what the side-by-side "
        "runs with upstream used; at 22 requests per instance it alone sets 44 s per 1,000 "
        "instances, so pass more to see what the API server and kro can do",
    )
    parser.add_argument(
        "--no-skip-unchanged",
        action="store_true",
        help="run the controller with --skip-unchanged=false (its memory of unchanged objects "
        "off), to see what the memory saves",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="pin the local control plane to the first CPU and kro and this script to the "
        "others, to see which side is busy (needs its own control plane: no KUBECONFIG)",
    )
    args = parser.parse_args()
    CLIENT_QPS[0] = args.client_qps
    SKIP_UNCHANGED[0] = not args.no_skip_unchanged
    if args.pin and (os.environ.get("KUBECONFIG") or args.scaling or args.replicas):
        parser.error("--pin needs the script's own control plane, and one run")
    if args.replicas and (args.fight or args.floor or args.restart or args.scaling):
        parser.error("--replicas runs alone: not with --fight, --floor, --restart or --scaling")
    if args.scenario == "graph-decorator" and (
        args.fight or args.floor or args.restart or args.scaling or args.replicas
    ):
        parser.error(
            "--scenario graph-decorator runs alone: not with --fight, --floor, --restart, "
            "--scaling or --replicas"
        )
    if args.no_state_gauges:
        os.environ["KRO_STATE_GAUGES"] = "0"  # the controller subprocess inherits it
    if args.scaling:
        _scaling(args.scaling, args.scenario)
        return
    kubeconfig = os.environ.get("KUBECONFIG")
    if kubeconfig:
        asyncio.run(_main(args, kubeconfig))
        return
    with LocalCluster(options=ClusterOptions(nodes=1)) as state:
        CONTROL_PLANE.update(state.pids)
        if args.pin:
            PINNED.append(pin_control_plane(state.pids))
        # Every client of the run (kro, the floors, this script) authenticates as a
        # controller in a cluster does: with a bearer token (ClusterState.bearer_kubeconfig).
        asyncio.run(_main(args, str(state.bearer_kubeconfig())))


if __name__ == "__main__":
    main()
