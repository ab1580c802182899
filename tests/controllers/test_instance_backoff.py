"""An instance that fails or waits comes back after a delay that doubles per consecutive retry,
up to a cap, and starts again from the first delay once a pass makes progress (upstream v0.10's
per-instance requeue backoff, `--instance-requeue-interval` as its first step). Watch events
still bring an instance back at once; the delay bounds only the retries no event triggers."""

from __future__ import annotations

from controllers_fakes import (
    CONFIGMAPS,
    GREETERS,
    INVALID,
    NS,
    RecordingWatches,
    greeter,
    greeter_graph,
    greeter_reconciler,
)

from kro.applyset import Applier
from kro.controllers.instance import InstanceOptions, InstanceReconciler
from kro.controllers.registry import RevisionRegistry
from kro.runtime.client import Client
from kro.runtime.reconcile import Request
from kro.testing.fakeapi import FakeApiServer, Fault

HI = Request(NS, "hi")


def _reconciler(
    client: Client, applier: Applier, *, interval_s: float, cap_s: float
) -> InstanceReconciler:
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph())
    return greeter_reconciler(
        client=client,
        registry=registry,
        applier=applier,
        watches=RecordingWatches(),
        options=InstanceOptions(requeue_interval_s=interval_s, requeue_max_interval_s=cap_s),
    )


async def test_a_refused_child_backs_off_doubling_up_to_the_cap(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    api.seed(GREETERS, greeter())
    reconciler = _reconciler(client, applier, interval_s=1.0, cap_s=8.0)
    api.inject(Fault("status", method="PATCH", path="/configmaps/hi", status=422, body=INVALID,
                     times=6))  # fmt: skip
    delays = [(await reconciler.reconcile(HI)).requeue_after_s for _ in range(6)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    live = await client.get(GREETERS, "hi", namespace=NS)
    assert live["status"]["state"] == "ERROR"


async def test_progress_resets_the_streak(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    api.seed(GREETERS, greeter())
    reconciler = _reconciler(client, applier, interval_s=1.0, cap_s=60.0)
    api.inject(Fault("status", method="PATCH", path="/configmaps/hi", status=422, body=INVALID,
                     times=3))  # fmt: skip
    assert [(await reconciler.reconcile(HI)).requeue_after_s for _ in range(3)] == [1.0, 2.0, 4.0]
    # The fault is gone: the child is created, which is progress, and the instance is looked at
    # again after the first delay; a pass with nothing left to do asks for no timer at all.
    assert (await reconciler.reconcile(HI)).requeue_after_s == 1.0
    assert (await reconciler.reconcile(HI)).requeue_after_s is None
    await client.delete(CONFIGMAPS, "hi", namespace=NS)
    api.inject(Fault("status", method="PATCH", path="/configmaps/hi", status=422, body=INVALID,
                     times=2))  # fmt: skip
    assert [(await reconciler.reconcile(HI)).requeue_after_s for _ in range(2)] == [1.0, 2.0]


async def test_zero_interval_means_watch_events_only(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    api.seed(GREETERS, greeter())
    reconciler = _reconciler(client, applier, interval_s=0.0, cap_s=300.0)
    api.inject(Fault("status", method="PATCH", path="/configmaps/hi", status=422, body=INVALID,
                     times=2))  # fmt: skip
    results = [await reconciler.reconcile(HI) for _ in range(2)]
    assert [r.requeue_after_s for r in results] == [None, None]
