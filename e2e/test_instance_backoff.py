"""A child the API server rejects, retried with a growing delay, on the real control plane.

Upstream v0.10 backs off an instance that keeps failing or waiting: the first retry comes after
`--instance-requeue-interval`, each consecutive one after twice the last, up to a cap (5 minutes
upstream; `--instance-requeue-max-interval` here, set small so that the test reaches it). The
user sees one Warning Event for the cause, not one per retry; `instance_errors_total` counts
every attempt, and the test reads the attempts' times from it. Fixing the cause resets the
streak: the instance goes ACTIVE, and a new failure starts again from the first delay.
"""

from __future__ import annotations

import asyncio
import itertools

from kro_harness import (
    CONTROLLER_ARGS,
    ControllerThread,
    KroEnv,
    kro_fixtures,
    settings_resource,
)
from prometheus_client.parser import text_string_to_metric_families

from kro.runtime.gvk import GVR

EVENTS = GVR("", "v1", "events")
INTERVAL_S = 0.2
CAP_S = 1.6
ARGS = (
    *(a for a in CONTROLLER_ARGS if not a.startswith("--instance-requeue")),
    f"--instance-requeue-interval={int(INTERVAL_S * 1000)}ms",
    f"--instance-requeue-max-interval={int(CAP_S * 1000)}ms",
)


controller, kro = kro_fixtures(ARGS)


def _errors_total(text: str, rgd: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "instance_errors_total"
        and sample.labels.get("rgd") == rgd
        and sample.labels.get("reason") == "resource_apply_failed"
    )


class Attempts:
    """When the controller counted each failed apply of one RGD's instances
    (`instance_errors_total`), read from /metrics every 50 ms while a test waits: the failed
    attempts as an operator's scrape sees them, with no hook into the controller."""

    def __init__(self, controller: ControllerThread, rgd: str) -> None:
        self.controller = controller
        self.rgd = rgd
        self.times: list[float] = []
        self._count = 0.0

    async def until(self, count: int, *, what: str, timeout_s: float = 60.0) -> list[float]:
        """Poll until `count` attempts beyond those seen so far; their times."""
        start = len(self.times)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while len(self.times) - start < count:
            total = _errors_total(self.controller.scrape(), self.rgd)
            now = loop.time()
            self.times.extend([now] * int(total - self._count))
            self._count = max(self._count, total)
            if now > deadline:
                raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
            await asyncio.sleep(0.05)
        return self.times[start:]


async def test_a_rejected_child_is_retried_with_a_doubling_delay_up_to_the_cap(
    kro: KroEnv, controller: ControllerThread
) -> None:
    spec = {"value": "string | default=v"}
    rgd = kro.rgd("backoff", "Backoff", spec, [settings_resource("bad key")])
    rgd_name = rgd["metadata"]["name"]
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(rgd_name)
    gvr = await kro.gvr_of("Backoff")
    attempts = Attempts(controller, rgd_name)
    await kro.apply_instance("Backoff", "rejected", {})

    # 0.2 + 0.4 + 0.8 + 3 x 1.6 s between the first seven attempts: about 6 s.
    times = await attempts.until(7, what="seven failed applies")
    gaps = [after - before for before, after in itertools.pairwise(times)]
    expected = [min(INTERVAL_S * 2**i, CAP_S) for i in range(len(gaps))]  # .2 .4 .8 1.6 1.6 1.6
    for gap, delay in zip(gaps, expected, strict=True):
        # No sooner than the delay (less the 50 ms of polling), and far less than the next
        # doubling: at the cap, 3.2 s would be the next.
        assert delay * 0.9 - 0.1 <= gap <= delay + 1.0, (gaps, expected)

    events = await kro.client.list(
        EVENTS, namespace=kro.namespace, field_selector="involvedObject.name=rejected"
    )
    warnings = [e for e in events.get("items") or [] if e.get("type") == "Warning"]
    (failure,) = [e for e in warnings if e["reason"] == "ResourceApplyFailed"]
    assert 'resource "settings"' in failure["message"]
    # Retries that fail the same way add no Event and count none up (with the condition Events
    # of gate InstanceConditionEvents: ResourcesReady and Ready went False once).
    assert [e.get("count", 1) for e in warnings] == [1] * len(warnings), warnings
    instance = await kro.get(gvr, "rejected")
    assert instance["status"]["state"] == "ERROR"

    # The fix ends the streak: the instance converges.
    await kro.apply_rgd(kro.rgd("backoff", "Backoff", {"value": "string | default=v"},
                                [settings_resource("good-key")]))  # fmt: skip
    await kro.wait_instance(gvr, "rejected", timeout_s=60)
    # A new failure starts again from the first delay, not from the cap.
    await kro.apply_rgd(kro.rgd("backoff", "Backoff", {"value": "string | default=v"},
                                [settings_resource("bad key")]))  # fmt: skip
    again = await attempts.until(2, what="the new failure's first retry")
    assert again[1] - again[0] < CAP_S * 0.75, again
