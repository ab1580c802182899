"""--scenario spokes: hub and spokes (issue 35) against one cluster, back to back in one run.

The hub is the run's cluster ($KUBECONFIG, or a local control plane without nodes: nothing
here needs a Pod); `--members` member control planes (kro.testing.fleet, no nodes) start next
to it, reached with their bearer token as the hub is (`--member-credentials`, see
spokes_members.py). The RGD makes per instance a ConfigMap, a ClusterIP Service whose
annotation reads the ConfigMap, and a second ConfigMap holding the Service's allocated
clusterIP: a chain of three, every one ready without a Pod. Two phases, each with a `kro
controller` of its own:

1. **Fleet**: the controller runs with `--feature-gates=MultiCluster=true --enable-multicluster
   --cluster-secrets-namespace=kro-system` before any member is registered. The RGD goes on
   the hub; once it is Active and the controller quiet, its RSS is read (no member). Then the
   members' registry Secrets are created; once the RGD's `status.clusters[]` says the kind is
   served in every member, the CRD is Established there and the controller is quiet, its RSS
   is read again (members registered, spokes idle). Then `--instances-per-member` instances
   are created in each member's namespace, all members at once, and followed there until
   ACTIVE.
2. **One cluster** (unless `--no-baseline`): the fleet controller is stopped and one without
   the gate started; the same RGD (already on the hub) serves the same number of instances in
   all (members x per member), created in one hub namespace and followed there.

Both phases create through one semaphore of 32 in flight (as the RGD scenarios do), so the
bench's own concurrency is the same. Per phase: time from the first create to every instance
ACTIVE, p50/p99 create-to-ACTIVE, the controller's requests per instance until it has been
quiet 3 s (its `rest_client_requests_total`, which counts every request it sends, hub and
members alike: kro.fleet.metrics feeds each member request into it as well as into
`kro_cluster_requests_total{cluster}`, so the members' share is read from the latter and the
hub's is the difference, never a sum of both), its CPU, its peak RSS (VmHWM), and then the
requests during `--steady-seconds` of quiet (default 60; the goal is 0), when in the window
they came, and every API server's own count for the phase and the window by verb and resource
to say what they were.

RSS growth per member is given two ways: idle (RSS with the members registered and their
spokes serving the kind, minus RSS before any member, divided by the members) and at size
(the fleet phase's peak RSS minus the one-cluster phase's, divided by the members: the same
instances and children either way, so the difference is what spreading them costs).
Results go to bench/results/controller-spokes-<members>x<N>-w<W>[...].json (result_name).

    python bench/bench_controller.py --scenario spokes --instances-per-member 300
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kro.controllers.crd import wait_established
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client

from ..benchapp import INSTANCES, RGD_NAME, benchapp_rgd, wait_rgd_active
from ..harness import (
    SETTINGS,
    Settings,
    admin_client,
    cpu_between,
    create_namespace,
    install_kro_crds,
    load_average,
    on_cluster,
    rss,
    write_result,
)
from ..process import Controller
from .spokes_measure import (
    HUB,
    Planes,
    Requests,
    Seen,
    Target,
    apiserver_diff,
    apiserver_requests,
    create_instances,
    follow_active,
    machine_busy,
    own_cpu,
)
from .spokes_members import CREDENTIALS, SECRETS_NAMESPACE, Members, close_all
from .spokes_table import compare, print_table

MULTICLUSTER = (
    "--feature-gates=MultiCluster=true",
    "--enable-multicluster",
    f"--cluster-secrets-namespace={SECRETS_NAMESPACE}",
)
"""The fleet phase's controller flags (the registry Secrets go to kro-system)."""
CRD_NAME = f"{INSTANCES.resource}.{INSTANCES.group}"
QUIET_S = 3.0
"""How long the controller must send nothing to count as settled (rgd.py's figure)."""
TIMEOUT_S = 1800.0


def spokes_rgd() -> dict[str, Any]:
    """ConfigMap -> ClusterIP Service -> ConfigMap with the Service's clusterIP: three objects,
    a chain of three waves, none waiting for a Pod."""
    return benchapp_rgd(
        {"address": "${service.spec.clusterIP}"},
        [
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
                "id": "service",
                "template": {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {
                        "name": "${schema.metadata.name}",
                        "annotations": {"config": "${config.metadata.name}"},
                    },
                    "spec": {
                        "type": "ClusterIP",
                        "selector": {"app": "${schema.metadata.name}"},
                        "ports": [{"port": 80}],
                    },
                },
            },
            {
                "id": "address",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-address"},
                    "data": {"clusterIP": "${service.spec.clusterIP}"},
                },
            },
        ],
    )


# -- one phase ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """What a phase measures with: its controller, the bench's client of every cluster (for the
    API servers' own counts), the hub's host (to tell its requests apart), the planes."""

    controller: Controller
    clients: Mapping[str, Client]
    hub_host: str
    planes: Planes


def _per(values: Mapping[str, float], n: int) -> dict[str, float]:
    return {k: round(v / n, 2) for k, v in sorted(values.items(), key=lambda kv: -kv[1])}


async def run_instances(
    phase: Phase, targets: Sequence[Target], quiet_window_s: float
) -> dict[str, Any]:
    """Create every target's instances, follow them to ACTIVE, wait until the controller is
    quiet, then count its requests over a quiet window."""
    controller = phase.controller
    total = sum(len(t.names) for t in targets)
    seen = Seen()
    servers_before = await apiserver_requests(phase.clients)
    before = Requests.scrape(controller.port)
    cpu_before, _ = controller.usage()
    hub_before, members_before = phase.planes.hub_cpu(), phase.planes.members_cpu()
    machine_before, bench_before = machine_busy(), own_cpu()
    started = time.monotonic()
    followers = [asyncio.create_task(follow_active(t, seen)) for t in targets]
    await create_instances(targets, seen)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*followers), TIMEOUT_S)
    active_at = max(seen.active.values(), default=started)
    all_active_s = active_at - started if len(seen.active) == total else None
    settled_s = time.monotonic() + await controller.quiet(QUIET_S, 300.0) - started
    spent = Requests.scrape(controller.port).since(before)
    cpu_after, peak = controller.usage()
    hub_cpu = cpu_between(hub_before, phase.planes.hub_cpu())
    members_cpu = phase.planes.members_cpu() - members_before
    machine, bench = machine_busy() - machine_before, own_cpu() - bench_before
    ours = None if hub_cpu is None else cpu_after - cpu_before + hub_cpu + members_cpu + bench
    servers = apiserver_diff(servers_before, await apiserver_requests(phase.clients))
    latencies = sorted(seen.active[k] - seen.created[k] for k in seen.active if k in seen.created)
    converged = {
        "instances": total,
        "active": len(seen.active),
        "all_active_s": all_active_s,
        "all_settled_s": settled_s,
        "p50_create_to_active_s": statistics.median(latencies) if latencies else None,
        "p99_create_to_active_s": latencies[int(0.99 * (len(latencies) - 1))]
        if latencies
        else None,
        "controller_requests_per_instance": spent.total() / total,
        "controller_requests_per_instance_by_cluster": _per(spent.per_cluster(), total),
        "controller_requests_per_instance_by_method": {
            cluster: _per(rows, total) for cluster, rows in spent.by_method(phase.hub_host).items()
        },
        "apiserver_requests_per_instance": {
            cluster: _per(rows, total) for cluster, rows in servers.items()
        },
        "controller_cpu_s": cpu_after - cpu_before,
        "controller_peak_rss_mib": peak / 2**20,
        "controller_rss_settled_mib": rss(controller.pid) / 2**20,
        "hub_control_plane_cpu_s": hub_cpu,
        "member_control_planes_cpu_s": members_cpu,
        "bench_cpu_s": bench,
        "machine_cpu_s": machine,
        "others_cpu_s": None if ours is None else machine - ours,
    }
    return {**converged, **await quiet_window(phase, quiet_window_s)}


async def quiet_window(phase: Phase, seconds: float) -> dict[str, Any]:
    """The controller's requests over `seconds` with nothing changing (the goal is 0), by
    cluster, method and code, when in the window they were sent (its counters read every
    second: a member's probe after its last use shows as one burst), and what each API server
    served meanwhile."""
    servers_before = await apiserver_requests(phase.clients)
    before = Requests.scrape(phase.controller.port)
    started = time.monotonic()
    moments: dict[str, dict[str, float]] = {}
    last = before
    while (elapsed := time.monotonic() - started) < seconds:
        await asyncio.sleep(min(1.0, seconds - elapsed))
        now = Requests.scrape(phase.controller.port)
        if moved := {k: v for k, v in now.since(last).per_cluster().items() if v}:
            moments[f"{time.monotonic() - started:.0f}"] = moved
        last = now
    spent = last.since(before)
    servers_after = await apiserver_requests(phase.clients)
    return {
        "quiet_window_s": seconds,
        "quiet_requests": spent.total(),
        "quiet_requests_by_cluster": {k: v for k, v in spent.per_cluster().items() if v},
        "quiet_requests_by_method": spent.by_method(phase.hub_host),
        "quiet_requests_at_s": moments,
        "quiet_apiserver_requests": apiserver_diff(servers_before, servers_after),
    }


async def settle(controller: Controller) -> float:
    """The controller quiet for QUIET_S; its RSS then (MiB)."""
    await controller.quiet(QUIET_S, 300.0)
    return rss(controller.pid) / 2**20


async def members_serving(hub: Client, members: Mapping[str, Client]) -> None:
    """Until the RGD's `status.clusters[]` says every member serves the kind, and the CRD is
    Established in each (the bench's clients there then know the kind)."""
    while True:
        live = await hub.get(RGDS, RGD_NAME)
        clusters = (live.get("status") or {}).get("clusters") or []
        if {c.get("name") for c in clusters if c.get("kindReady")} >= set(members):
            break
        await asyncio.sleep(0.2)
    for client in members.values():
        await wait_established(client, CRD_NAME)
        await client.mapper.refresh()


# -- the run ------------------------------------------------------------------------------------


async def fleet_phase(
    hub: Client,
    kubeconfig: str,
    registry: Members,
    members: Mapping[str, Client],
    *,
    planes: Planes,
    args: argparse.Namespace,
    namespace: str,
) -> dict[str, Any]:
    """Phase 1 (module docstring): the gated controller, RSS before and after the members
    join, then the instances in the members."""
    controller = Controller.start(
        kubeconfig, args.workers, profile=args.profile, extra_args=MULTICLUSTER
    )
    try:
        startup = await controller.startup_usage()
        await hub.apply(RGDS, spokes_rgd(), field_manager="bench", force=True)
        await wait_rgd_active(hub)
        rss_alone = await settle(controller)
        before = Requests.scrape(controller.port)
        joined = time.monotonic()
        await asyncio.to_thread(registry.register)
        await asyncio.wait_for(members_serving(hub, members), 300.0)
        serving_s = time.monotonic() - joined
        rss_members = await settle(controller)
        join = Requests.scrape(controller.port).since(before).per_cluster()
        phase = Phase(controller, {HUB: hub, **members}, _host(hub), planes)
        targets = [
            Target(
                name,
                client,
                namespace,
                [f"{name}-{i:05d}" for i in range(args.instances_per_member)],
            )
            for name, client in members.items()
        ]
        measured = await run_instances(phase, targets, args.steady_seconds)
        report = await controller.profile_report()
        return {
            **startup,
            "rss_before_members_mib": rss_alone,
            "members_serving_s": serving_s,
            "rss_members_idle_mib": rss_members,
            "join_requests_by_cluster": join,
            **measured,
            **({"profile_report": report} if report else {}),
        }
    finally:
        controller.stop()


async def baseline_phase(
    hub: Client, kubeconfig: str, planes: Planes, args: argparse.Namespace, namespace: str
) -> dict[str, Any]:
    """Phase 2: a controller without the gate, the same RGD, every instance on the hub."""
    controller = Controller.start(kubeconfig, args.workers, profile=args.profile)
    try:
        startup = await controller.startup_usage()
        await hub.apply(RGDS, spokes_rgd(), field_manager="bench", force=True)
        await wait_rgd_active(hub)
        await hub.mapper.refresh()
        rss_idle = await settle(controller)
        total = args.instances_per_member * args.members
        target = Target(HUB, hub, namespace, [f"one-{i:05d}" for i in range(total)])
        phase = Phase(controller, {HUB: hub}, _host(hub), planes)
        measured = await run_instances(phase, [target], args.steady_seconds)
        report = await controller.profile_report()
        return {
            **startup,
            "rss_idle_mib": rss_idle,
            **measured,
            **({"profile_report": report} if report else {}),
        }
    finally:
        controller.stop()


def _host(client: Client) -> str:
    """A cluster's host:port as the controller's transport labels its requests."""
    return urlsplit(client.config.server).netloc or client.config.server


async def run_spokes(kubeconfig: str, args: argparse.Namespace) -> dict[str, Any]:
    """Start the members, then the fleet phase and (unless --no-baseline) the one-cluster
    phase; stop the members and leave the hub's registry as found."""
    load = load_average()
    hub = await admin_client(kubeconfig)
    registry = await asyncio.to_thread(
        Members.start, kubeconfig, args.members, args.member_credentials
    )
    members: dict[str, Client] = {}
    try:
        members = await registry.clients()
        planes = Planes(registry.pids())
        namespace = f"spokes-{int(time.time())}"
        await install_kro_crds(hub)
        for client in members.values():
            await create_namespace(client, namespace)
        load_fleet = load_average()
        fleet_result = await fleet_phase(
            hub, kubeconfig, registry, members, planes=planes, args=args, namespace=namespace
        )
        one: dict[str, Any] | None = None
        if not args.no_baseline:
            await create_namespace(hub, namespace)
            load_one = load_average()
            one = {
                "load_average_at_start": load_one,
                **await baseline_phase(hub, kubeconfig, planes, args, namespace),
            }
        return {
            "scenario": "spokes",
            "load_average_at_start": load,
            "members": args.members,
            "member_credentials": args.member_credentials,
            "instances_per_member": args.instances_per_member,
            "workers": args.workers,
            "client_qps": SETTINGS.client_qps,
            "fleet": {"load_average_at_start": load_fleet, **fleet_result},
            "one_cluster": one,
            "comparison": compare(fleet_result, one, args.members),
        }
    finally:
        await close_all(members)
        await hub.close()
        await asyncio.to_thread(registry.unregister)
        await asyncio.to_thread(registry.stop)


def result_name(args: argparse.Namespace) -> str:
    """controller-spokes-<members>x<N>-w<W>[-qps<Q>][-certificate][-fleet-only].json (the qps
    only when not the default, so runs that differ in it keep their files apart)."""
    name = f"controller-spokes-{args.members}x{args.instances_per_member}-w{args.workers}"
    if SETTINGS.client_qps != Settings().client_qps:
        name += f"-qps{SETTINGS.client_qps:g}"
    if args.member_credentials != "token":
        name += f"-{args.member_credentials}"
    if args.no_baseline:
        name += "-fleet-only"
    return name + ".json"


@dataclass(frozen=True)
class Spokes:
    """The scenario (scenario.Scenario)."""

    name: str = "spokes"
    options: frozenset[str] = frozenset()

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--instances-per-member",
            type=int,
            default=300,
            help="with --scenario spokes: instances created in each member (the one-cluster "
            "run creates members x this many on the hub); --steady-seconds is its quiet window",
        )
        parser.add_argument(
            "--members",
            type=int,
            default=2,
            help="with --scenario spokes: member control planes started next to the hub",
        )
        parser.add_argument(
            "--member-credentials",
            choices=CREDENTIALS,
            default="token",
            help="with --scenario spokes: what the members' registry Secrets carry (and the "
            "bench uses there): the member's bearer token, as the hub is reached, or a client "
            "certificate (kube-apiserver verifies it on every request)",
        )
        parser.add_argument(
            "--no-baseline",
            action="store_true",
            help="with --scenario spokes: only the hub and spokes phase, not the one-cluster run",
        )

    def check(self, args: argparse.Namespace) -> str | None:
        if args.pin:
            return "--scenario spokes does not take --pin (its members would not be pinned)"
        if args.members < 1 or args.instances_per_member < 1:
            return "--scenario spokes needs at least one member and one instance per member"
        return None

    def run(self, args: argparse.Namespace) -> None:
        async def main(kubeconfig: str) -> None:
            print(
                f"== spokes: {args.members} members x {args.instances_per_member} instances, "
                f"{args.workers} workers"
                + ("" if args.no_baseline else ", then the same on one cluster")
            )
            result = await run_spokes(kubeconfig, args)
            print_table(result)
            write_result(result_name(args), result)

        on_cluster(main, nodes=0)


SCENARIO = Spokes()
