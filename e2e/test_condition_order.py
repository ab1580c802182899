"""Condition lists on instances and RGDs, read as whole lists, in upstream's order.

Upstream kro sorts `status.conditions` by lastTransitionTime with the root `Ready` last; the
other conditions are initialised in a fixed order (instances since v0.10: InstanceManaged,
GraphResolved, ResourcesReady, WatchesHealthy; RGDs: GraphRevisionsResolved, GraphAccepted,
KindReady, ControllerReady) and
times have a resolution of one second, so conditions that transition in the same second read
in that order. Suites written against upstream compare these lists position by position; this
module checks the rule on every state an instance and an RGD go through: creation, an update,
a failing child, deletion, and an RGD update that fails validation (every condition then
carries the new generation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kro_harness import (
    CONFIGMAPS,
    KroEnv,
    condition,
    is_ready,
    kro_fixtures,
    meta,
    state,
    wait_for,
)

INSTANCE_ORDER = ("InstanceManaged", "GraphResolved", "ResourcesReady", "WatchesHealthy")
RGD_ORDER = ("GraphRevisionsResolved", "GraphAccepted", "KindReady", "ControllerReady")
HOLD = "e2e.kro.run/hold"


controller, kro = kro_fixtures()


def upstream_order(conditions: Sequence[Mapping[str, Any]], dependents: Sequence[str]) -> list[str]:
    """The types in upstream's wire order, computed from the conditions' own times."""
    others = [c for c in conditions if c["type"] != "Ready"]
    others.sort(key=lambda c: (c["lastTransitionTime"], dependents.index(c["type"])))
    return [c["type"] for c in others] + ["Ready"]


def assert_upstream_conditions(
    obj: Mapping[str, Any], dependents: Sequence[str], *, evaluated: Sequence[str] = ()
) -> None:
    """The whole list in upstream's order; the conditions evaluated by the last pass (all,
    unless `evaluated` names them) carry the object's current generation."""
    conditions = obj["status"]["conditions"]
    types = [c["type"] for c in conditions]
    assert sorted(types) == sorted([*dependents, "Ready"]), types
    assert types == upstream_order(conditions, dependents), conditions
    generation = meta(obj)["generation"]
    fresh = [c["type"] for c in conditions if c.get("observedGeneration") == generation]
    assert sorted(fresh) == sorted(evaluated or types), conditions


def configmap_rgd(kro: KroEnv, name: str, kind: str) -> dict[str, Any]:
    return kro.rgd(
        name,
        kind,
        {"value": "string", "suffix": 'string | default="copy"'},
        [
            {
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"value": "${schema.spec.value}"},
                },
            },
            {
                "id": "copy",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": "${config.metadata.name + '-' + schema.spec.suffix}"
                    },
                    "data": {"from": "${config.metadata.name}"},
                },
            },
        ],
    )


async def test_a_new_instance_and_rgd_list_conditions_as_upstream(kro: KroEnv) -> None:
    rgd = configmap_rgd(kro, "order", "OrderProbe")
    await kro.apply_rgd(rgd)
    live_rgd = await kro.wait_rgd_active(meta(rgd)["name"])
    assert_upstream_conditions(live_rgd, RGD_ORDER)

    gvr = await kro.gvr_of("OrderProbe")
    await kro.apply_instance("OrderProbe", "fresh", {"value": "one"})
    fresh = await kro.wait_instance(gvr, "fresh")
    assert_upstream_conditions(fresh, INSTANCE_ORDER)
    times = {c["lastTransitionTime"] for c in fresh["status"]["conditions"]}
    if len(times) == 1:  # everything in one second: the order upstream's users see most
        assert [c["type"] for c in fresh["status"]["conditions"]] == [*INSTANCE_ORDER, "Ready"]

    # An update: a new generation, every condition re-stamped, order kept by the rule.
    await kro.apply_instance("OrderProbe", "fresh", {"value": "two"})
    updated = await kro.wait_instance(
        gvr, "fresh", lambda o: is_ready(o) and meta(o)["generation"] == 2, what="generation 2"
    )
    assert_upstream_conditions(updated, INSTANCE_ORDER)


async def test_a_failing_child_and_a_deletion_keep_upstreams_order(kro: KroEnv) -> None:
    rgd = configmap_rgd(kro, "fails", "FailProbe")
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await kro.gvr_of("FailProbe")

    # A name the API server refuses (422): the child fails, ResourcesReady is False.
    await kro.apply_instance("FailProbe", "broken", {"value": "x", "suffix": "Not_A_Name"})
    broken = await kro.wait_instance(
        gvr,
        "broken",
        lambda o: condition(o, "ResourcesReady").get("status") == "False",
        what="ResourcesReady False",
    )
    assert state(broken) in ("ERROR", "IN_PROGRESS")
    assert_upstream_conditions(broken, INSTANCE_ORDER)
    assert condition(broken, "Ready")["status"] == "False"

    # Deletion, held by a foreign finalizer on a child: the conditions while it waits.
    await kro.apply_instance("FailProbe", "held", {"value": "y"})
    await kro.wait_instance(gvr, "held")
    await kro.client.patch(
        CONFIGMAPS, "held-copy", {"metadata": {"finalizers": [HOLD]}}, namespace=kro.namespace
    )
    try:
        await kro.client.delete(gvr, "held", namespace=kro.namespace)
        deleting = await kro.wait_instance(
            gvr,
            "held",
            lambda o: condition(o, "ResourcesReady").get("reason")
            in ("UnderDeletion", "ResourceDeleting"),
            what="instance deleting",
        )
        # Deletion does not resolve the graph: only these are evaluated again.
        assert_upstream_conditions(
            deleting, INSTANCE_ORDER, evaluated=("ResourcesReady", "Ready")
        )
    finally:
        await kro.client.patch(
            CONFIGMAPS, "held-copy", {"metadata": {"finalizers": None}}, namespace=kro.namespace
        )
    await kro.wait_gone(gvr, "held")


async def test_an_invalid_rgd_update_stamps_every_evaluated_condition_with_its_generation(
    kro: KroEnv,
) -> None:
    rgd = configmap_rgd(kro, "invalid", "InvalidProbe")
    await kro.apply_rgd(rgd)
    name = meta(rgd)["name"]
    await kro.wait_rgd_active(name)

    broken = configmap_rgd(kro, "invalid", "InvalidProbe")
    broken["spec"]["resources"][1]["template"]["data"]["from"] = "${nowhere.metadata.name}"
    await kro.apply_rgd(broken)

    async def rejected() -> dict[str, Any] | None:
        live = await kro.get_rgd(name)
        accepted = condition(live, "GraphAccepted")
        current = accepted.get("observedGeneration") == meta(live)["generation"] == 2
        return live if current and accepted.get("status") == "False" else None

    live = await wait_for(rejected, what="GraphAccepted False at generation 2")
    conditions = {c["type"]: c for c in live["status"]["conditions"]}
    # The revision still serving is evaluated again, at the new generation.
    assert conditions["GraphRevisionsResolved"]["observedGeneration"] == 2
    assert conditions["GraphRevisionsResolved"]["status"] == "True"
    assert conditions["Ready"]["observedGeneration"] == 2
    assert conditions["Ready"]["status"] == "False"
    assert live["status"]["state"] == "Inactive"
    types = [c["type"] for c in live["status"]["conditions"]]
    assert types == upstream_order(live["status"]["conditions"], RGD_ORDER)
