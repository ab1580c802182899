"""tools.runlocal: `make run` — kro on a local control plane, with an example applied.

With no KUBECONFIG: build (or reuse) the control-plane binaries, start a local cluster, install
kro's CRDs, start the controller in this process, apply examples/nginxapp (the RGD, then the
instance), wait until the instance is ACTIVE, print a tree of the instance and its children, and
keep running until Ctrl-C (or SIGTERM), then stop everything that was started and remove the
temporary directory. With KUBECONFIG set: run the controller against that cluster (probes and
metrics on 127.0.0.1).

Before any of that (kro.testing.runguard): only one `make run` at a time, and the controller's
two ports must be free; otherwise it says why in one line and exits 1 at once. While it waits
(a build lock, a build, the cluster, the example), it says so at least every 10 s.

    python -m tools.runlocal [--example DIR] [--metrics-bind-address 127.0.0.1:8078]
                             [--health-probe-bind-address 127.0.0.1:8079]

It lives in the repository's tools/, not in the kro package: it reads examples/ from the
checkout, which an installed package does not have, and it starts the test harness's control
plane, which production code never imports.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kro.api.names import LABEL_INSTANCE_NAME, LABEL_NODE_ID
from kro.cli.controller import run_controller
from kro.cli.flags import ControllerConfig, parse_controller_args
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.errors import AlreadyExists, KubeError, NotFound
from kro.runtime.gvk import GVK, GVR
from kro.testing import progress, runguard
from kro.testing.cluster import ClusterOptions, LocalCluster, StartError
from kro.testing.crds import install_crds
from kro.testing.lockfile import LockFile

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "nginxapp"
FIELD_MANAGER = "kro-run-local"
DEFAULT_METRICS_ADDRESS = "127.0.0.1:8078"
DEFAULT_HEALTH_ADDRESS = "127.0.0.1:8079"
NAMESPACES = GVR("", "v1", "namespaces")


_say = runguard.say


def _load(path: Path) -> dict[str, Any]:
    return next(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))


async def _poll(what: str, probe: Any, timeout_s: float) -> Any:
    """Call `probe` until it returns something true, saying what it waits for now and then."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    ticker = progress.Ticker(clock=loop.time)
    while loop.time() < deadline:
        with contextlib.suppress(NotFound):
            value = await probe()
            if value:
                return value
        if ticker.due():
            _say(f"still waiting for {what}: {progress.format_duration(ticker.elapsed_s())}")
        await asyncio.sleep(0.5)
    raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}")


async def apply_example(client: Client, example: Path) -> None:
    """Apply the RGD, wait until it is Active, apply the instance, wait until it is ACTIVE."""
    rgd = _load(example / "rgd.yaml")
    instance = _load(example / "instance.yaml")
    rgd_name = rgd["metadata"]["name"]
    _say(f"applying ResourceGraphDefinition {rgd_name}")
    await client.apply(RGDS, rgd, field_manager=FIELD_MANAGER, force=True)

    async def rgd_active() -> Any:
        live = await client.get(RGDS, rgd_name)
        return (live.get("status") or {}).get("state") == "Active" and live

    live_rgd = await _poll(f"RGD {rgd_name} to become Active", rgd_active, 180)
    gvk = GVK.from_object(instance)
    info = await client.mapper.resource_for(gvk)
    namespace = (instance.get("metadata") or {}).get("namespace")
    if namespace:
        with contextlib.suppress(AlreadyExists):
            await client.create(
                NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            )
    name = instance["metadata"]["name"]
    _say(f"applying {gvk.kind} {namespace}/{name}")
    await client.apply(
        info.gvr, instance, field_manager=FIELD_MANAGER, force=True, namespace=namespace
    )

    async def instance_active() -> Any:
        live = await client.get(info.gvr, name, namespace=namespace)
        return (live.get("status") or {}).get("state") == "ACTIVE" and live

    live_instance = await _poll(f"{gvk.kind} {name} to become ACTIVE", instance_active, 300)
    print(await describe_tree(client, live_rgd, live_instance), flush=True)


async def describe_tree(client: Client, rgd: Mapping[str, Any], instance: Mapping[str, Any]) -> str:
    """The instance, its conditions, and each child with its readiness."""
    meta = instance.get("metadata") or {}
    status = instance.get("status") or {}
    lines = [
        f"{instance['kind']}/{meta.get('name')} (namespace {meta.get('namespace')}) "
        f"state={status.get('state')}"
    ]
    for condition in status.get("conditions") or []:
        lines.append(
            f"│   condition {condition.get('type')}={condition.get('status')} "
            f"{condition.get('reason', '')}"
        )
    projected = {k: v for k, v in status.items() if k not in ("state", "conditions")}
    if projected:
        lines.append(f"│   status {projected}")
    resources = (rgd.get("spec") or {}).get("resources") or []
    for index, resource in enumerate(resources):
        template = resource.get("template") or {}
        branch = "└──" if index == len(resources) - 1 else "├──"
        if not template:
            lines.append(f"{branch} {resource['id']}: external reference")
            continue
        info = await client.mapper.resource_for(GVK.from_object(template))
        selector = f"{LABEL_INSTANCE_NAME}={meta.get('name')},{LABEL_NODE_ID}={resource['id']}"
        items, _ = await client.list_all(info.gvr, label_selector=selector)
        if not items:
            lines.append(
                f"{branch} {resource['id']}: {template.get('kind')} (not created: "
                "excluded or waiting)"
            )
        for item in items:
            lines.append(
                f"{branch} {resource['id']}: {item['kind']}/"
                f"{item['metadata']['name']} {_readiness(item)}"
            )
    return "\n".join(lines)


def _readiness(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    if obj.get("kind") == "Deployment":
        return (
            f"ready {status.get('availableReplicas', 0)}/"
            f"{(obj.get('spec') or {}).get('replicas')} available"
        )
    if obj.get("kind") == "Service":
        return f"clusterIP {(obj.get('spec') or {}).get('clusterIP')}"
    return "exists"


def default_state_dir() -> Path:
    """Where the one-`make run`-at-a-time lock lives: $KRO_RUN_STATE_DIR or ~/.cache/kro-run."""
    override = os.environ.get("KRO_RUN_STATE_DIR")
    return Path(override) if override else Path.home() / ".cache" / "kro-run"


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What `make run` runs, and where.

    example: a directory with rgd.yaml and instance.yaml (default examples/nginxapp).
    metrics_bind_address, health_probe_bind_address: the controller's fixed ports, checked
        before anything is built or started.
    state_dir: where the lock that allows one `make run` at a time lives
        ($KRO_RUN_STATE_DIR, else ~/.cache/kro-run).
    """

    example: Path = EXAMPLE
    metrics_bind_address: str = DEFAULT_METRICS_ADDRESS
    health_probe_bind_address: str = DEFAULT_HEALTH_ADDRESS
    state_dir: Path = field(default_factory=default_state_dir)

    def ports(self) -> list[tuple[str, str]]:
        """(flag, address) of every port the controller will bind."""
        return [
            ("--metrics-bind-address", self.metrics_bind_address),
            ("--health-probe-bind-address", self.health_probe_bind_address),
        ]

    def controller_args(self) -> list[str]:
        return [f"{flag}={address}" for flag, address in self.ports()]


async def _session(kubeconfig: str, options: RunOptions) -> int:
    config = parse_controller_args(
        [
            f"--kubeconfig={kubeconfig}",
            *options.controller_args(),
            "--graceful-shutdown-timeout=10s",
        ]
    )
    client = await Client.from_kubeconfig(kubeconfig)
    try:
        await install_crds(client)
        controller = asyncio.create_task(run_controller(config), name="kro-controller")
        try:
            await apply_example(client, options.example)
        except (TimeoutError, KubeError) as error:
            _say(f"example did not converge: {error}")
        _say(
            f"kro is running (metrics http://{options.metrics_bind_address}/metrics); "
            "press Ctrl-C to stop"
        )
        return await controller
    finally:
        await client.close()


def _run_controller(config: ControllerConfig) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(run_controller(config))
    return 0


def _with_local_cluster(options: RunOptions, lock: LockFile) -> int:
    """Start a cluster in a temporary directory and run the session; stop the cluster and
    remove the directory on the way out, whatever the way out is (Ctrl-C, SIGTERM, an error)."""
    run_dir = Path(tempfile.mkdtemp(prefix=runguard.RUN_DIR_PREFIX))
    lock.update(run_dir=str(run_dir))
    cluster = LocalCluster(run_dir, ClusterOptions(nodes=1))
    try:
        _say(
            f"no KUBECONFIG: starting a local control plane in {run_dir} "
            "(the first run builds it from Go modules)"
        )
        try:
            state = cluster.start()
        except (StartError, RuntimeError) as error:
            runguard.fail(f"the local control plane did not start: {error}")
            return 1
        lock.update(kubeconfig=state.kubeconfig)
        _say(f"cluster ready; to use it from another shell: export KUBECONFIG={state.kubeconfig}")
        with contextlib.suppress(KeyboardInterrupt):
            return asyncio.run(_session(state.kubeconfig, options))
        return 0
    finally:
        with runguard.shielded(f"stopping the local control plane and removing {run_dir}"):
            cluster.stop()
            shutil.rmtree(run_dir, ignore_errors=True)
        _say(f"stopped the controller and the local control plane; removed {run_dir}")


def run_local(options: RunOptions | None = None) -> int:
    """`make run`: exit 1 at once if another one runs or a port is busy, else run until Ctrl-C."""
    options = options or RunOptions()
    lock = LockFile(options.state_dir / "run.lock")
    if not lock.try_acquire("make run"):
        runguard.fail(runguard.already_running(lock))
        return 1
    try:
        with runguard.interrupt_on_termination():
            runguard.remove_leftovers(lock.previous)
            busy = runguard.busy_ports(options.ports())
            for message in busy:
                runguard.fail(message)
            if busy:
                return 1
            kubeconfig = os.environ.get("KUBECONFIG")
            if kubeconfig:
                _say(f"KUBECONFIG is set: running the controller against {kubeconfig}")
                lock.update(kubeconfig=kubeconfig)
                return _run_controller(parse_controller_args(options.controller_args()))
            return _with_local_cluster(options, lock)
    except KeyboardInterrupt:
        return 0
    finally:
        lock.release()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.runlocal", description=__doc__)
    parser.add_argument(
        "--example", type=Path, default=EXAMPLE, help="directory with rgd.yaml, instance.yaml"
    )
    parser.add_argument("--metrics-bind-address", default=DEFAULT_METRICS_ADDRESS)
    parser.add_argument("--health-probe-bind-address", default=DEFAULT_HEALTH_ADDRESS)
    args = parser.parse_args(argv)
    return run_local(
        RunOptions(
            example=args.example,
            metrics_bind_address=args.metrics_bind_address,
            health_probe_bind_address=args.health_probe_bind_address,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
