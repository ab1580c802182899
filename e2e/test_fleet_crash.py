"""Ownership in a member survives the hub (M-15): `kill -9` of kro in the middle of applying a
collection into member-1, then a new kro process: every item exists exactly once, the instance
converges, and deleting it leaves nothing of kro's in the member, while an object kro did not
create, next to them, is untouched."""

from __future__ import annotations

from typing import Any

import pytest
from kro_harness import KroEnv, process_fixtures

from kro.api.names import LABEL_APPLYSET_PART_OF
from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.gvk import GVR
from kro.testing.fleet import Fleet
from kro.testing.waiting import eventually

spawn, kro = process_fixtures(
    "--feature-gates=MultiCluster=true",
    "--cluster-secrets-namespace=kro-system",
    "--apply-concurrency=1",
)
CONFIGMAPS = GVR("", "v1", "configmaps")
ITEMS = 150
TIMEOUT_S = 120.0


@pytest.fixture
def fleet(kube_fleet: Fleet) -> Fleet:
    kube_fleet.register()
    return kube_fleet


def _collection() -> dict[str, Any]:
    return {
        "id": "rows",
        "target": {"cluster": {"kubeconfigSecretName": "member-1"}},
        "forEach": [{"n": "${schema.spec.names}"}],
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.spec.prefix + '-' + n}", "namespace": "default"},
            "data": {"row": "${n}"},
        },
    }


async def test_a_hub_killed_mid_apply_leaves_no_orphan_and_no_double(
    fleet: Fleet, kro: KroEnv, spawn: Any
) -> None:
    prefix = f"crash-{kro.suffix}"
    names = [f"{i:03d}" for i in range(ITEMS)]
    config = await load_default(str(fleet.member("member-1").kubeconfig_path))
    async with Client.from_config(config) as member:
        bystander = {"metadata": {"name": f"{prefix}-bystander", "namespace": "default"}}
        await member.create(CONFIGMAPS, bystander, namespace="default")

        async def ours() -> list[dict[str, Any]]:
            items, _ = await member.list_all(CONFIGMAPS, namespace="default")
            rows = {f"{prefix}-{n}" for n in names}
            return [i for i in items if i["metadata"]["name"] in rows]

        first = spawn("first")
        spec = {"names": "[]string", "prefix": "string"}
        await kro.apply_rgd(kro.rgd("crash", "Crash", spec, [_collection()]))
        await kro.wait_rgd_active(kro.rgd_name("crash"))
        gvr = await kro.gvr_of("Crash")
        await kro.apply_instance("Crash", "one", {"names": names, "prefix": prefix})

        async def started() -> bool:
            return len(await ours()) > 0

        await eventually(started, what="the first items in member-1", timeout_s=TIMEOUT_S)
        first.pause()  # at once: what it applied so far stays exactly that
        applied = len(await ours())
        first.kill9()
        assert applied < ITEMS, "the apply was over before the kill: make it longer"
        spawn("second")
        await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)
        items = await ours()
        assert sorted(i["metadata"]["name"] for i in items) == [f"{prefix}-{n}" for n in names]
        assert all(LABEL_APPLYSET_PART_OF in i["metadata"]["labels"] for i in items)
        await kro.client.delete(gvr, "one", namespace=kro.namespace)
        await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
        assert await ours() == []
        try:
            await member.get(CONFIGMAPS, f"{prefix}-bystander", namespace="default")
        finally:
            await member.delete(CONFIGMAPS, f"{prefix}-bystander", namespace="default")
