"""A failed reconcile is told to the object's owner: a Warning Event on the object, reported as
the controller, its retries folded into one Event with a count (kro.runtime.failureevents);
and each controller gets a recorder named after it from the manager."""

from __future__ import annotations

from typing import Any

import pytest

from kro.runtime import GVR, Manager, Object, TerminalError
from kro.runtime.client import Client
from kro.testing.fakeapi import FakeApiServer
from kro.testing.operator import run_operator

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
EVENTS = GVR("", "v1", "events")


def configmap(name: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def events_about(api: FakeApiServer, name: str) -> list[dict[str, Any]]:
    return [e for e in api.objects(EVENTS, "ns") if e.get("involvedObject", {}).get("name") == name]


def failing(error: Exception, *, events: bool = True) -> Any:
    def setup(manager: Manager) -> None:
        async def reconcile(cm: Object) -> None:
            if cm["metadata"]["name"] == "bad":
                raise error

        builder = manager.controller("checker").for_("ConfigMap").failure_events(events)
        builder.reconcile_objects(reconcile)

    return setup


async def test_a_failing_reconcile_posts_one_warning_with_a_count(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("bad"))
    fake_api.seed(CM, configmap("good"))
    async with run_operator(failing(ValueError("spec.size must be even")), client=client) as op:

        def counted() -> dict[str, Any] | None:
            found = events_about(fake_api, "bad")
            return found[0] if found and found[0].get("count", 0) >= 3 else None

        event = await op.wait_for(counted, what="a Warning counted over three retries")
        assert op.reconciles("checker", result="error") >= 3
    assert len(events_about(fake_api, "bad")) == 1
    assert events_about(fake_api, "good") == []
    assert (event["type"], event["reason"]) == ("Warning", "ReconcileFailed")
    assert event["message"] == "ValueError: spec.size must be even (will retry)"
    assert event["source"] == {"component": "checker"}  # the controller's own recorder
    bad = fake_api.object(CM, "bad", "ns") or {}
    assert event["involvedObject"]["uid"] == bad["metadata"]["uid"]


async def test_a_terminal_error_says_it_is_not_retried(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("bad"))
    setup = failing(TerminalError("the image is not allowed"))
    async with run_operator(setup, client=client) as op:
        await op.wait_for(lambda: events_about(fake_api, "bad"), what="the Warning")
    [event] = events_about(fake_api, "bad")
    assert event["message"] == (
        "TerminalError: the image is not allowed (not retried until the object changes)"
    )
    assert event["count"] == 1


async def test_failure_events_can_be_turned_off_per_controller(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("bad"))
    async with run_operator(failing(ValueError("x"), events=False), client=client) as op:
        await op.wait_for_reconciles(3, controller="checker", result="error")
    assert events_about(fake_api, "bad") == []


async def test_a_recorder_named_after_the_controller_reaches_the_object(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("a"))

    def setup(manager: Manager) -> None:
        events = manager.event_recorder("greeter")

        async def greet(cm: Object) -> None:
            events.record(cm, "Normal", "Greeted", f"hello {cm['metadata']['name']}")

        manager.controller("greeter").for_("ConfigMap").reconcile_objects(greet)

    async with run_operator(setup, client=client, name="my-operator") as op:
        await op.wait_for(lambda: events_about(fake_api, "a"), what="the Normal Event")
        assert op.manager.events.options.reporting_controller == "my-operator"
    [event] = events_about(fake_api, "a")
    assert (event["type"], event["reason"], event["message"]) == ("Normal", "Greeted", "hello a")
    assert event["source"] == {"component": "greeter"}


async def test_events_recorded_before_a_stop_are_sent(
    fake_api: FakeApiServer, client: Client
) -> None:
    """The manager flushes its recorder after draining the controllers."""
    fake_api.seed(CM, configmap("bad"))
    async with run_operator(failing(ValueError("last words")), client=client) as op:
        await op.wait_for_reconciles(1, controller="checker", result="error")
    assert events_about(fake_api, "bad"), "the failure's Event was sent before the stop"
