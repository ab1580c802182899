"""What the spokes scenario measures with: the controller's request counters (the hub's and
each member's apart), each API server's own count, the control planes' CPU, and the instances
it creates in several clusters and follows there until ACTIVE."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kro.runtime.client import Client
from kro.runtime.errors import KubeError

from ..benchapp import INSTANCES, new_instance
from ..harness import control_plane_cpu, proc_usage, requests_by_verb

HUB = "hub"
"""How the figures name the hub (the controller's own cluster)."""
IN_FLIGHT = 32
"""Creates in flight at once, over all clusters together (rgd.py's figure)."""

_SAMPLE = re.compile(r"^(\w+)\{([^}]*)\}\s+(\S+)")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class Requests:
    """The controller's request counters at one moment: every request by (host, method, code)
    (`rest_client_requests_total`, members included) and the members' by (cluster, method,
    code) (`kro_cluster_requests_total`)."""

    by_host: dict[tuple[str, str, str], float] = field(default_factory=dict)
    by_cluster: dict[tuple[str, str, str], float] = field(default_factory=dict)

    @classmethod
    def scrape(cls, port: int) -> Requests:
        """The counters of the controller serving /metrics on `port`, now."""
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            return cls.parse(answer.read().decode())

    @classmethod
    def parse(cls, text: str) -> Requests:
        """The two families out of a Prometheus text exposition."""
        found = cls()
        for line in text.splitlines():
            sample = _SAMPLE.match(line)
            if sample is None:
                continue
            name, labels = sample.group(1), dict(_LABEL.findall(sample.group(2)))
            value = float(sample.group(3))
            if name == "rest_client_requests_total":
                key = (labels.get("host", ""), labels.get("method", ""), labels.get("code", ""))
                found.by_host[key] = found.by_host.get(key, 0.0) + value
            elif name == "kro_cluster_requests_total":
                key = (labels.get("cluster", ""), labels.get("method", ""), labels.get("code", ""))
                found.by_cluster[key] = found.by_cluster.get(key, 0.0) + value
        return found

    def since(self, before: Requests) -> Requests:
        def minus(
            now: Mapping[tuple[str, str, str], float], then: Mapping[tuple[str, str, str], float]
        ) -> dict[tuple[str, str, str], float]:
            diff = {k: v - then.get(k, 0.0) for k, v in now.items()}
            return {k: v for k, v in diff.items() if v}

        return Requests(
            minus(self.by_host, before.by_host), minus(self.by_cluster, before.by_cluster)
        )

    def total(self) -> float:
        """Every request the controller sent (members' included once)."""
        return sum(self.by_host.values())

    def per_cluster(self) -> dict[str, float]:
        """Requests by cluster: the members' from their own counter, the hub's the rest."""
        members: dict[str, float] = {}
        for (cluster, _, _), value in self.by_cluster.items():
            members[cluster] = members.get(cluster, 0.0) + value
        return {HUB: self.total() - sum(members.values()), **members}

    def by_method(self, hub_host: str) -> dict[str, dict[str, float]]:
        """cluster -> "METHOD code" -> requests (the hub's read by its host)."""
        found: dict[str, dict[str, float]] = {}
        for (host, method, code), value in self.by_host.items():
            if host == hub_host:
                row = found.setdefault(HUB, {})
                row[f"{method} {code}"] = row.get(f"{method} {code}", 0.0) + value
        for (cluster, method, code), value in self.by_cluster.items():
            row = found.setdefault(cluster, {})
            row[f"{method} {code}"] = row.get(f"{method} {code}", 0.0) + value
        return found


@dataclass(frozen=True)
class Target:
    """Where a phase creates instances: a cluster, the bench's client there, a namespace."""

    cluster: str
    client: Client
    namespace: str
    names: Sequence[str]


@dataclass
class Seen:
    """When each instance, (cluster, name), was created and first seen ACTIVE."""

    created: dict[tuple[str, str], float] = field(default_factory=dict)
    active: dict[tuple[str, str], float] = field(default_factory=dict)

    def count(self, cluster: str) -> int:
        return sum(1 for c, _ in self.active if c == cluster)


async def create_instances(targets: Sequence[Target], seen: Seen) -> None:
    """Every target's instances, IN_FLIGHT at a time over all targets together."""
    limit = asyncio.Semaphore(IN_FLIGHT)

    async def one(target: Target, name: str) -> None:
        async with limit:
            body = new_instance(target.namespace, name)
            await target.client.create(INSTANCES, body, namespace=target.namespace)
            seen.created[(target.cluster, name)] = time.monotonic()

    await asyncio.gather(*(one(t, n) for t in targets for n in t.names))


async def follow_active(target: Target, seen: Seen, watch_s: float = 60.0) -> None:
    """Until every instance of `target` is ACTIVE: one list, then a watch from its version,
    relisting only when the watch ends (a poll of hundreds would load what it measures)."""
    wanted = len(target.names)

    def see(item: Mapping[str, Any], now: float) -> None:
        if (item.get("status") or {}).get("state") == "ACTIVE":
            seen.active.setdefault((target.cluster, item["metadata"]["name"]), now)

    while seen.count(target.cluster) < wanted:
        page = await target.client.list(INSTANCES, namespace=target.namespace)
        now = time.monotonic()
        for item in page.get("items") or []:
            see(item, now)
        stream = target.client.watch(
            INSTANCES,
            namespace=target.namespace,
            resource_version=page["metadata"]["resourceVersion"],
            drop_managed_fields=True,
            timeout_s=int(watch_s),
        )
        with contextlib.suppress(KubeError):
            async with contextlib.aclosing(stream) as events:
                async for event in events:
                    if event.type in ("ADDED", "MODIFIED"):
                        see(event.object, time.monotonic())
                    if seen.count(target.cluster) >= wanted:
                        return


@dataclass
class Planes:
    """The run's control planes: the hub's processes (known only when this run started it) and
    each member's, to sum their CPU over a phase."""

    members: dict[str, dict[str, int]] = field(default_factory=dict)

    def hub_cpu(self) -> float | None:
        return control_plane_cpu()

    def members_cpu(self) -> float:
        return sum(proc_usage(pid)[0] for pids in self.members.values() for pid in pids.values())


def machine_busy() -> float:
    """CPU seconds the whole machine has spent on any process so far (user, nice, system, irq,
    softirq in /proc/stat): less this run's own, what others on the shared machine used."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = ticks
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    """CPU seconds this bench process (its creates, watches and scrapes) has used."""
    return proc_usage(os.getpid())[0]


async def apiserver_requests(clients: Mapping[str, Client]) -> dict[str, dict[str, float]]:
    """Each API server's apiserver_request_total by "VERB resource", per cluster."""
    return {name: await requests_by_verb(client) for name, client in clients.items()}


def apiserver_diff(
    before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    """Per cluster, the requests its API server served between two scrapes (from anyone:
    kube-controller-manager, the bench's own scrape, kro), largest first."""
    found: dict[str, dict[str, float]] = {}
    for cluster, now in after.items():
        then = before.get(cluster, {})
        diff = {k: v - then.get(k, 0.0) for k, v in now.items() if v - then.get(k, 0.0) > 0}
        found[cluster] = dict(sorted(diff.items(), key=lambda kv: -kv[1]))
    return found
