"""Deferred kinds (DeferredSchemaResolution): from a CRD becoming Established to the deferred
node that waited for it applied; prints, never asserts.

    PYTHONPATH=. python bench/bench_deferred.py          # its own control plane, 5 rounds
    PYTHONPATH=. python bench/bench_deferred.py --rounds 10 --hold 8 --kubeconfig "$KUBECONFIG"

(PYTHONPATH=. makes this checkout's kro the one imported, and the one whose CRDs are installed,
when another checkout is installed in editable mode.)

Each round runs two owners, each with one node of a kind that no CRD serves yet: a `Graph`
(node `optional: true`) and an RGD instance (resource `optional: true`). Once both report
`SchemaPending`, they are left waiting `--hold` seconds, so that their requeue backoff has
grown past the goal (1 s, 2 s, 4 s, ...: a wake by backoff would show as several seconds),
then the CRD is created. The figure is the time from the moment this script sees the CRD
`Established` (read every 10 ms) to the moment it sees the node's object (read every 10 ms):
kro's own delay, woken by the CRD event (kro.controllers.kind_waits), plus at most 20 ms of
this script's reads. Goal: under 2 s.

A real `kro controller` process runs against the control plane, with the `GraphKind` and
`DeferredSchemaResolution` gates; without --kubeconfig a local control plane is started (no
nodes). Results go to bench/results/deferred.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from kro.controllers.crd import CRDS
from kro.runtime.client import Client
from kro.runtime.errors import AlreadyExists, NotFound
from kro.runtime.gvk import GVR
from kro.testing.cluster import ClusterOptions, LocalCluster
from kro.testing.crds import install_crds
from kro.testing.processes import die_with_parent, free_port, stop_pid

RESULTS = Path(__file__).resolve().parent / "results"
GOAL_S = 2.0
TICK_S = 0.01
TIMEOUT_S = 60.0
NAMESPACE = "bench-deferred"
CONTROLLER_NAMESPACE = "kro-system"
GRAPHS = GVR("kro.run", "v1alpha1", "graphs")
RGDS = GVR("kro.run", "v1alpha1", "resourcegraphdefinitions")
NAMESPACES = GVR("", "v1", "namespaces")
SERVICE_ACCOUNTS = GVR("", "v1", "serviceaccounts")
CLUSTER_ROLES = GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = GVR("rbac.authorization.k8s.io", "v1", "clusterrolebindings")

T = TypeVar("T")


def widget_crd(group: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def widget(group: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 3},
    }


async def until(probe: Callable[[], Awaitable[T | None]], what: str) -> T:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        found = await probe()
        if found is not None:
            return found
        await asyncio.sleep(TICK_S)
    raise TimeoutError(f"no {what} within {TIMEOUT_S:.0f}s")


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for found in (obj.get("status") or {}).get("conditions") or ():
        if found.get("type") == kind:
            return dict(found)
    return {}


async def _get(client: Client, gvr: GVR, name: str, namespace: str | None) -> Any:
    try:
        return await client.get(gvr, name, namespace=namespace)
    except NotFound:
        return None


async def setup(client: Client) -> None:
    """The namespace, the Graphs' ServiceAccount (allowed every widget group), kro's own."""
    for namespace in (NAMESPACE, CONTROLLER_NAMESPACE):
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    with contextlib.suppress(AlreadyExists):
        await client.create(SERVICE_ACCOUNTS, {"metadata": {"name": "bench"}}, namespace=NAMESPACE)
    rules = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    with contextlib.suppress(AlreadyExists):
        await client.create(CLUSTER_ROLES, {"metadata": {"name": "bench-deferred"}, "rules": rules})
    subject = {"kind": "ServiceAccount", "name": "bench", "namespace": NAMESPACE}
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-deferred"}
    with contextlib.suppress(AlreadyExists):
        await client.create(
            CLUSTER_ROLE_BINDINGS,
            {"metadata": {"name": "bench-deferred"}, "roleRef": ref, "subjects": [subject]},
        )


async def owners(client: Client, round_: int, group: str) -> tuple[GVR, str]:
    """A Graph and an RGD instance, each with a node of the kind Widget of `group`."""
    node = {"id": "widget", "optional": True, "template": widget(group, f"graph-{round_}")}
    await client.create(
        GRAPHS,
        {
            "apiVersion": "kro.run/v1alpha1",
            "kind": "Graph",
            "metadata": {"name": f"waits-{round_}"},
            "spec": {"serviceAccountName": "bench", "nodes": [node]},
        },
        namespace=NAMESPACE,
    )
    kind = f"Waiter{round_}"
    rgd = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": f"waiter-{round_}"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": kind, "group": "bench.kro.run"},
            "resources": [
                {
                    "id": "widget",
                    "optional": True,
                    "template": widget(group, "${schema.metadata.name}"),
                }
            ],
        },
    }
    await client.create(RGDS, rgd)
    plural = kind.lower() + "s"
    instances = GVR("bench.kro.run", "v1alpha1", plural)

    seen: dict[str, Any] = {}

    async def served() -> bool | None:
        rgd_live = await client.get(RGDS, f"waiter-{round_}")
        seen.update(rgd_live.get("status") or {})
        return True if seen.get("state") == "Active" else None

    try:
        await until(served, f"RGD waiter-{round_} Active")
    except TimeoutError as error:
        raise TimeoutError(f"{error}; status: {seen.get('conditions')}") from None
    client.mapper.invalidate()
    body = {
        "apiVersion": "bench.kro.run/v1alpha1",
        "kind": kind,
        "metadata": {"name": f"rgd-{round_}"},
        "spec": {},
    }
    await client.create(instances, body, namespace=NAMESPACE)
    return instances, f"rgd-{round_}"


async def one_round(
    client: Client, round_: int, hold_s: float, groups: list[str]
) -> dict[str, float]:
    group = f"r{round_}-{int(time.time())}.deferred.bench.example.com"
    groups.append(group)
    instances, instance = await owners(client, round_, group)

    async def graph_pending() -> bool | None:
        live = await client.get(GRAPHS, f"waits-{round_}", namespace=NAMESPACE)
        reason = _condition(live, "ResourcesConverged").get("reason")
        return True if reason == "SchemaPending" else None

    async def instance_pending() -> bool | None:
        live = await client.get(instances, instance, namespace=NAMESPACE)
        reason = _condition(live, "ResourcesReady").get("reason")
        return True if reason == "SchemaPending" else None

    await until(graph_pending, "Graph SchemaPending")
    await until(instance_pending, "instance SchemaPending")
    await asyncio.sleep(hold_s)
    await client.create(CRDS, widget_crd(group))

    async def established() -> float | None:
        crd = await client.get(CRDS, f"widgets.{group}")
        return time.monotonic() if _condition(crd, "Established").get("status") == "True" else None

    at = await until(established, "CRD Established")
    widgets = GVR(group, "v1", "widgets")
    client.mapper.invalidate()

    async def applied(name: str) -> float | None:
        found = await _get(client, widgets, name, NAMESPACE)
        return time.monotonic() if found is not None else None

    graph_at, rgd_at = await asyncio.gather(
        until(lambda: applied(f"graph-{round_}"), "the Graph's widget"),
        until(lambda: applied(instance), "the instance's widget"),
    )
    return {"graph_s": graph_at - at, "rgd_s": rgd_at - at}


async def cleanup(client: Client, rounds: int, groups: list[str]) -> None:
    """What the rounds created, with the controller still running to tear it down."""
    for round_ in range(rounds):
        instances = GVR("bench.kro.run", "v1alpha1", f"waiter{round_}s")
        with contextlib.suppress(NotFound):
            await client.delete(instances, f"rgd-{round_}", namespace=NAMESPACE)
        with contextlib.suppress(NotFound):
            await client.delete(GRAPHS, f"waits-{round_}", namespace=NAMESPACE)
    for round_ in range(rounds):
        instances = GVR("bench.kro.run", "v1alpha1", f"waiter{round_}s")

        async def gone(gvr: GVR = instances, name: str = f"rgd-{round_}") -> bool | None:
            return True if await _get(client, gvr, name, NAMESPACE) is None else None

        await until(gone, f"instance rgd-{round_} gone")
        with contextlib.suppress(NotFound):
            await client.delete(RGDS, f"waiter-{round_}")
    for group in groups:
        with contextlib.suppress(NotFound):
            await client.delete(CRDS, f"widgets.{group}")


def start_controller(kubeconfig: str, log: Path) -> subprocess.Popen[bytes]:
    health = free_port()
    argv = [
        sys.executable,
        "-m",
        "kro.cli.main",
        "controller",
        f"--kubeconfig={kubeconfig}",
        f"--metrics-bind-address=127.0.0.1:{free_port()}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        "--feature-gates=GraphKind=true,DeferredSchemaResolution=true",
        f"--controller-namespace={CONTROLLER_NAMESPACE}",
        "--controller-service-account=kro",
        "--zap-encoder=json",
    ]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=die_with_parent,  # noqa: PLW1509 (prctl only)
        )
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"kro controller exited ({process.returncode}); see {log}")
        with contextlib.suppress(urllib.error.URLError, OSError):
            url = f"http://127.0.0.1:{health}/readyz"
            with urllib.request.urlopen(url, timeout=1) as response:
                if int(response.status) == 200:
                    return process
        time.sleep(0.05)
    raise RuntimeError(f"kro controller not ready within {TIMEOUT_S:.0f}s; see {log}")


async def run(kubeconfig: str, rounds: int, hold_s: float, logs: Path) -> dict[str, Any]:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        await install_crds(client)
        await setup(client)
        process = start_controller(kubeconfig, logs / "controller.log")
        groups: list[str] = []
        try:
            samples = [await one_round(client, i, hold_s, groups) for i in range(rounds)]
            await cleanup(client, rounds, groups)
        finally:
            stop_pid(process.pid, reap=process.wait)
    out: dict[str, Any] = {"rounds": rounds, "hold_s": hold_s, "goal_s": GOAL_S}
    for key in ("graph_s", "rgd_s"):
        values = [s[key] for s in samples]
        out[key] = {
            "samples": [round(v, 3) for v in values],
            "median": round(statistics.median(values), 3),
            "max": round(max(values), 3),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hold", type=float, default=6.0, help="seconds left waiting")
    parser.add_argument("--output", default=str(RESULTS / "deferred.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-deferred-") as tmp:
        logs = Path(tmp)
        if args.kubeconfig:
            result = asyncio.run(run(args.kubeconfig, args.rounds, args.hold, logs))
        else:
            with LocalCluster(logs / "cluster", ClusterOptions(nodes=0)) as state:
                result = asyncio.run(run(str(state.kubeconfig), args.rounds, args.hold, logs))
    for key, label in (("graph_s", "Graph"), ("rgd_s", "RGD instance")):
        figures = result[key]
        verdict = "ok" if figures["max"] < GOAL_S else "over the goal"
        print(
            f"{label}: CRD Established -> deferred node applied: median {figures['median']:.3f}s,"
            f" max {figures['max']:.3f}s over {args.rounds} rounds ({verdict}: < {GOAL_S:.0f}s)"
        )
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
