"""What every scenario of the controller benchmark shares: the run's settings, kube-apiserver's
request counts, a process's CPU and memory, the local control plane, and the result files."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kro.api.crds import kro_crds
from kro.controllers.crd import CRDS, wait_established
from kro.runtime.client import Client, ClientOptions
from kro.runtime.errors import AlreadyExists
from kro.runtime.gvk import GVR
from kro.testing.cluster import ClusterOptions, LocalCluster

NAMESPACES = GVR("", "v1", "namespaces")


@dataclass
class Settings:
    """What the command line sets for every controller a run starts, and what the run learns
    about its control plane. One per process (SETTINGS): scenarios read it, only the command
    line and `on_cluster` write it."""

    client_qps: float = 500.0
    """The controller's --client-qps (burst twice that), set by --client-qps."""
    skip_unchanged: bool = True
    """The controller's --skip-unchanged, set off by --no-skip-unchanged."""
    control_plane: dict[str, int] = field(default_factory=dict)
    """The local control plane's processes (name -> pid) when this script started it, to sum
    their CPU over each measured window; empty with KUBECONFIG (its processes are not known)."""
    pinned: str | None = None
    """With --pin: how the CPUs were split, recorded with the result."""
    results: Path = Path(__file__).resolve().parent.parent / "results"
    """Where result files go (bench/results)."""

    def client_flags(self) -> list[str]:
        """The controller flags these settings decide."""
        return [
            f"--client-qps={self.client_qps:g}",
            f"--client-burst={max(1, int(self.client_qps * 2))}",
            f"--skip-unchanged={str(self.skip_unchanged).lower()}",
        ]


SETTINGS = Settings()


async def requests_by_verb(client: Client) -> dict[str, float]:
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


async def request_total(client: Client) -> float:
    return sum((await requests_by_verb(client)).values())


def per_instance(before: dict[str, float], after: dict[str, float], n: int) -> dict[str, float]:
    """Requests per instance by verb and resource between two scrapes, largest first."""
    diff = {k: (after.get(k, 0.0) - before.get(k, 0.0)) / n for k in after}
    return dict(sorted(((k, round(v, 2)) for k, v in diff.items() if v > 0), key=lambda kv: -kv[1]))


def proc_usage(pid: int) -> tuple[float, int]:
    """(CPU seconds, peak RSS bytes) of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    peak = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) * 1024
    return cpu, peak


def rss(pid: int) -> int:
    """Resident set size in bytes, now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def control_plane_cpu() -> float | None:
    """CPU seconds the local control plane's processes (etcd, kube-apiserver,
    kube-controller-manager, the scheduler, the fake nodes) have used so far."""
    if not SETTINGS.control_plane:
        return None
    return sum(proc_usage(pid)[0] for pid in SETTINGS.control_plane.values())


def cpu_between(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


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


def on_cluster(
    main: Callable[[str], Coroutine[Any, Any, None]], *, pin: bool = False, nodes: int = 1
) -> None:
    """Run `main(kubeconfig)` against $KUBECONFIG, or else a local control plane started for
    this run (with `nodes` fake nodes, so Deployments become Available; 0 for a scenario whose
    objects need no Pods, sparing the CPU of kube-scheduler and kwok), whose processes' CPU
    the figures then include; with `pin`, pinned apart from kro (pin_control_plane)."""
    kubeconfig = os.environ.get("KUBECONFIG")
    if kubeconfig:
        asyncio.run(main(kubeconfig))
        return
    with LocalCluster(options=ClusterOptions(nodes=nodes)) as state:
        SETTINGS.control_plane.update(state.pids)
        if pin:
            SETTINGS.pinned = pin_control_plane(state.pids)
        # Every client of the run (kro, the floors, this script) authenticates as a
        # controller in a cluster does: with a bearer token (ClusterState.bearer_kubeconfig).
        asyncio.run(main(str(state.bearer_kubeconfig())))


async def admin_client(kubeconfig: str) -> Client:
    """The script's own client: no rate limit of its own, so it never sets a figure."""
    return await Client.from_kubeconfig(kubeconfig, options=ClientOptions(qps=0))


async def install_kro_crds(client: Client) -> None:
    """kro's CRDs (ResourceGraphDefinition, Graph, ...), established, as before any run."""
    for crd in kro_crds():
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)
        await wait_established(client, crd["metadata"]["name"])


async def create_namespace(client: Client, name: str, labels: dict[str, str] | None = None) -> None:
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})


def write_result(name: str, result: dict[str, Any]) -> None:
    """Write `result` to bench/results/`name` and say where."""
    SETTINGS.results.mkdir(exist_ok=True)
    path = SETTINGS.results / name
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"  written to {path}")
