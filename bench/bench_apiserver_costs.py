"""What each request of an instance's pass costs kube-apiserver: CPU milliseconds per request.

Why: on a small machine the time to ACTIVE of many instances is set by what kube-apiserver
spends serving kro, not by kro (bench_controller.py prints both). This script sends, for each
kind of request a pass makes, `--requests` of them (16 at a time, like 16 workers) to a local
control plane of its own, with nothing else running against it, and divides the CPU time
kube-apiserver and etcd used meanwhile (/proc/<pid>/stat, utime + stime) by the number sent.
The instance kind is the CRD kro generates for a small RGD (a spec with a default, a status
with conditions, the status subresource). Requests are sent in the order a new instance's pass
makes them, so each write meets the managedFields the earlier ones left, as it does in kro.

    python bench/bench_apiserver_costs.py                 # bearer token, as in a cluster
    python bench/bench_apiserver_costs.py --auth certificate --requests 1000

`--auth certificate` authenticates with the admin client certificate instead, which
kube-apiserver verifies again on every request (a bearer token is looked up). Results go to
bench/results/apiserver-costs-<auth>.json with the load average at the start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kro.controllers.crd import CRDS, wait_established
from kro.graph.crd import synthesize_crd
from kro.runtime.client import Client, ClientOptions
from kro.runtime.gvk import GVR
from kro.testing.cluster import ClusterOptions, LocalCluster

RESULTS = Path(__file__).resolve().parent / "results"
CONCURRENCY = 16
GROUP = "costs.kro.run"
INSTANCES = GVR(GROUP, "v1alpha1", "apps")
CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")
SPEC = {"type": "object", "properties": {"message": {"type": "string", "default": "hello"}}}
CRD = synthesize_crd({"apiVersion": "v1alpha1", "kind": "App", "group": GROUP}, SPEC)
"""The instance CRD kro generates for an RGD of that schema (kro.graph.crd)."""


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status(tag: str) -> dict[str, Any]:
    kinds = ("InstanceManaged", "GraphResolved", "ResourcesReady", "WatchesHealthy", "Ready")
    return {
        "state": "ACTIVE",
        "conditions": [
            {
                "type": kind,
                "status": "True",
                "reason": tag,
                "message": f"{kind} {tag}",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "observedGeneration": 1,
            }
            for kind in kinds
        ],
    }


class Costs:
    def __init__(self, client: Client, pids: dict[str, int], count: int, namespace: str) -> None:
        self.client = client
        self.pids = pids
        self.count = count
        self.namespace = namespace
        self.rows: list[dict[str, Any]] = []
        self.instances: dict[int, dict[str, Any]] = {}

    async def measure(self, label: str, one: Callable[[int], Awaitable[Any]]) -> None:
        limit = asyncio.Semaphore(CONCURRENCY)

        async def bounded(i: int) -> None:
            async with limit:
                await one(i)

        before = {name: _cpu_s(pid) for name, pid in self.pids.items()}
        started = time.monotonic()
        await asyncio.gather(*(bounded(i) for i in range(self.count)))
        wall = time.monotonic() - started
        used = {name: _cpu_s(pid) - before[name] for name, pid in self.pids.items()}
        row = {
            "request": label,
            "per_s": self.count / wall,
            "apiserver_ms": used["kube-apiserver"] / self.count * 1000,
            "etcd_ms": used["etcd"] / self.count * 1000,
        }
        self.rows.append(row)
        print(
            f"  {label:44s} {row['apiserver_ms']:5.2f} ms kube-apiserver"
            f"  {row['etcd_ms']:4.2f} ms etcd  ({row['per_s']:5.0f}/s)",
            flush=True,
        )

    def _instance_meta(self, i: int) -> dict[str, Any]:
        return {"name": f"app-{i}", "namespace": self.namespace}

    async def run(self) -> None:
        c, ns = self.client, self.namespace

        def configmap(i: int, prefix: str) -> dict[str, Any]:
            meta = {"name": f"{prefix}-{i}", "namespace": ns}
            return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"m": "x"}}

        async def keep(i: int, answer: Awaitable[dict[str, Any]]) -> None:
            self.instances[i] = await answer

        api_version = f"{GROUP}/v1alpha1"
        await self.measure(
            "POST a ConfigMap (floor 1)", lambda i: c.create(CONFIGMAPS, configmap(i, "post"))
        )
        await self.measure(
            "server-side apply: create a ConfigMap",
            lambda i: c.apply(
                CONFIGMAPS, configmap(i, "ssa"), field_manager="kro.run/applyset", force=True
            ),
        )
        await self.measure(
            "server-side apply: a ConfigMap, no change",
            lambda i: c.apply(
                CONFIGMAPS, configmap(i, "ssa"), field_manager="kro.run/applyset", force=True
            ),
        )
        await self.measure("GET a ConfigMap", lambda i: c.get(CONFIGMAPS, f"ssa-{i}", namespace=ns))
        await self.measure(
            "POST an instance (the user's create)",
            lambda i: keep(
                i,
                c.create(
                    INSTANCES,
                    {"apiVersion": api_version, "kind": "App", "metadata": self._instance_meta(i)},
                ),
            ),
        )
        await self.measure("GET an instance", lambda i: c.get(INSTANCES, f"app-{i}", namespace=ns))

        def instance_apply(
            i: int, manager: str, labels: dict[str, str], **metadata: Any
        ) -> Awaitable[dict[str, Any]]:
            meta = {**self._instance_meta(i), **metadata, "labels": labels}
            body = {"apiVersion": api_version, "kind": "App", "metadata": meta}
            return c.apply(INSTANCES, body, field_manager=manager, force=True)

        def inventory(kinds: str) -> dict[str, str]:
            return {
                "applyset.kubernetes.io/tooling": "kro/v0",
                "applyset.kubernetes.io/contains-group-kinds": kinds,
            }

        await self.measure(
            "server-side apply: an instance's labels",
            lambda i: keep(
                i,
                instance_apply(
                    i,
                    "kro.run/labeller",
                    {"kro.run/owned": "true", "applyset.kubernetes.io/id": f"set-{i}"},
                    finalizers=["kro.run/finalizer"],
                    annotations=inventory(""),
                ),
            ),
        )
        await self.measure(
            "server-side apply: an instance's inventory",
            lambda i: keep(
                i,
                instance_apply(
                    i,
                    "kro.run/applyset-parent",
                    {"applyset.kubernetes.io/id": f"set-{i}"},
                    annotations=inventory("ConfigMap"),
                ),
            ),
        )

        def status(i: int) -> Awaitable[dict[str, Any]]:
            meta = self.instances[i]["metadata"]
            body = {
                "apiVersion": api_version,
                "kind": "App",
                "metadata": {k: meta[k] for k in ("name", "namespace", "resourceVersion")},
                "status": _status("first"),
            }
            return c.update_status(INSTANCES, body, namespace=ns)

        await self.measure("PUT an instance's status", lambda i: keep(i, status(i)))


async def _main(args: argparse.Namespace, kubeconfig: str, pids: dict[str, int]) -> int:
    options = ClientOptions(qps=1e6, burst=1_000_000)
    async with await Client.from_kubeconfig(kubeconfig, options=options) as client:
        await client.apply(CRDS, CRD, field_manager="bench", force=True)
        await wait_established(client, CRD["metadata"]["name"])
        await client.mapper.refresh()
        namespace = f"costs-{uuid.uuid4().hex[:6]}"
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await client.create(NAMESPACES, body)
        load = list(os.getloadavg())
        print(f"{args.requests} of each, {CONCURRENCY} at a time, auth {args.auth}, load {load}")
        costs = Costs(client, pids, args.requests, namespace)
        await costs.run()
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"apiserver-costs-{args.auth}.json"
    result = {"auth": args.auth, "requests": args.requests, "load_average_at_start": load}
    out.write_text(json.dumps({**result, "rows": costs.rows}, indent=2) + "\n")
    print(f"written to {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="of each kind")
    parser.add_argument("--auth", choices=("bearer", "certificate"), default="bearer")
    args = parser.parse_args()
    with LocalCluster(options=ClusterOptions(nodes=0)) as state:
        kubeconfig = state.bearer_kubeconfig() if args.auth == "bearer" else state.kubeconfig
        pids = {name: state.pids[name] for name in ("kube-apiserver", "etcd")}
        return asyncio.run(_main(args, str(kubeconfig), pids))


if __name__ == "__main__":
    raise SystemExit(main())
