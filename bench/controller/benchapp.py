"""The kind every RGD scenario defines (BenchApp, bench.kro.run/v1alpha1): its RGD's shape, an
instance as a user creates it, and the wait until kro serves it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.gvk import GVR

GROUP = "bench.kro.run"
INSTANCES = GVR(GROUP, "v1alpha1", "benchapps")
RGD_NAME = "benchapps"

Children = Callable[[str, str], list[tuple[GVR, dict[str, Any]]]]
"""(instance name, namespace) -> the children kro makes for that instance with every spec field
at its default, rendered by hand: what the floors create, and where kro's shape is read."""


def benchapp_rgd(status: dict[str, Any], resources: list[dict[str, Any]]) -> dict[str, Any]:
    """The BenchApp RGD (spec: replicas, message; both defaulted) with these resources."""
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": RGD_NAME},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "group": GROUP,
                "kind": "BenchApp",
                "spec": {"replicas": "integer | default=1", "message": "string | default=hello"},
                "status": status,
            },
            "resources": resources,
        },
    }


def new_instance(namespace: str, name: str) -> dict[str, Any]:
    """An instance as the user creates it: every spec field left to its default."""
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "BenchApp",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {},
    }


async def wait_rgd_active(client: Client) -> None:
    while True:
        live = await client.get(RGDS, RGD_NAME)
        if (live.get("status") or {}).get("state") == "Active":
            return
        await asyncio.sleep(0.2)
