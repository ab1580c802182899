"""--floor: what a plain client takes to make what kro makes, in a fresh namespace with kro
stopped: plain creates (floor 1), server-side applies and one status per instance (floor 2),
and exactly the writes upstream's controller makes for a new instance, replayed from what kro
wrote for its first instance (floor 3)."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kro.api.names import (
    ANNOTATION_APPLYSET_TOOLING,
    FIELD_MANAGER_APPLYSET,
    FIELD_MANAGER_APPLYSET_PARENT,
    FIELD_MANAGER_LABELLER,
    LABEL_RGD_ID,
    LABEL_RGD_NAME,
)
from kro.applyset import Inventory, Parent
from kro.applyset.inventory import GroupKind, render
from kro.controllers.instance.labels import instance_labels, labeller_body
from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.runtime.status import status_body

from .benchapp import INSTANCES, Children, new_instance
from .harness import control_plane_cpu, cpu_between, create_namespace

DEPLOYMENTS = GVR("apps", "v1", "deployments")

FLOOR_NAMES = {
    "create": "floor_create",
    "apply": "floor_apply_status",
    "upstream": "floor_upstream",
}
"""Result keys of the floors: floor 1 (plain creates), floor 2 (applies and one status), floor 3
(upstream's writes replayed)."""


def floor_order(text: str) -> tuple[str, ...]:
    """--floor-order: the floors named once each, comma-separated."""
    order = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [mode for mode in order if mode not in FLOOR_NAMES]
    if unknown or len(set(order)) != len(order):
        raise argparse.ArgumentTypeError(f"floors are {', '.join(FLOOR_NAMES)}, each once")
    return order


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


async def capture_kro_shape(client: Client, children: Children, namespace: str) -> KroShape:
    """Read `app-00000` and its children as kro left them."""
    name = "app-00000"
    live = await client.get(INSTANCES, name, namespace=namespace)
    meta = live["metadata"]
    found = []
    for gvr, body in children(name, namespace):
        child = await client.get(gvr, body["metadata"]["name"], namespace=namespace)
        child_meta = child["metadata"]
        found.append(
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
        children=found,
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


async def _deployments_available(client: Client, namespace: str, count: int) -> None:
    while True:
        items, _ = await client.list_all(DEPLOYMENTS, namespace=namespace)
        ready = [i for i in items if ((i.get("status") or {}).get("availableReplicas") or 0) >= 1]
        if len(ready) >= count:
            return
        await asyncio.sleep(0.5)


async def run_floor(
    client: Client,
    children: Children,
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
    await create_namespace(client, namespace)
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
        made = children(name, namespace)
        if mode == "create":
            await asyncio.gather(*(child(g, b) for g, b in made))
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
            group_kinds = {(GroupKind(g.group, b["kind"]), namespace) for g, b in made}
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
            for (_, body), kro_meta in zip(made, shape.children, strict=True):
                body["metadata"].update(_swap(kro_meta, shape, created, parent.id))
            status = _swap(shape.status, shape, created, parent.id)
        await asyncio.gather(*(child(g, b) for g, b in made))
        await write(
            client.update_status(INSTANCES, status_body(latest, status), namespace=namespace)
        )

    started = time.monotonic()
    await asyncio.gather(*(instance(n) for n in names))
    if any(gvr == DEPLOYMENTS for gvr, _ in children("app", namespace)):
        await _deployments_available(client, namespace, instances)
    return time.monotonic() - started


async def run_floors(
    client: Client,
    children: Children,
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
        plane_before = control_plane_cpu()
        seconds = await run_floor(client, children, instances, workers, mode=mode, shape=shape)
        out[f"{key}_s"] = seconds
        out[f"{key}_control_plane_cpu_s"] = cpu_between(plane_before, control_plane_cpu())
        out[f"ratio_to_{key}"] = all_active_s / seconds
    if "floor_create_s" in out and "floor_upstream_s" in out:
        # Whether any controller that keeps upstream's writes could reach a given ratio to
        # floor 1: floor 3 sends just those writes, with no watch and no read.
        out["floor_upstream_to_floor_create"] = out["floor_upstream_s"] / out["floor_create_s"]
    return out
