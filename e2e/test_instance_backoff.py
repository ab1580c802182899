"""A child the API server rejects, retried with a growing delay, on the real control plane.

Upstream v0.10 backs off an instance that keeps failing or waiting: the first retry comes after
`--instance-requeue-interval`, each consecutive one after twice the last, up to a cap (5 minutes
upstream; `--instance-requeue-max-interval` here, set small so that the test reaches it). The
user sees one Warning Event for the cause, not one per retry; `instance_errors_total` counts
every attempt. Fixing the cause resets the streak: the instance goes ACTIVE, and a new failure
starts again from the first delay.

The attempts are read from the controller's log (`instance.requeue_scheduled`, one line per
scheduled retry, with its delay) and their spacing from the time each line was logged: the gap
between two attempts is at least the delay the first one asked for.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from kro_harness import (
    CONTROLLER_ARGS,
    ControllerThread,
    KroEnv,
    LogRecords,
    kro_env,
    log_records,
    wait_for,
)
from prometheus_client.parser import text_string_to_metric_families

from kro.runtime.gvk import GVR
from kro.testing.pytest_plugin import ClusterHandle

EVENTS = GVR("", "v1", "events")
INTERVAL_S = 0.2
CAP_S = 1.6
ARGS = (
    *(a for a in CONTROLLER_ARGS if not a.startswith(("--instance-requeue", "--log-level"))),
    f"--instance-requeue-interval={int(INTERVAL_S * 1000)}ms",
    f"--instance-requeue-max-interval={int(CAP_S * 1000)}ms",
    "--log-level=debug",
)


@pytest.fixture(scope="module")
def controller(kube_cluster: ClusterHandle) -> Iterator[ControllerThread]:
    running = ControllerThread(kube_cluster.kubeconfig, ARGS)
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
async def kro(controller: ControllerThread, kube_namespace: str) -> AsyncIterator[KroEnv]:
    async with kro_env(controller, kube_namespace) as env:
        yield env


@pytest.fixture
def records() -> Iterator[LogRecords]:
    with log_records() as handler:
        yield handler


def _settings(key: str) -> dict[str, Any]:
    return {
        "id": "settings",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.metadata.name}-settings"},
            "data": {key: "${schema.spec.value}"},
        },
    }


def _errors_total(text: str, rgd: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "instance_errors_total"
        and sample.labels.get("rgd") == rgd
        and sample.labels.get("reason") == "resource_apply_failed"
    )


async def test_a_rejected_child_is_retried_with_a_doubling_delay_up_to_the_cap(
    kro: KroEnv, controller: ControllerThread, records: LogRecords
) -> None:
    rgd = kro.rgd("backoff", "Backoff", {"value": "string | default=v"}, [_settings("bad key")])
    rgd_name = rgd["metadata"]["name"]
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd_name)
    gvr = await kro.gvr_of("Backoff")
    await kro.apply_instance("Backoff", "rejected", {})

    def retries() -> list[dict[str, Any]]:
        return [
            r
            for r in records.named("instance.requeue_scheduled", name="rejected")
            if r.get("reason") == "apply_failed"
        ]

    async def at_cap() -> list[dict[str, Any]] | None:
        found = retries()
        capped = [r for r in found if r["delay_s"] == pytest.approx(CAP_S)]
        return found if len(capped) >= 3 else None

    # 0.2 + 0.4 + 0.8 + 3 x 1.6 s: about 6 s of retries.
    found = await wait_for(at_cap, what="three retries at the cap", timeout_s=60)
    delays = [r["delay_s"] for r in found]
    doubling = [INTERVAL_S * 2**i for i in range(4)]  # 0.2, 0.4, 0.8, 1.6
    assert delays[: len(doubling)] == pytest.approx(doubling), delays
    assert delays[len(doubling) :] == pytest.approx([CAP_S] * (len(delays) - len(doubling)))
    # Each attempt came no sooner than the delay the one before it asked for.
    for before, after in itertools.pairwise(found):
        assert after["created"] - before["created"] >= before["delay_s"] * 0.9, (before, after)

    events = await kro.client.list(
        EVENTS, namespace=kro.namespace, field_selector="involvedObject.name=rejected"
    )
    warnings = [e for e in events.get("items") or [] if e.get("type") == "Warning"]
    (failure,) = [e for e in warnings if e["reason"] == "ResourceApplyFailed"]
    assert 'resource "settings"' in failure["message"]
    # Retries that fail the same way add no Event and count none up (with the condition Events
    # of gate InstanceConditionEvents: ResourcesReady and Ready went False once).
    assert [e.get("count", 1) for e in warnings] == [1] * len(warnings), warnings
    assert _errors_total(controller.scrape(), rgd_name) >= len(found)
    instance = await kro.get(gvr, "rejected")
    assert instance["status"]["state"] == "ERROR"

    # The fix ends the streak: the instance converges, and no retry of the old cause follows.
    await kro.apply_rgd(kro.rgd("backoff", "Backoff", {"value": "string | default=v"},
                                [_settings("good-key")]))  # fmt: skip
    await kro.wait_instance(gvr, "rejected", timeout_s=60)
    settled = len(retries())
    # A new failure starts from the first delay again.
    await kro.apply_rgd(kro.rgd("backoff", "Backoff", {"value": "string | default=v"},
                                [_settings("bad key")]))  # fmt: skip

    async def restarted() -> list[dict[str, Any]] | None:
        again = retries()[settled:]
        return again if len(again) >= 2 else None

    again = await wait_for(restarted, what="the new failure's first retries", timeout_s=60)
    assert [r["delay_s"] for r in again[:2]] == pytest.approx([INTERVAL_S, 2 * INTERVAL_S])
