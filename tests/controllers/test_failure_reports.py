"""Failures a user must act on are told in three places (kro.controllers.failures): a warning
line and a Warning Event once per change of cause (a retry that fails the same way adds none), and
`instance_errors_total` / `rgd_errors_total{rgd, reason}` from 0; a recovery is one info line.
And the state gauges (kro.controllers.statecounts) follow every status write."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import pytest
import structlog
from controllers_fakes import (
    GREETERS,
    INVALID,
    NS,
    DictClient,
    RecordingWatches,
    greeter,
    greeter_graph,
    greeter_reconciler,
    greeter_rgd,
    sample,
    unserved_rgd_reconciler,
)

from kro.applyset import Applier
from kro.controllers.events import RecorderPool
from kro.controllers.failures import Failure, FailureReporter, metric_reason
from kro.controllers.instance import InstanceReconciler
from kro.controllers.metrics import INSTANCE_FAILURES, InstanceMetrics, RGDMetrics
from kro.controllers.registry import RevisionRegistry
from kro.controllers.rgd import RGDS, RGDReconciler
from kro.runtime.client import Client
from kro.runtime.events import CORE_EVENTS
from kro.runtime.metrics import NOOP
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.reconcile import Request
from kro.testing.fakeapi import FakeApiServer, Fault

HI = Request(NS, "hi")


@pytest.fixture
async def pool(client: Client) -> AsyncIterator[RecorderPool]:
    recorders = RecorderPool(client, reporting_instance="test-0")
    task = asyncio.create_task(recorders.run(), name="test:recorders")
    yield recorders
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _reconciler(
    client: Client,
    applier: Applier,
    provider: PrometheusProvider,
    registry: RevisionRegistry,
    pool: RecorderPool,
) -> InstanceReconciler:
    metrics = InstanceMetrics(provider)
    failures = FailureReporter(
        rgd="greeter",
        event="instance.failed",
        counter=metrics.errors,
        reasons=INSTANCE_FAILURES,
        recorder=pool.recorder("kro/greeters.unit.kro.run-controller"),
    )
    failures.initialise()
    return greeter_reconciler(
        client=client,
        registry=registry,
        applier=applier,
        watches=RecordingWatches(),
        metrics=metrics,
        failures=failures,
    )


def _logged(logs: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == event]


async def _warnings(client: Client) -> list[dict[str, Any]]:
    items, _ = await client.list_all(CORE_EVENTS, namespace=NS)
    return [e for e in items if e["type"] == "Warning"]


def test_metric_reasons_are_snake_case() -> None:
    assert metric_reason("ResourceApplyFailed") == "resource_apply_failed"
    assert metric_reason("CRDInstallFailed") == "crd_install_failed"
    assert metric_reason("ReconcileFailed") == "reconcile_failed"


async def test_a_refused_child_apply_is_logged_once_recorded_and_counted(
    api: FakeApiServer,
    client: Client,
    applier: Applier,
    provider: PrometheusProvider,
    pool: RecorderPool,
) -> None:
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph())
    api.seed(GREETERS, greeter())
    reconciler = _reconciler(client, applier, provider, registry, pool)
    assert reconciler.failures.recorder is not None
    labels = {"rgd": "greeter", "reason": "resource_apply_failed"}
    assert sample(provider, "instance_errors_total", **labels) == 0  # there before any error
    assert provider.registry.get_sample_value("instance_errors_total", labels) == 0.0

    api.inject(Fault("status", method="PATCH", path="/configmaps/hi", status=422,
                     body=INVALID, times=3))  # fmt: skip
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            await reconciler.reconcile(HI)
        await asyncio.wait_for(reconciler.failures.recorder.flush(), timeout=5)

    assert sample(provider, "instance_errors_total", **labels) == 3
    (line,) = _logged(logs, "instance.failed")
    assert line["log_level"] == "warning"
    assert line["reason"] == "ResourceApplyFailed"
    assert (line["resource_id"], line["code"]) == ("greeting", "422")
    assert 'resource "greeting": 422 Invalid: ConfigMap "hi" is invalid' in line["error"]
    (event,) = await _warnings(client)  # three failures, one cause: one Event, not counted up
    assert (event["reason"], event.get("count", 1)) == ("ResourceApplyFailed", 1)
    assert event["involvedObject"]["name"] == "hi"
    assert event["message"] == line["error"]
    live = await client.get(GREETERS, "hi", namespace=NS)
    assert live["status"]["state"] == "ERROR"

    with structlog.testing.capture_logs() as logs:  # the template is fixed (the fault is gone)
        await reconciler.reconcile(HI)
        await reconciler.reconcile(HI)
    assert [e["previous_reason"] for e in _logged(logs, "instance.recovered")] == [
        "ResourceApplyFailed"
    ]
    assert _logged(logs, "instance.failed") == []
    live = await client.get(GREETERS, "hi", namespace=NS)
    assert live["status"]["state"] == "ACTIVE"
    assert sample(provider, "instance_errors_total", **labels) == 3


async def test_a_new_cause_is_logged_again(
    api: FakeApiServer, client: Client, applier: Applier, provider: PrometheusProvider,
    pool: RecorderPool,
) -> None:  # fmt: skip
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph())
    api.seed(GREETERS, greeter())
    reconciler = _reconciler(client, applier, provider, registry, pool)
    forbidden = {**INVALID, "reason": "Forbidden", "code": 403, "message": "nope"}
    api.inject(Fault("status", method="PATCH", path="/configmaps/hi", status=422, body=INVALID))
    api.inject(Fault("status", method="PATCH", path="/configmaps/hi", status=403,
                     body=forbidden, times=2))  # fmt: skip
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            await reconciler.reconcile(HI)
        assert reconciler.failures.recorder is not None
        await asyncio.wait_for(reconciler.failures.recorder.flush(), timeout=5)
    codes = [line["code"] for line in _logged(logs, "instance.failed")]
    assert codes == ["422", "403"]
    events = await _warnings(client)  # one Event per cause, each once
    seen = sorted((e["message"].count("403"), e.get("count", 1)) for e in events)
    assert seen == [(0, 1), (1, 1)]


async def test_an_unowned_failure_is_reported_too(
    api: FakeApiServer, client: Client, applier: Applier, provider: PrometheusProvider,
    pool: RecorderPool,
) -> None:  # fmt: skip
    """A read of the instance the API server refuses: no phase owns it, reconcile reports it."""
    registry = RevisionRegistry()
    reconciler = _reconciler(client, applier, provider, registry, pool)
    forbidden = {**INVALID, "reason": "Forbidden", "code": 403, "message": "no"}
    api.inject(Fault("status", method="GET", path="/greeters/hi", status=403, body=forbidden))
    with structlog.testing.capture_logs() as logs, pytest.raises(Exception, match="403"):
        await reconciler.reconcile(HI)
    (line,) = _logged(logs, "instance.failed")
    assert line["reason"] == "ReconcileFailed"
    assert sample(provider, "instance_errors_total", rgd="greeter", reason="reconcile_failed") == 1


def test_every_instance_reason_starts_at_zero(provider: PrometheusProvider) -> None:
    metrics = InstanceMetrics(provider)
    FailureReporter(
        rgd="a", event="instance.failed", counter=metrics.errors, reasons=INSTANCE_FAILURES
    ).initialise()
    for reason in INSTANCE_FAILURES:
        labels = {"rgd": "a", "reason": metric_reason(reason)}
        assert provider.registry.get_sample_value("instance_errors_total", labels) == 0.0


def test_the_reporter_logs_per_object_and_forgets() -> None:
    reporter = FailureReporter(
        rgd="a", event="instance.failed", counter=NOOP.counter("x", "x"), reasons=()
    )
    failure = Failure("ReconcileFailed", "boom")
    with structlog.testing.capture_logs() as logs:
        reporter.report(("ns", "one"), {}, failure)
        reporter.report(("ns", "two"), {}, failure)
        reporter.report(("ns", "one"), {}, failure)
        reporter.forget(("ns", "one"))
        reporter.report(("ns", "one"), {}, failure)
    assert len(_logged(logs, "instance.failed")) == 3
    assert reporter.failing() == 2


# -- RGDs ----------------------------------------------------------------------------------------


def _rgds(client: DictClient, provider: PrometheusProvider) -> RGDReconciler:
    return unserved_rgd_reconciler(client, metrics=RGDMetrics(provider))


async def test_an_invalid_graph_is_logged_once_and_counted(provider: PrometheusProvider) -> None:
    client = DictClient()
    client.seed(RGDS, greeter_rgd(text="${schema.spec.nope}"))
    rgds = _rgds(client, provider)
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            await rgds.reconcile(Request("", "greeter"))
    (line,) = _logged(logs, "rgd.failed")
    assert line["reason"] == "InvalidResourceGraph"
    assert "nope" in line["error"]
    labels = {"rgd": "greeter", "reason": "invalid_resource_graph"}
    assert sample(provider, "rgd_errors_total", **labels) == 3
    crd = {"rgd": "greeter", "reason": "crd_install_failed"}
    assert provider.registry.get_sample_value("rgd_errors_total", crd) == 0.0
    assert sample(provider, "rgds_by_state", state="Inactive") == 1
    assert sample(provider, "rgds_by_state", state="Active") == 0

    client.objects.pop((RGDS, "greeter"))  # deleted: its series go
    await rgds.reconcile(Request("", "greeter"))
    assert provider.registry.get_sample_value("rgd_errors_total", labels) is None
    assert sample(provider, "rgds_by_state", state="Inactive") == 0


# -- state gauges --------------------------------------------------------------------------------


async def test_instances_by_state_follows_status_writes(
    api: FakeApiServer, client: Client, applier: Applier, provider: PrometheusProvider,
    pool: RecorderPool,
) -> None:  # fmt: skip
    registry = RevisionRegistry()
    reconciler = _reconciler(client, applier, provider, registry, pool)
    reconciler.metrics.states.register("greeter")

    def count(state: str) -> float | None:
        labels = {"rgd": "greeter", "state": state}
        return provider.registry.get_sample_value("instances_by_state", labels)

    assert (count("ACTIVE"), count("ERROR"), count("IN_PROGRESS"), count("DELETING")) == (
        0, 0, 0, 0,
    )  # fmt: skip
    api.seed(GREETERS, greeter("hi"))
    api.seed(GREETERS, greeter("ho"))
    await reconciler.reconcile(HI)  # no revision yet
    await reconciler.reconcile(Request(NS, "ho"))
    assert count("ERROR") == 2
    registry.activate("greeter", 1, "h1", greeter_graph())
    await reconciler.reconcile(HI)
    assert (count("ERROR"), count("ACTIVE")) == (1, 1)
    api.remove(GREETERS, "ho", NS)
    await reconciler.reconcile(Request(NS, "ho"))  # gone: forgotten
    assert (count("ERROR"), count("ACTIVE")) == (0, 1)


def test_state_gauges_can_be_turned_off(provider: PrometheusProvider) -> None:
    metrics = InstanceMetrics(provider, state_gauges=False)
    metrics.states.set(("ns", "a"), "ACTIVE", "greeter")
    assert metrics.states.count("ACTIVE", "greeter") == 0
    assert "instances_by_state" not in provider.render().decode()
