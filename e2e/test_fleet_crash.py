"""Ownership in a member survives the hub (M-15): kro is killed (`kill -9`) with a collection
half applied into member-1, its record of the member written ahead; a new kro process
converges it with every item exactly once, and deleting the instance leaves nothing of kro's
in the member, while an object kro did not create, next to them, is untouched.

The half-applied state is made, not raced for: the collection's later rows go to a namespace
member-1 does not have yet, so their applies fail while the earlier rows exist; kro is killed
then, and the namespace is created before the second process starts.
"""

from __future__ import annotations

import contextlib
from typing import Any

from fleet_support import fleet_fixture
from kro_harness import KroEnv, process_fixtures

from kro.api.names import LABEL_APPLYSET_PART_OF
from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR
from kro.testing.fleet import Fleet
from kro.testing.waiting import eventually

spawn, kro = process_fixtures(
    "--feature-gates=MultiCluster=true", "--cluster-secrets-namespace=kro-system"
)
fleet = fleet_fixture()
CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")
EARLY, LATE = 60, 40
TIMEOUT_S = 120.0


def _collection() -> dict[str, Any]:
    return {
        "id": "rows",
        "target": {"cluster": {"kubeconfigSecretName": "member-1"}},
        "forEach": [{"n": "${schema.spec.names}"}],
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "${schema.spec.prefix + '-' + n}",
                "namespace": "${n.startsWith('late') ? schema.spec.late : 'default'}",
            },
            "data": {"row": "${n}"},
        },
    }


async def test_a_hub_killed_mid_apply_leaves_no_orphan_and_no_double(
    fleet: Fleet, kro: KroEnv, spawn: Any
) -> None:
    prefix, late = f"crash-{kro.suffix}", f"late-{kro.suffix}"
    names = [f"early{i:03d}" for i in range(EARLY)] + [f"late{i:03d}" for i in range(LATE)]
    rows = {f"{prefix}-{n}" for n in names}
    config = await load_default(str(fleet.member("member-1").kubeconfig_path))
    async with Client.from_config(config) as member:
        bystander = {"metadata": {"name": f"{prefix}-bystander", "namespace": "default"}}
        await member.create(CONFIGMAPS, bystander, namespace="default")

        async def ours() -> list[dict[str, Any]]:
            items, _ = await member.list_all(CONFIGMAPS)
            return [i for i in items if i["metadata"]["name"] in rows]

        first = spawn("first")
        spec = {"names": "[]string", "prefix": "string", "late": "string"}
        await kro.apply_rgd(kro.rgd("crash", "Crash", spec, [_collection()]))
        await kro.wait_rgd_active(kro.rgd_name("crash"))
        gvr = await kro.gvr_of("Crash")
        await kro.apply_instance("Crash", "one", {"names": names, "prefix": prefix, "late": late})

        async def half_applied() -> bool:
            return len(await ours()) == EARLY

        await eventually(half_applied, what="the early rows in member-1", timeout_s=TIMEOUT_S)
        first.kill9()
        await member.create(NAMESPACES, {"metadata": {"name": late}})
        try:
            spawn("second")
            await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)
            items = await ours()
            assert sorted(i["metadata"]["name"] for i in items) == sorted(rows)  # each once
            assert all(LABEL_APPLYSET_PART_OF in i["metadata"]["labels"] for i in items)
            await kro.client.delete(gvr, "one", namespace=kro.namespace)
            await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
            assert await ours() == []  # no orphan
            await member.get(CONFIGMAPS, f"{prefix}-bystander", namespace="default")
        finally:
            await member.delete(CONFIGMAPS, f"{prefix}-bystander", namespace="default")
            with contextlib.suppress(NotFound):
                await member.delete(NAMESPACES, late)
