"""Drift in a member cluster is repaired by a watch there, as in the hub (M-14).

The module's controller requeues progressing instances only every 30 s, so a repair within
10 s of the edit can only come from a watch on the member's object bringing the instance back.
"""

from __future__ import annotations

from typing import Any

from fleet_support import fleet_args, fleet_fixture
from kro_harness import KroEnv, kro_fixtures

from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.gvk import GVR
from kro.testing.fleet import Fleet
from kro.testing.waiting import eventually

ARGS = fleet_args(extra=("--instance-requeue-interval=30s",))
controller, kro = kro_fixtures(ARGS)
CONFIGMAPS = GVR("", "v1", "configmaps")
REPAIR_S = 10.0
TIMEOUT_S = 90.0


fleet = fleet_fixture()


def _configmap() -> dict[str, Any]:
    return {
        "id": "settings",
        "target": {"cluster": {"kubeconfigSecretName": "member-1"}},
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.spec.name}", "namespace": "default"},
            "data": {"greeting": "hello from the hub"},
        },
    }


async def test_an_edit_in_the_member_brings_the_instance_back(fleet: Fleet, kro: KroEnv) -> None:
    await kro.apply_rgd(kro.rgd("drifting", "Drifting", {"name": "string"}, [_configmap()]))
    await kro.wait_rgd_active(kro.rgd_name("drifting"))
    name = f"drift-{kro.suffix}"
    gvr = await kro.gvr_of("Drifting")
    await kro.apply_instance("Drifting", "one", {"name": name})
    await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)
    config = await load_default(str(fleet.member("member-1").kubeconfig_path))
    async with Client.from_config(config) as member:
        patch = {"data": {"greeting": "changed in the member"}}
        await member.patch(CONFIGMAPS, name, patch, namespace="default", patch_type="merge")

        async def repaired() -> bool:
            found = await member.get(CONFIGMAPS, name, namespace="default")
            return bool(found["data"]["greeting"] == "hello from the hub")

        await eventually(repaired, what="kro's field back in member-1", timeout_s=REPAIR_S)
    await kro.client.delete(gvr, "one", namespace=kro.namespace)
    await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
