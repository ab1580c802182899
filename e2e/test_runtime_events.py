"""Events built into kro.runtime, on the real control plane: a failed reconcile posts a Warning
Event on its object, retries of one error fold into that Event's count, and an error whose text
changes on every retry is combined into one Event after ten, as client-go's correlator does."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kro.runtime import GVR, Client, Manager, Object
from kro.testing.operator import run_operator
from kro.testing.pytest_plugin import ClusterHandle

CONFIGMAPS = GVR("", "v1", "configmaps")
EVENTS = GVR("", "v1", "events")


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


def failing_on(name: str, message: Any) -> Any:
    """An operator whose reconcile of ConfigMap `name` raises `message()`."""

    def setup(manager: Manager) -> None:
        async def reconcile(cm: Object) -> None:
            if cm["metadata"]["name"] == name:
                raise RuntimeError(message())

        manager.controller("picky").for_("ConfigMap").reconcile_objects(reconcile)

    return setup


async def warnings_about(client: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    selector = f"involvedObject.name={name},type=Warning"
    found = await client.list(EVENTS, namespace=namespace, field_selector=selector)
    return list(found.get("items") or [])


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_a_failed_reconcile_is_one_warning_event_with_a_count(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    setup = failing_on("broken", lambda: "the disk is full")
    async with run_operator(setup, client=client, namespace=ns) as op:
        created = await client.create(CONFIGMAPS, configmap("broken"), namespace=ns)

        async def counted() -> list[dict[str, Any]] | None:
            found = await warnings_about(client, ns, "broken")
            return found if found and found[0].get("count", 0) >= 3 else None

        (event,) = await op.wait_for(counted, what="one Warning counted three times")
        assert op.reconciles("picky", result="error") >= 3
    assert event["reason"] == "ReconcileFailed"
    assert event["message"] == "RuntimeError: the disk is full (will retry)"
    assert event["source"]["component"] == "picky"
    involved = event["involvedObject"]
    assert (involved["kind"], involved["name"], involved["uid"]) == (
        "ConfigMap",
        "broken",
        created["metadata"]["uid"],
    )
    assert await warnings_about(client, ns, "kube-root-ca.crt") == []


async def test_an_error_that_changes_every_time_is_combined_after_ten(
    client: Client, kube_namespace: str
) -> None:
    ns = kube_namespace
    attempt = itertools.count(1)
    setup = failing_on("flaky", lambda: f"conflict on attempt {next(attempt)}")
    async with run_operator(setup, client=client, namespace=ns) as op:
        await client.create(CONFIGMAPS, configmap("flaky"), namespace=ns)

        async def combined() -> dict[str, Any] | None:
            for event in await warnings_about(client, ns, "flaky"):
                if event["message"].startswith("(combined from similar events): "):
                    return event if event.get("count", 0) >= 2 else None
            return None

        await op.wait_for(combined, what="the combined Event counting", timeout_s=60)
    events = await warnings_about(client, ns, "flaky")
    assert len(events) == 10  # nine on their own, then the combined one
