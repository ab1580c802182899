"""kro.controllers.leadership, piece by piece: the write gate, leadership lost midway through a
leader path (no write after it, no failure reported), the read-only CRD check a follower serves
on, how KroApp registers its controllers with and without sharding, and Promotion."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from controllers_fakes import DictClient, greeter_graph, greeter_rgd, sample
from rgd_app_fakes import KroFakeApi, app_options, make_app

from kro.api.names import FINALIZER, LABEL_KRO_VERSION, LABEL_OWNED, LABEL_RGD_NAME
from kro.controllers.crd import CRDS, crd_is_current
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.leadership import NotLeader, Promotion, WriteGate
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.controller import Controller
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.reconcile import Request
from kro.runtime.sharding import ShardView

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def flips(*answers: bool) -> Callable[[], bool]:
    """A gate that answers `answers` in turn, then the last one for ever."""
    queue: Iterator[bool] = iter(answers)
    last = answers[-1]

    def gate() -> bool:
        return next(queue, last)

    return gate


# -- the gate ----------------------------------------------------------------------------------


def test_the_gate_is_open_until_bound_and_check_raises_not_leader_once_closed() -> None:
    gate = WriteGate()
    assert gate.allowed()
    gate.check("anything")
    leading = [True]
    gate.bind(lambda: leading[0])
    gate.check("rgd status")
    leading[0] = False
    assert not gate.allowed()
    with pytest.raises(NotLeader, match="rgd status"):
        gate.check("rgd status")


async def test_promotion_runs_its_hook_once_per_term_until_shut_down() -> None:
    calls: list[str] = []
    promotion = Promotion(lambda: calls.append("requeued"))
    task = asyncio.create_task(promotion.run())
    await asyncio.sleep(0)
    assert calls == ["requeued"]
    assert not task.done()  # a leader-only runnable that returns would be a bug to the manager
    promotion.shutdown()
    await asyncio.wait_for(task, timeout=1.0)


# -- leadership lost in the middle of a leader path ----------------------------------------------


def _writes(api: KroFakeApi, since: int) -> list[str]:
    return [f"{r.method} {r.path}" for r in api.requests[since:] if r.method in WRITES]


async def test_an_rgd_reconcile_that_stops_leading_midway_writes_nothing_after_and_reports_nothing(
    kro_api: KroFakeApi, kro_client: Client, provider: PrometheusProvider
) -> None:
    rgd = greeter_rgd("midway")
    rgd["metadata"] = {"name": "midway", "finalizers": [FINALIZER]}
    await kro_client.create(RGDS, rgd)
    app = make_app(kro_client, provider)
    # Leading when the reconcile starts, not any more at its first write (the revision list,
    # which may adopt): the rest of the leader path must not run, nor the status be written.
    app.writes.bind(flips(True, False))
    mark = len(kro_api.requests)
    with pytest.raises(NotLeader):
        await app.rgd_reconciler.reconcile(Request("", "midway"))
    assert _writes(kro_api, mark) == []
    assert sample(provider, "rgd_errors_total", rgd="midway", reason="reconcile_failed") == 0
    assert (await kro_client.get(RGDS, "midway")).get("status") is None


async def test_a_graphrevision_reconcile_that_stops_leading_adds_no_finalizer(
    kro_api: KroFakeApi, kro_client: Client, provider: PrometheusProvider
) -> None:
    revision = {
        "apiVersion": GRAPH_REVISIONS.api_version,
        "kind": "GraphRevision",
        "metadata": {"name": "midway-r1"},
        "spec": {"revision": 1, "snapshot": {"name": "midway", "spec": greeter_rgd()["spec"]}},
    }
    await kro_client.create(GRAPH_REVISIONS, revision)
    app = make_app(kro_client, provider)
    app.writes.bind(flips(True, False))
    mark = len(kro_api.requests)
    with pytest.raises(NotLeader):
        await app.gr_reconciler.reconcile(Request("", "midway-r1"))
    assert _writes(kro_api, mark) == []
    assert app.registry.get("midway", 1) is None


async def test_a_follower_graphrevision_reconcile_waits_for_the_leaders_verdict(
    kro_api: KroFakeApi, kro_client: Client, provider: PrometheusProvider
) -> None:
    revision = {
        "apiVersion": GRAPH_REVISIONS.api_version,
        "kind": "GraphRevision",
        "metadata": {"name": "verdict-r1"},
        "spec": {"revision": 1, "snapshot": {"name": "verdict", "spec": greeter_rgd()["spec"]}},
    }
    created = await kro_client.create(GRAPH_REVISIONS, revision)
    app = make_app(kro_client, provider)
    app.writes.bind(lambda: False)
    mark = len(kro_api.requests)
    await app.gr_reconciler.reconcile(Request("", "verdict-r1"))
    assert app.registry.get("verdict", 1) is None  # no verdict, no compilation
    created["status"] = {
        "conditions": [
            {
                "type": "GraphVerified",
                "status": "True",
                "reason": "Verified",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    created = await kro_client.update_status(GRAPH_REVISIONS, created)
    mark = len(kro_api.requests)
    await app.gr_reconciler.reconcile(Request("", "verdict-r1"))
    entry = app.registry.get("verdict", 1)
    assert entry is not None
    assert entry.graph is not None
    assert entry.state.value == "active"
    assert sample(provider, "graph_revision_compile_total", result="success") == 1
    assert _writes(kro_api, mark) == []
    # Its deletion: evicted here, the finalizer left to the leader.
    await kro_client.patch(
        GRAPH_REVISIONS,
        "verdict-r1",
        {"metadata": {"finalizers": [FINALIZER]}},
        patch_type="merge",
    )
    await kro_client.delete(GRAPH_REVISIONS, "verdict-r1")
    mark = len(kro_api.requests)
    await app.gr_reconciler.reconcile(Request("", "verdict-r1"))
    assert app.registry.get("verdict", 1) is None
    assert _writes(kro_api, mark) == []


# -- the CRD a follower waits for -----------------------------------------------------------------


def _desired() -> dict[str, Any]:
    crd = copy.deepcopy(dict(greeter_graph().instance.crd))
    crd["metadata"]["labels"] = {
        LABEL_OWNED: "true",
        LABEL_RGD_NAME: "greeter",
        LABEL_KRO_VERSION: "v1",
    }
    return crd


def _live(**changes: Any) -> dict[str, Any]:
    live = _desired()
    live["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
    for key, value in changes.items():
        if key == "labels":
            live["metadata"]["labels"].update(value)
        elif key == "status":
            live["status"] = value
        elif key == "without_field":  # the CRD of the spec before `value` was added
            schema = live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            del schema["properties"]["spec"]["properties"][value]
    return live


@pytest.mark.parametrize(
    ("live", "current"),
    [
        (None, False),
        (_live(), True),
        (_live(status={}), False),
        (_live(labels={LABEL_RGD_NAME: "another"}), False),
        (_live(labels={LABEL_OWNED: "false"}), False),
        (_live(without_field="name"), False),
        (_live(labels={LABEL_KRO_VERSION: "v0"}), True),  # ignored: a rolling upgrade
    ],
    ids=[
        "missing",
        "current",
        "not-established",
        "another-rgd",
        "not-kros",
        "schema-differs",
        "older-kro",
    ],
)
async def test_crd_is_current_only_once_the_leader_would_leave_it_alone(
    live: dict[str, Any] | None, current: bool
) -> None:
    client = DictClient()
    desired = _desired()
    if live is not None:
        client.seed(CRDS, live)
    answer = await crd_is_current(
        client,  # type: ignore[arg-type]
        desired,
        rgd_name="greeter",
        ignore_labels=frozenset({LABEL_KRO_VERSION}),
    )
    assert answer is current
    assert client.writes == []


# -- how KroApp registers its controllers ---------------------------------------------------------


class RecordingManager(Manager):
    """A Manager that only records the controllers added to it."""

    def __init__(self, client: Client, shard: ShardView | None = None) -> None:
        super().__init__(ManagerOptions(handle_signals=False, shard=shard), client=client)
        self.added: list[tuple[Any, bool]] = []

    def add_controller(self, controller: Any, *, leader_only: bool = True) -> None:
        self.added.append((controller, leader_only))


def test_unsharded_the_controllers_are_leader_only_and_always_write(
    kro_client: Client, provider: PrometheusProvider
) -> None:
    options = dataclasses.replace(app_options(), rgd_workers=3, graph_revision_workers=2)
    manager = RecordingManager(kro_client)
    app = make_app(kro_client, provider, options, manager=manager)
    assert [(c, only) for c, only in manager.added] == [
        (app.gr_controller, True),
        (app.rgd_controller, True),
        (app.dynamic, True),
    ]
    # The names of upstream's controllers (workqueue_* and controller_runtime_* series), and
    # the workers of --rgd-concurrent-reconciles / --graph-revision-concurrent-reconciles.
    assert (app.rgd_controller.name, app.rgd_queue.name) == ("ResourceGraphDefinition",) * 2
    assert (app.gr_controller.name, app.gr_queue.name) == ("graphrevision",) * 2
    assert (app.rgd_controller.workers, app.gr_controller.workers) == (3, 2)
    assert app.writes.allowed()


def test_sharded_the_controllers_run_everywhere_and_only_the_leader_writes(
    kro_client: Client, provider: PrometheusProvider
) -> None:
    manager = RecordingManager(kro_client, shard=ShardView())
    leading = [False]
    manager.may_reconcile = lambda: leading[0]  # type: ignore[method-assign]
    app = make_app(kro_client, provider, manager=manager)
    everywhere = [c for c, only in manager.added if not only]
    leader_only = [c for c, only in manager.added if only]
    assert everywhere == [app.gr_controller, app.rgd_controller, app.dynamic]
    assert len(leader_only) == 1
    assert isinstance(leader_only[0], Promotion)
    assert all(isinstance(c, Controller) for c in everywhere[:2])
    assert not app.writes.allowed()
    leading[0] = True
    assert app.writes.allowed()


async def test_the_owned_instance_gauge_counts_what_the_sharded_informers_hold(
    kro_client: Client,
) -> None:
    provider = PrometheusProvider(process_metrics=False)
    view = ShardView(metrics=provider)
    app = make_app(kro_client, provider, shard=view)
    assert sample(provider, "kro_shard_owned_instances") == 0
    assert app.owned_instances() == 0
