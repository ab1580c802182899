"""Deleting an instance (reference §1.L): children go first, then kro's finalizer; whatever
blocks that is shown on the instance as `deletion blocked: <error>` (D-06), not only logged."""

from __future__ import annotations

import pytest
from controllers_fakes import (
    CONFIGMAPS,
    GREETERS,
    NS,
    RecordingWatches,
    greeter,
    greeter_graph,
    greeter_reconciler,
)

from kro.applyset import Applier
from kro.controllers.instance import InstanceReconciler, should_enqueue_update
from kro.controllers.instance.reconciler import ReconcileFailed
from kro.controllers.registry import RevisionRegistry
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.reconcile import Request
from kro.testing.fakeapi import FakeApiServer, Fault, forbidden

HI = Request(NS, "hi")
FORBIDDEN = forbidden("configmaps")


async def _active(api: FakeApiServer, client: Client, applier: Applier) -> InstanceReconciler:
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph())
    api.seed(GREETERS, greeter())
    reconciler = greeter_reconciler(
        client=client,
        registry=registry,
        applier=applier,
        watches=RecordingWatches(),
    )
    await reconciler.reconcile(HI)
    await client.get(CONFIGMAPS, "hi", namespace=NS)
    return reconciler


async def test_children_go_before_the_finalizer(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    reconciler = await _active(api, client, applier)
    await client.delete(GREETERS, "hi", namespace=NS)
    await reconciler.reconcile(HI)  # deletes the only wave
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "hi", namespace=NS)
    live = await client.get(GREETERS, "hi", namespace=NS)
    assert live["status"]["state"] == "DELETING"
    await reconciler.reconcile(HI)  # nothing left: the finalizer goes
    with pytest.raises(NotFound):
        await client.get(GREETERS, "hi", namespace=NS)


async def test_a_forbidden_list_is_reported_as_deletion_blocked(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    reconciler = await _active(api, client, applier)
    await client.delete(GREETERS, "hi", namespace=NS)
    api.inject(Fault("status", method="GET", path="/configmaps", status=403, body=FORBIDDEN))
    with pytest.raises(ReconcileFailed):
        await reconciler.reconcile(HI)

    live = await client.get(GREETERS, "hi", namespace=NS)
    assert live["status"]["state"] == "DELETING"
    (resources_ready,) = [c for c in live["status"]["conditions"] if c["type"] == "ResourcesReady"]
    assert resources_ready["status"] == "Unknown"
    assert resources_ready["reason"] == "UnderDeletion"
    assert resources_ready["message"].startswith("deletion blocked: ")
    assert "forbidden" in resources_ready["message"]
    assert live["metadata"]["finalizers"] == ["kro.run/finalizer"]

    await reconciler.reconcile(HI)  # allowed again: the deletion proceeds
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "hi", namespace=NS)


@pytest.mark.parametrize(
    ("old", "new", "enqueued"),
    [
        ({"generation": 1}, {"generation": 1, "deletionTimestamp": "t"}, True),
        ({"generation": 1}, {"generation": 2, "deletionTimestamp": "t"}, True),
        (
            {"generation": 1, "deletionTimestamp": "t"},
            {"generation": 1, "deletionTimestamp": "t"},
            False,
        ),
        ({"generation": 1}, {"generation": 1, "labels": {"a": "b"}}, False),
    ],
    ids=["deletion-started", "deletion-with-new-generation", "still-deleting", "labels-only"],
)
def test_the_start_of_a_deletion_is_always_seen(
    old: dict[str, object], new: dict[str, object], enqueued: bool
) -> None:
    """The API server bumps the generation when deletion starts; kro does not depend on it."""
    assert should_enqueue_update({"metadata": old}, {"metadata": new}) is enqueued
