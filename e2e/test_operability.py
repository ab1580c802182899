"""A failure someone must act on, seen the way an operator sees it, on the real control plane:
the controller's log, the object's Events and /metrics (kro.controllers.failures).

* A child that the API server refuses (422: a ConfigMap key with a space) makes one warning
  line `instance.failed` and one Warning Event `ResourceApplyFailed`, however often the apply is
  retried (the Event's count stays 1: a retry that fails the same way says nothing new); and
  `instance_errors_total` counts every attempt, and was already on /metrics at 0 before the
  instance existed. Fixing the RGD's template clears
  the condition and logs `instance.recovered` once.
* An RGD whose graph is invalid: one `rgd.failed` line, a Warning Event on the RGD, and
  `rgd_errors_total` counting every attempt.

The log is read from the standard library's logging, which structlog renders through
(kro.runtime.logging), by a handler added to the root logger for the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from kro_harness import (
    CONFIGMAPS,
    CRDS,
    ControllerThread,
    KroEnv,
    LogRecords,
    condition,
    kro_env,
    log_records,
    running_controller,
    settings_resource,
    wait_for,
)
from prometheus_client.parser import text_string_to_metric_families

from kro.runtime.gvk import GVR
from kro.testing.pytest_plugin import ClusterHandle

EVENTS = GVR("", "v1", "events")


@pytest.fixture(scope="module")
def controller(kube_cluster: ClusterHandle) -> Iterator[ControllerThread]:
    with running_controller(kube_cluster.kubeconfig) as running:
        yield running


@pytest.fixture
async def kro(controller: ControllerThread, kube_namespace: str) -> AsyncIterator[KroEnv]:
    async with kro_env(controller, kube_namespace) as env:
        yield env


@pytest.fixture
def records() -> Iterator[LogRecords]:
    with log_records() as handler:
        yield handler


def _total(text: str, metric: str, **labels: str) -> float | None:
    """The sum of the matching samples; None when no series matches (not even at 0)."""
    found = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == metric and all(sample.labels.get(k) == v for k, v in labels.items())
    ]
    return sum(found) if found else None


async def _events(kro: KroEnv, name: str, namespace: str | None = None) -> list[dict[str, Any]]:
    page = await kro.client.list(
        EVENTS,
        namespace=namespace or kro.namespace,
        field_selector=f"involvedObject.name={name}",
    )
    return [e for e in page.get("items") or [] if e.get("type") == "Warning"]


async def test_a_refused_child_is_logged_once_recorded_and_counted(
    kro: KroEnv, controller: ControllerThread, records: LogRecords
) -> None:
    spec = {"value": "string | default=v"}
    rgd = kro.rgd("settings", "Settings", spec, [settings_resource("bad key")])
    rgd_name = rgd["metadata"]["name"]
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd_name)
    errors = {"rgd": rgd_name, "reason": "resource_apply_failed"}
    # The series is there, at 0, as soon as the kind is served: before any instance exists.
    assert _total(controller.scrape(), "instance_errors_total", **errors) == 0

    await kro.apply_instance("Settings", "broken", {})
    gvr = await kro.gvr_of("Settings")

    async def retried() -> float | None:
        counted = _total(controller.scrape(), "instance_errors_total", **errors)
        return counted if counted is not None and counted >= 3 else None

    await wait_for(retried, what="three failed applies counted")
    events = [e for e in await _events(kro, "broken") if e["reason"] == "ResourceApplyFailed"]
    (event,) = events
    assert event.get("count", 1) == 1, event  # three attempts, one cause: one Event
    assert 'resource "settings"' in event["message"]
    assert "422 Invalid" in event["message"]
    assert "data[bad key]" in event["message"]
    assert event["involvedObject"]["kind"] == "Settings"

    instance = await kro.get(gvr, "broken")
    ready = condition(instance, "ResourcesReady")
    assert (instance["status"]["state"], ready["status"]) == ("ERROR", "False")
    lines = records.named("instance.failed", name="broken")
    assert len(lines) == 1, lines  # three failures and more, one line: the cause never changed
    (line,) = lines
    assert (line["level"], line["reason"]) == ("warning", "ResourceApplyFailed")
    assert line["code"] == "422"
    assert (line["resource_id"], line["rgd"], line["namespace"]) == (
        "settings", rgd_name, kro.namespace,
    )  # fmt: skip
    assert line["error"] == event["message"]
    counted = _total(controller.scrape(), "instance_errors_total", **errors)
    assert counted is not None
    assert counted >= 3

    # The fix: a valid key. The condition clears and the recovery is said once.
    await kro.apply_rgd(kro.rgd("settings", "Settings", {"value": "string | default=v"},
                                [settings_resource("good-key")]))  # fmt: skip
    await kro.wait_instance(gvr, "broken", timeout_s=90)
    child = await kro.client.get(CONFIGMAPS, "broken-settings", namespace=kro.namespace)
    assert child["data"] == {"good-key": "v"}
    fixed = condition(await kro.get(gvr, "broken"), "ResourcesReady")
    assert (fixed["status"], fixed["reason"]) == ("True", "AllResourcesReady")
    recovered = records.named("instance.recovered", name="broken")
    assert [r["previous_reason"] for r in recovered] == ["ResourceApplyFailed"]
    assert len(records.named("instance.failed", name="broken")) == 1


async def test_an_invalid_graph_is_logged_once_recorded_and_counted(
    kro: KroEnv, controller: ControllerThread, records: LogRecords
) -> None:
    invalid = settings_resource("k")
    invalid["template"]["data"] = {"k": "${schema.spec.missing}"}
    rgd = kro.rgd("invalid", "Invalid", {"value": "string"}, [invalid])
    rgd_name = rgd["metadata"]["name"]
    await kro.apply_rgd(rgd)
    labels = {"rgd": rgd_name, "reason": "invalid_resource_graph"}

    async def retried() -> float | None:
        counted = _total(controller.scrape(), "rgd_errors_total", **labels)
        return counted if counted is not None and counted >= 3 else None

    await wait_for(retried, what="three failed graph builds counted", timeout_s=90)

    async def recorded() -> list[dict[str, Any]] | None:
        events = await _events(kro, rgd_name, namespace="default")
        return [e for e in events if e["reason"] == "InvalidResourceGraph"] or None

    (event,) = await wait_for(recorded, what="a Warning Event on the RGD")
    assert "missing" in event["message"]
    lines = records.named("rgd.failed", rgd=rgd_name)
    assert len(lines) == 1, lines
    assert lines[0]["reason"] == "InvalidResourceGraph"
    live = await kro.get_rgd(rgd_name)
    assert condition(live, "GraphAccepted")["status"] == "False"


async def test_a_crd_that_cannot_be_installed_is_reported(
    kro: KroEnv, controller: ControllerThread, records: LogRecords
) -> None:
    """Another owner's CRD already serves the kind: kro must not take it over, and says so."""
    name = f"takens.{kro.group}"  # the CRD the RGD below generates
    foreign = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": kro.group,
            "names": {"kind": "Taken", "plural": "takens", "singular": "taken",
                      "listKind": "TakenList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object",
                                               "x-kubernetes-preserve-unknown-fields": True}},
            }],
        },
    }  # fmt: skip
    await kro.client.create(CRDS, foreign)
    kro.track(CRDS, name)
    rgd = kro.rgd("taken", "Taken", {"value": "string | default=v"}, [settings_resource("k")])
    rgd_name = rgd["metadata"]["name"]
    await kro.apply_rgd(rgd)
    labels = {"rgd": rgd_name, "reason": "crd_install_failed"}

    async def counted() -> float | None:
        total = _total(controller.scrape(), "rgd_errors_total", **labels)
        return total if total is not None and total >= 2 else None

    await wait_for(counted, what="the refused CRD counted twice", timeout_s=90)

    async def recorded() -> list[dict[str, Any]] | None:
        events = await _events(kro, rgd_name, namespace="default")
        return [e for e in events if e["reason"] == "CRDInstallFailed"] or None

    (event,) = await wait_for(recorded, what="a CRDInstallFailed Event on the RGD")
    assert "not owned by KRO" in event["message"]
    (line,) = records.named("rgd.failed", rgd=rgd_name)
    assert (line["reason"], line["crd"]) == ("CRDInstallFailed", name)
    live = await kro.get_rgd(rgd_name)
    assert condition(live, "KindReady")["status"] == "False"
