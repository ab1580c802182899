"""Events for instance condition changes (feature gate InstanceConditionEvents, reference §1.V):
`Normal` if the new status is True else `Warning`, reason = condition type, message
`<old> -> <new>: <reason>` with `none` for a new condition, reported as
`kro/<crd-name>-controller`; and nothing at all with the gate off."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from controllers_fakes import (
    GREETERS,
    NS,
    RecordingWatches,
    greeter,
    greeter_graph,
    greeter_reconciler,
)

from kro.applyset import Applier
from kro.cli.controller import app_options
from kro.cli.flags import parse_controller_args
from kro.controllers.app import KroApp
from kro.controllers.events import RecorderPool, condition_changes, recorder_name
from kro.controllers.instance import InstanceReconciler
from kro.controllers.registry import RevisionRegistry
from kro.runtime.client import Client
from kro.runtime.events import CORE_EVENTS, EventRecorder
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.metrics import NOOP
from kro.runtime.reconcile import Request
from kro.testing.fakeapi import FakeApiServer

CRD_NAME = "greeters.unit.kro.run"


def _c(kind: str, status: str, reason: str = "r") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason}


@pytest.mark.parametrize(
    ("before", "after", "changes"),
    [
        ([], [_c("Ready", "True", "Ready")], [("Ready", "none", "True", "Ready")]),
        (
            [_c("Ready", "False")],
            [_c("Ready", "True", "Ready")],
            [("Ready", "False", "True", "Ready")],
        ),
        ([_c("Ready", "True")], [_c("Ready", "True", "other")], []),
        ([_c("Ready", "True"), _c("Gone", "True")], [_c("Ready", "True")], []),
        (
            [_c("A", "True"), _c("B", "Unknown")],
            [_c("B", "False", "NotReady"), _c("A", "True")],
            [("B", "Unknown", "False", "NotReady")],
        ),
    ],
    ids=["new", "flipped", "reason-only", "disappeared", "only-the-changed-one"],
)
def test_condition_changes(
    before: list[dict[str, str]], after: list[dict[str, str]], changes: list[tuple[str, ...]]
) -> None:
    assert condition_changes(before, after) == changes


@pytest.fixture
async def pool(client: Client) -> AsyncIterator[RecorderPool]:
    recorders = RecorderPool(client, reporting_instance="test-0")
    task = asyncio.create_task(recorders.run(), name="test:recorders")
    yield recorders
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _flushed(recorder: EventRecorder) -> None:
    await asyncio.wait_for(recorder.flush(), timeout=5)


def _greeters(
    client: Client, applier: Applier, registry: RevisionRegistry, events: EventRecorder | None
) -> InstanceReconciler:
    return greeter_reconciler(
        client=client,
        registry=registry,
        applier=applier,
        watches=RecordingWatches(),
        events=events,
    )


async def _events(client: Client) -> list[dict[str, Any]]:
    items, _ = await client.list_all(CORE_EVENTS, namespace=NS)
    return items


async def test_condition_changes_become_events_on_the_instance(
    api: FakeApiServer, client: Client, applier: Applier, pool: RecorderPool
) -> None:
    registry = RevisionRegistry()
    recorder = pool.recorder(recorder_name(CRD_NAME))
    reconciler = _greeters(client, applier, registry, recorder)
    api.seed(GREETERS, greeter())
    await reconciler.reconcile(Request(NS, "hi"))  # no revision: GraphResolved False
    await _flushed(recorder)
    first = {(e["type"], e["reason"], e["message"]) for e in await _events(client)}
    assert ("Warning", "GraphResolved", "none -> False: ResolutionFailed") in first
    assert ("Warning", "Ready", "none -> False: ResolutionFailed") in first

    registry.activate("greeter", 1, "h1", greeter_graph())
    await reconciler.reconcile(Request(NS, "hi"))
    await _flushed(recorder)
    events = await _events(client)
    seen = {(e["type"], e["reason"], e["message"]) for e in events}
    assert seen - first == {
        ("Normal", "GraphResolved", "False -> True: Resolved"),
        # These were initialised Unknown by the first pass (T-07, V-14).
        ("Normal", "InstanceManaged", "Unknown -> True: Managed"),
        ("Normal", "ResourcesReady", "Unknown -> True: AllResourcesReady"),
        ("Normal", "WatchesHealthy", "Unknown -> True: AllWatchesSynced"),
        ("Normal", "Ready", "False -> True: Ready"),
    }
    assert {e["source"]["component"] for e in events} == {"kro/greeters.unit.kro.run-controller"}
    assert {(e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in events} == {
        ("Greeter", "hi")
    }

    await reconciler.reconcile(Request(NS, "hi"))  # nothing changes: no new Event
    await _flushed(recorder)
    assert len(await _events(client)) == len(events)


async def test_no_events_without_the_gate(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph())
    api.seed(GREETERS, greeter())
    await _greeters(client, applier, registry, None).reconcile(Request(NS, "hi"))
    assert (await client.get(GREETERS, "hi", namespace=NS))["status"]["state"] == "ACTIVE"
    assert await _events(client) == []


def test_recorder_pool_reuses_one_recorder_per_name(client: Client) -> None:
    pool = RecorderPool(client, reporting_instance="test-0")
    first = pool.recorder("kro/a.example.com-controller")
    assert pool.recorder("kro/a.example.com-controller") is first
    assert pool.recorder("kro/b.example.com-controller") is not first
    assert first.options.reporting_controller == "kro/a.example.com-controller"


@pytest.mark.parametrize(("flag", "enabled"), [("true", True), ("false", False)])
def test_the_feature_gate_reaches_the_app(client: Client, flag: str, enabled: bool) -> None:
    config = parse_controller_args([f"--feature-gates=InstanceConditionEvents={flag}"])
    options = app_options(config)
    assert options.feature_gates["InstanceConditionEvents"] is enabled
    assert options.rgd.instance.condition_events is enabled
    app = KroApp(
        Manager(ManagerOptions(handle_signals=False), client=client), options, metrics=NOOP
    )
    assert app.recorders is not None  # kro-py's own Warnings are recorded whatever the gate
