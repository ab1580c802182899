"""--scenario configmaps: five ConfigMaps per instance, the second reading the first. No
readiness on Pods anywhere: kro's own work decides the time. `chain` builds the shape for other
counts (fifty.py)."""

from __future__ import annotations

from typing import Any

from kro.runtime.gvk import GVR

from ..benchapp import Children, benchapp_rgd
from ..rgd import RgdScenario

CONFIGMAPS = GVR("", "v1", "configmaps")


def _configmap(node_id: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "id": node_id,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.metadata.name}-" + node_id},
            "data": data,
        },
    }


def configmaps_rgd(count: int, chain: int) -> dict[str, Any]:
    """`count` ConfigMaps per instance; the first `chain` each read the one before (a wave
    per link), the others only the instance's spec."""
    resources = []
    for i in range(count):
        data = {"message": "${schema.spec.message}"}
        if 0 < i < chain:
            data["previous"] = "${cm" + str(i - 1) + ".data.message}"
        resources.append(_configmap(f"cm{i}", data))
    return benchapp_rgd({"first": "${cm0.metadata.name}"}, resources)


def configmaps_children(count: int, chain: int) -> Children:
    """What kro makes of configmaps_rgd(count, chain) for one instance, every field defaulted."""

    def children(name: str, namespace: str) -> list[tuple[GVR, dict[str, Any]]]:
        made = []
        for i in range(count):
            data = {"message": "hello"}
            if 0 < i < chain:
                data["previous"] = "hello"
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{name}-cm{i}", "namespace": namespace},
                "data": data,
            }
            made.append((CONFIGMAPS, body))
        return made

    return children


def chain(name: str, count: int, linked: int) -> RgdScenario:
    """The scenario of `count` ConfigMaps per instance, the first `linked` in a chain."""
    return RgdScenario(
        name, lambda: configmaps_rgd(count, linked), configmaps_children(count, linked)
    )


SCENARIO = chain("configmaps", 5, 2)
