"""kro.testing.runlocal: `make run` — kro on a local control plane, with an example applied.

With no KUBECONFIG: build (or reuse) the control-plane binaries, start a local cluster, install
kro's CRDs, start the controller in this process, apply examples/nginxapp (the RGD, then the
instance), wait until the instance is ACTIVE, print a tree of the instance and its children, and
keep running until Ctrl-C, then stop everything that was started. With KUBECONFIG set: run the
controller against that cluster (probes and metrics on 127.0.0.1).

It lives in kro.testing, not kro.cli, because it starts the test harness's control plane and
production code never imports the harness.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kro.api.crds import kro_crds
from kro.api.names import LABEL_INSTANCE_NAME, LABEL_NODE_ID
from kro.cli.controller import run_controller
from kro.cli.flags import parse_controller_args
from kro.controllers.crd import CRDS, wait_established
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.errors import AlreadyExists, KubeError, NotFound
from kro.runtime.gvk import GVK, GVR
from kro.testing.cluster import ClusterOptions, LocalCluster

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nginxapp"
FIELD_MANAGER = "kro-run-local"
NAMESPACES = GVR("", "v1", "namespaces")


def _say(message: str) -> None:
    print(f"==> {message}", flush=True)


def _load(path: Path) -> dict[str, Any]:
    return next(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))


async def _poll(what: str, probe: Any, timeout_s: float) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        with contextlib.suppress(NotFound):
            value = await probe()
            if value:
                return value
        await asyncio.sleep(0.5)
    raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}")


async def install_crds(client: Client) -> None:
    for crd in kro_crds():
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)
        await wait_established(client, crd["metadata"]["name"])


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


async def _session(kubeconfig: str, example: Path) -> int:
    config = parse_controller_args(
        [
            f"--kubeconfig={kubeconfig}",
            "--metrics-bind-address=127.0.0.1:8078",
            "--health-probe-bind-address=127.0.0.1:8079",
            "--graceful-shutdown-timeout=10s",
        ]
    )
    client = await Client.from_kubeconfig(kubeconfig)
    try:
        await install_crds(client)
        controller = asyncio.create_task(run_controller(config), name="kro-controller")
        try:
            await apply_example(client, example)
        except (TimeoutError, KubeError) as error:
            _say(f"example did not converge: {error}")
        _say("kro is running (metrics http://127.0.0.1:8078/metrics); press Ctrl-C to stop")
        return await controller
    finally:
        await client.close()


def run_local(example: str | None = None) -> int:
    directory = Path(example) if example else EXAMPLE
    kubeconfig = os.environ.get("KUBECONFIG")
    if kubeconfig:
        _say(f"KUBECONFIG is set: running the controller against {kubeconfig}")
        config = parse_controller_args(
            [
                "--metrics-bind-address=127.0.0.1:8078",
                "--health-probe-bind-address=127.0.0.1:8079",
            ]
        )
        with contextlib.suppress(KeyboardInterrupt):
            return asyncio.run(run_controller(config))
        return 0
    _say("no KUBECONFIG: starting a local control plane (the first run builds it from Go modules)")
    with LocalCluster(options=ClusterOptions(nodes=1)) as state:
        _say(f"cluster ready; to use it from another shell: export KUBECONFIG={state.kubeconfig}")
        with contextlib.suppress(KeyboardInterrupt):
            return asyncio.run(_session(state.kubeconfig, directory))
    _say("stopped the controller and the local control plane")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kro.testing.runlocal", description=__doc__)
    parser.add_argument("--example", default=None, help="directory with rgd.yaml, instance.yaml")
    args = parser.parse_args(argv)
    return run_local(args.example)


if __name__ == "__main__":
    sys.exit(main())
