"""`WatchesHealthy` on instances (V-14, OQ-5): the fifth built-in condition, between
ResourcesReady and Ready, which does not hold Ready back.

The first test runs the instance reconciler on the real dynamic controller over the fake API
server, whose list of ConfigMaps across namespaces (the informer's) is refused with 403 while
every namespaced call the pass makes is allowed: the pass applies and goes ACTIVE, reports
`WatchBlocked` naming `configmaps`, and reports the recovery once the list is allowed, brought
back by the informer alone.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from controllers_fakes import (
    GREETERS,
    NS,
    RESOLVER,
    RecordingWatches,
    greeter,
    greeter_graph,
    greeter_reconciler,
    greeter_rgd,
)

from kro.applyset import Applier
from kro.controllers.instance.reconciler import probably_settled, should_enqueue_update
from kro.controllers.registry import RevisionRegistry
from kro.dynamic import DynamicController, ObjectRef, WatchHealth
from kro.graph.builder import build_graph
from kro.graph.model import Graph
from kro.runtime.client import Client
from kro.runtime.reconcile import Request
from kro.runtime.workqueue import QueueEmpty
from kro.testing.fakeapi import FakeApiServer, Fault, forbidden
from kro.testing.waiting import eventually

FIVE = ["InstanceManaged", "GraphResolved", "ResourcesReady", "WatchesHealthy", "Ready"]
REFUSAL = (
    '403 Forbidden: configmaps is forbidden: User "system:serviceaccount:kro:kro" cannot list '
    'resource "configmaps" in API group "" at the cluster scope'
)
FORBIDDEN = forbidden("configmaps")


def conditions(instance: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in instance["status"]["conditions"]}


def types(instance: dict[str, Any]) -> list[str]:
    return [c["type"] for c in instance["status"]["conditions"]]


def queued(dynamic: DynamicController) -> set[ObjectRef]:
    items: set[ObjectRef] = set()
    while True:
        try:
            item = dynamic.queue.get_nowait()
        except QueueEmpty:
            return items
        dynamic.queue.done(item)
        items.add(item)


async def until(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    async def probe() -> bool:
        return check()

    await eventually(probe, what="the condition", timeout_s=timeout_s, interval_s=0.02)


async def test_a_child_kind_kro_may_not_list_is_reported_and_recovers_without_an_edit(
    api: FakeApiServer, client: Client, applier: Applier, dynamic: DynamicController
) -> None:
    refusal = api.inject(
        Fault(
            "status",
            method="GET",
            path="/api/v1/configmaps",  # across namespaces: the informer's list only
            watch=False,
            status=403,
            body=FORBIDDEN,
            times=1_000_000,
        )
    )
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph())
    reconciler = greeter_reconciler(
        client=client, registry=registry, applier=applier, watches=dynamic.watches
    )
    api.seed(GREETERS, greeter())
    await dynamic.register(  # no workers: the test drives the reconciles
        GREETERS,
        reconciler.reconcile,
        should_enqueue_update=should_enqueue_update,
        probably_settled=probably_settled,
    )
    request = Request(NS, "hi")
    for _ in range(3):  # creates, then converges; none waits for the 30 s sync deadline
        await asyncio.wait_for(reconciler.reconcile(request), 5.0)
    live = api.object(GREETERS, "hi", NS)
    assert live is not None
    assert live["status"]["state"] == "ACTIVE"
    assert sorted(types(live)) == sorted(FIVE)
    assert types(live)[-1] == "Ready"
    found = conditions(live)
    assert found["Ready"]["status"] == "True"  # not a dependent of Ready
    watches = found["WatchesHealthy"]
    assert (watches["status"], watches["reason"]) == ("False", "WatchBlocked")
    assert "configmaps" in watches["message"]
    assert "Forbidden" in watches["message"]
    assert watches["observedGeneration"] == live["metadata"]["generation"]
    queued(dynamic)

    api.faults.remove(refusal)  # granted
    parent = ObjectRef(GREETERS, NS, "hi")
    woken: set[ObjectRef] = set()
    await until(lambda: bool(woken.update(queued(dynamic)) or parent in woken))
    await reconciler.reconcile(request)
    recovered = api.object(GREETERS, "hi", NS)
    assert recovered is not None
    watches = conditions(recovered)["WatchesHealthy"]
    assert (watches["status"], watches["reason"], watches["message"]) == (
        "True",
        "AllWatchesSynced",
        "changes to all watched kinds are detected",
    )
    assert recovered["status"]["state"] == "ACTIVE"


class Greeters:
    """The Greeter kind's reconciler on watches whose health the test sets, and its one
    instance `hi`."""

    def __init__(
        self, api: FakeApiServer, client: Client, applier: Applier, graph: Graph | None = None
    ) -> None:
        registry = RevisionRegistry()
        registry.activate("greeter", 1, "h1", graph or greeter_graph())
        self.api = api
        self.watches = RecordingWatches()
        self.reconciler = greeter_reconciler(
            client=client, registry=registry, applier=applier, watches=self.watches
        )
        api.seed(GREETERS, greeter())

    async def reconciled(self, health: WatchHealth) -> dict[str, Any]:
        """The instance after a pass whose watches stand as `health` says."""
        self.watches.watch_health = health
        await self.reconciler.reconcile(Request(NS, "hi"))
        live = self.api.object(GREETERS, "hi", NS)
        assert live is not None
        return live


async def test_five_conditions_after_a_clean_pass(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    live = await Greeters(api, client, applier).reconciled(WatchHealth())
    assert sorted(types(live)) == sorted(FIVE)
    if len({c["lastTransitionTime"] for c in live["status"]["conditions"]}) == 1:
        assert types(live) == FIVE  # one second: upstream's order exactly
    watches = conditions(live)["WatchesHealthy"]
    assert (watches["status"], watches["reason"], watches["message"]) == (
        "True",
        "AllWatchesSynced",
        "changes to all watched kinds are detected",
    )


async def test_a_blocked_watch_leaves_ready_and_state_alone(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    greeters = Greeters(api, client, applier)
    live = await greeters.reconciled(WatchHealth(blocked=(("configmaps", REFUSAL),)))
    found = conditions(live)
    assert found["WatchesHealthy"]["status"] == "False"
    assert found["WatchesHealthy"]["reason"] == "WatchBlocked"
    assert REFUSAL in found["WatchesHealthy"]["message"]
    assert found["Ready"]["status"] == "True"
    assert found["Ready"]["reason"] == "Ready"
    assert live["status"]["state"] == "ACTIVE"

    found = conditions(await greeters.reconciled(WatchHealth(pending=("configmaps",))))
    assert (found["WatchesHealthy"]["status"], found["WatchesHealthy"]["reason"]) == (
        "Unknown",
        "WatchesPending",
    )
    assert found["Ready"]["status"] == "True"


async def test_author_conditions_read_watches_healthy_which_stays_off_the_wire(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    """OQ-5: a built-in like the others: readable from schema, filtered off the wire."""
    rgd = copy.deepcopy(greeter_rgd())
    rgd["spec"]["schema"]["status"] = {
        "conditions": [
            "${runtime.newCondition({type: 'Watching', "
            "status: runtime.condition(schema, 'WatchesHealthy').status, "
            "reason: runtime.condition(schema, 'WatchesHealthy').reason})}"
        ]
    }
    greeters = Greeters(api, client, applier, build_graph(rgd, RESOLVER))
    live = await greeters.reconciled(WatchHealth(blocked=(("configmaps", REFUSAL),)))
    assert types(live) == ["Watching"]
    watching = conditions(live)["Watching"]
    assert (watching["status"], watching["reason"]) == ("False", "WatchBlocked")
