"""M-07: `kro explain` on a real hub and members (kro.testing's fleet, MultiCluster gate on).

An RGD sends one of its two ConfigMaps to member-1 by a literal target; once the instance is
ACTIVE, `kro explain` (the command's own code, run in this process, as an admin of the hub
who may read the registry Secrets in kro-system) reads that ConfigMap in member-1 through the
member's registry Secret, names member-1 for that node and the hub (`local`) for the other,
reports both ready, and finds nothing to write: the dry run judges the member's object exactly
as the controller applied it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from fleet_support import fleet_args, fleet_fixture
from kro_harness import KroEnv, kro_fixtures

from kro.cli.explain import add_explain_command, explain, parse_request
from kro.cli.explain_format import SecretMask, render
from kro.runtime.client import Client
from kro.runtime.config import load_default
from kro.runtime.gvk import GVR
from kro.testing.fleet import Fleet
from kro.testing.waiting import eventually

ARGS = fleet_args()
controller, kro = kro_fixtures(ARGS)
TIMEOUT_S = 60.0
CONFIGMAPS = GVR("", "v1", "configmaps")


fleet = fleet_fixture()


async def run_explain(kro: KroEnv, *argv: str, output: str = "json") -> str:
    """`kro explain ARGV --kubeconfig <hub admin> -o OUTPUT`, in this process: its stdout."""
    assert kro.controller is not None
    parser = argparse.ArgumentParser(prog="kro")
    add_explain_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        ["explain", *argv, f"--kubeconfig={kro.controller.kubeconfig}", "-o", output]
    )
    mask = SecretMask()
    report = await explain(parse_request(args.target, args.name), args, mask)
    text = render(report, output, mask)
    print(f"$ kro explain {' '.join(argv)}\n{text}")
    return text


def _configmap(node_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.spec.name}-" + node_id},
            "data": {"greeting": "hello"},
        },
        **extra,
    }


async def test_explain_names_the_member_of_a_targeted_node(fleet: Fleet, kro: KroEnv) -> None:
    remote = _configmap("remote", readyWhen=["${remote.data.greeting == 'hello'}"])
    remote["template"]["metadata"]["namespace"] = "default"  # a namespace member-1 has
    remote["target"] = {"cluster": {"kubeconfigSecretName": "member-1"}}
    rgd = kro.rgd("explained", "Explained", {"name": "string"}, [_configmap("here"), remote])
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(kro.rgd_name("explained"))
    await kro.apply_instance("Explained", "one", {"name": f"ex-{kro.suffix}"})
    gvr = await kro.gvr_of("Explained")
    await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)

    target = f"{gvr.resource}.{gvr.group}/one"
    data = json.loads(await run_explain(kro, target, "-n", kro.namespace))
    nodes = {n["id"]: n for n in data["nodes"]}
    assert nodes["remote"]["clusters"] == ["member-1"]
    assert nodes["remote"]["status"] == "ready"
    assert nodes["remote"]["objects"][0]["namespace"] == "default"
    assert nodes["here"]["clusters"] == ["local"]
    assert nodes["here"]["status"] == "applied"
    assert data["wouldWrite"] == []
    assert data["rootCause"].startswith("no problem found")

    text = await run_explain(kro, target, "-n", kro.namespace, output="text")
    remote_row = next(line.split() for line in text.splitlines() if "remote" in line.split()[:1])
    assert remote_row[4:6] == ["member-1", "ready"]


async def test_explain_of_a_deletion_held_in_a_member_names_the_member(
    fleet: Fleet, kro: KroEnv
) -> None:
    """M-16 and M-07: a deleting instance is explained from the teardown's own plan, in its
    member clusters as on the hub: a child in member-1 held by someone else's finalizer is
    named with its cluster, as what blocks the deletion."""
    remote = _configmap("remote")
    remote["template"]["metadata"]["namespace"] = "default"
    remote["target"] = {"cluster": {"kubeconfigSecretName": "member-1"}}
    await kro.apply_rgd(kro.rgd("held", "Held", {"name": "string"}, [remote]))
    await kro.wait_rgd_active(kro.rgd_name("held"))
    name = f"held-{kro.suffix}"
    await kro.apply_instance("Held", "one", {"name": name})
    gvr = await kro.gvr_of("Held")
    await kro.wait_instance(gvr, "one", timeout_s=TIMEOUT_S)
    config = await load_default(str(fleet.member("member-1").kubeconfig_path))
    child = f"{name}-remote"
    async with Client.from_config(config) as member:
        hold = {"metadata": {"finalizers": ["example.com/hold"]}}
        await member.patch(CONFIGMAPS, child, hold, namespace="default")
        try:
            await kro.client.delete(gvr, "one", namespace=kro.namespace)

            async def terminating() -> bool:
                found = await member.get(CONFIGMAPS, child, namespace="default")
                return bool(found["metadata"].get("deletionTimestamp"))

            await eventually(terminating, what="the member's child deleted", timeout_s=TIMEOUT_S)
            target = f"{gvr.resource}.{gvr.group}/one"
            data = json.loads(await run_explain(kro, target, "-n", kro.namespace))
            blockers = data["deletion"]["blockers"]
            assert any(
                f'ConfigMap default/{child} (node "remote") in cluster "member-1" is terminating '
                "but held by finalizer(s) example.com/hold" in b
                for b in blockers
            ), blockers
            assert data["rootCause"].startswith("deletion is blocked")
        finally:
            await member.patch(
                CONFIGMAPS, child, {"metadata": {"finalizers": []}}, namespace="default"
            )
    await kro.wait_gone(gvr, "one", timeout_s=TIMEOUT_S)
