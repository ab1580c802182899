"""The RGD scenarios' run: N instances of one RGD, until every one is ACTIVE and the controller
has settled, then a steady-state window with no change (every write to the RGD's objects,
seen through watches, per object and field manager; the target is 0). Around it: --fight,
--restart, --floor (floors.py), --replicas (replicas.py) and --scaling."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR
from kro.testing.cluster import ClusterOptions, LocalCluster

from .benchapp import INSTANCES, Children, new_instance, wait_rgd_active
from .floors import FLOOR_NAMES, capture_kro_shape, run_floors
from .harness import (
    SETTINGS,
    admin_client,
    control_plane_cpu,
    cpu_between,
    create_namespace,
    install_kro_crds,
    load_average,
    on_cluster,
    per_instance,
    requests_by_verb,
    write_result,
)
from .process import Controller
from .replicas import report_replicas, run_replicas

WATCHED = (
    INSTANCES,
    GVR("", "v1", "configmaps"),
    GVR("apps", "v1", "deployments"),
    GVR("", "v1", "services"),
)
"""What the steady-state window watches for writes: the instances and every kind of child the
RGD scenarios make."""


@dataclass(frozen=True)
class RgdScenario:
    """A scenario that is one RGD of BenchApp instances (scenario.Scenario): its RGD, the
    children kro makes per instance (for the floors), and, if it has one, the variant of its
    RGD that fights kube-controller-manager over a field (--fight)."""

    name: str
    rgd: Callable[[], dict[str, Any]]
    children: Children
    fighting_rgd: Callable[[], dict[str, Any]] | None = None

    @property
    def options(self) -> frozenset[str]:
        taken = {"floor", "restart", "scaling", "replicas"}
        return frozenset(taken | {"fight"} if self.fighting_rgd else taken)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The RGD scenarios' flags are the command line's own (cli.py)."""

    def check(self, args: argparse.Namespace) -> str | None:
        if args.replicas and (args.fight or args.floor or args.restart or args.scaling):
            return "--replicas runs alone: not with --fight, --floor, --restart or --scaling"
        return None

    def run(self, args: argparse.Namespace) -> None:
        if args.scaling:
            scaling(self, args.scaling)
            return
        on_cluster(lambda kubeconfig: self._main(args, kubeconfig), pin=args.pin)

    async def _main(self, args: argparse.Namespace, kubeconfig: str) -> None:
        if args.replicas:
            print(
                f"== {self.name}: {args.instances} instances in {args.namespaces} namespaces, "
                f"{args.replicas} sharded replica(s), {args.workers} workers each"
            )
            report_replicas(
                await run_replicas(
                    kubeconfig,
                    args.instances,
                    args.workers,
                    args.replicas,
                    namespaces=args.namespaces,
                    scenario=self.name,
                    rgd=self.rgd(),
                )
            )
            return
        print(f"== {self.name}: {args.instances} instances, {args.workers} workers")
        report(
            await run_once(
                kubeconfig,
                self,
                args.instances,
                args.workers,
                args.steady_seconds,
                fight=args.fight,
                floor=args.floor,
                floor_order=args.floor_order,
                restart=args.restart,
                profile=args.profile,
            )
        )


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
                self.control_plane_cpu_at_all_active = control_plane_cpu()
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


async def run_restart(
    kubeconfig: str, workers: int, instances: int, old: Controller
) -> dict[str, Any]:
    """Stop the converged controller, start another; measure until its requests stop."""
    old.stop()
    started = time.monotonic()
    controller = Controller.start(kubeconfig, workers)
    try:
        await controller.wait_up(0.1)
        up_s = time.monotonic() - started
        settled_s = up_s + await controller.quiet(quiet_s=5.0, limit_s=300.0)
        by_method = controller.requests_by_method()
        cpu, peak = controller.usage()
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
        controller.stop()


async def run_once(
    kubeconfig: str,
    scenario: RgdScenario,
    instances: int,
    workers: int,
    steady_s: float,
    *,
    fight: bool = False,
    floor: bool = False,
    floor_order: Sequence[str] = tuple(FLOOR_NAMES),
    restart: bool = False,
    profile: str | None = None,
) -> dict[str, Any]:
    load = load_average()
    client = await admin_client(kubeconfig)
    namespace = f"bench-{int(time.time())}"
    rgd = scenario.fighting_rgd() if fight and scenario.fighting_rgd else scenario.rgd()
    try:
        await install_kro_crds(client)
        await create_namespace(client, namespace)
        controller = Controller.start(kubeconfig, workers, profile=profile)
        try:
            startup = await controller.startup_usage()
            await client.apply(RGDS, rgd, field_manager="bench", force=True)
            await wait_rgd_active(client)
            await client.mapper.refresh()
            by_verb_before = await requests_by_verb(client)
            before = sum(by_verb_before.values())
            controller_before = controller.requests()
            cpu_before, _ = controller.usage()
            plane_before = control_plane_cpu()
            started = time.monotonic()
            names = [f"app-{i:05d}" for i in range(instances)]
            created = await _create(client, namespace, names)
            progress = await _wait_active(client, namespace, instances, timeout_s=1800)
            active = progress.active
            all_active_s = max(active.values()) - started if len(active) == instances else None
            # Settled: the controller's requests have stopped (the passes after ACTIVE, such as
            # the follow-up of a pass that created children, are done).
            quiet_from = time.monotonic()
            all_settled_s = quiet_from + await controller.quiet(3.0, 300.0) - started
            by_verb_after = await requests_by_verb(client)
            after = sum(by_verb_after.values())
            controller_after = controller.requests()
            cpu_after, peak = controller.usage()
            plane_active = cpu_between(plane_before, progress.control_plane_cpu_at_all_active)
            plane_settled = cpu_between(plane_before, control_plane_cpu())
            latencies = sorted(active[n] - created[n] for n in active)
            profile_report = await controller.profile_report()
            detection_s = (
                await _wait_fights_detected(client, namespace, instances) if fight else None
            )
            steady_before = controller.requests()
            writes = await _count_writes(client, namespace, steady_s)
            steady_requests = controller.requests() - steady_before
            total_writes = sum(n for per in writes.values() for n in per.values())
            extra: dict[str, Any] = {}
            if restart:
                extra.update(await run_restart(kubeconfig, workers, instances, controller))
            if floor:
                controller.stop()
                extra.update(
                    await run_floors(
                        client,
                        scenario.children,
                        instances,
                        workers,
                        all_active_s=all_active_s or 0.0,
                        shape=await capture_kro_shape(client, scenario.children, namespace),
                        order=floor_order,
                    )
                )
            return {
                "scenario": scenario.name,
                "load_average_at_start": load,
                "instances": instances,
                "workers": workers,
                "client_qps": SETTINGS.client_qps,
                "skip_unchanged": SETTINGS.skip_unchanged,
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
                "api_requests_per_instance_by_verb": per_instance(
                    by_verb_before, by_verb_after, instances
                ),
                "controller_requests_per_instance": (controller_after - controller_before)
                / instances,
                "controller_cpu_s": cpu_after - cpu_before,
                "controller_peak_rss_mib": peak / 2**20,
                "pinned": SETTINGS.pinned,
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
            controller.stop()
    finally:
        await client.close()


def report(result: dict[str, Any]) -> None:
    for key, value in result.items():
        if key == "profile_report":
            print(value)
            continue
        if key == "steady_state_writes_by_object":
            for obj, per in sorted(value.items()):
                print(f"    {obj:40} {per}")
            continue
        print(f"  {key:28} {value:.3f}" if isinstance(value, float) else f"  {key:28} {value}")
    suffix = "-fight" if result.get("fight") else ""
    suffix += f"-profile-{result['profile']}" if result.get("profile") else ""
    suffix += "-scaling" if result.get("scaling") else ""
    suffix += "-pinned" if result.get("pinned") else ""
    suffix += "-noskip" if result.get("skip_unchanged") is False else ""
    scenario = result.get("scenario", "three")
    write_result(
        f"controller-{scenario}-{result['instances']}-w{result['workers']}{suffix}.json", result
    )


def scaling(scenario: RgdScenario, instances: int) -> None:
    """Throughput per worker count, each on a fresh cluster so runs do not see each other.
    Results go to controller-<scenario>-<N>-w<W>-scaling.json."""
    rows = []
    for workers in (1, 2, 4, 8, 16, 32):
        print(f"== {scenario.name}: {instances} instances, {workers} workers")
        with LocalCluster(options=ClusterOptions(nodes=1)) as state:
            result = asyncio.run(
                run_once(str(state.bearer_kubeconfig()), scenario, instances, workers, 0)
            )
        result["scaling"] = True
        report(result)
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
