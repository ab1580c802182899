"""EventRecorder: Events for an object, folded repeats, spam limits, and it never raises."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fakes_control import FakeKubeClient

from kro.runtime.clock import FakeClock
from kro.runtime.errors import Forbidden
from kro.runtime.events import CORE_EVENTS, EVENTS_V1, EventRecorder, EventRecorderOptions

pytestmark = pytest.mark.usefixtures("no_task_leaks")

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

APP = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "7"},
}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u-2"}}


class Harness:
    def __init__(self, **options: Any) -> None:
        self.clock = FakeClock()
        self.client = FakeKubeClient()
        opts: dict[str, Any] = {"reporting_controller": "kro.run/test", "reporting_instance": "p-0"}
        opts.update(options)
        self.recorder = EventRecorder(
            self.client,
            EventRecorderOptions(**opts),
            clock=self.clock,
            wall_clock=lambda: EPOCH + timedelta(seconds=self.clock.now()),
        )

    def events(self) -> list[dict[str, Any]]:
        return list(self.client.objects.values())

    def calls(self, verb: str) -> int:
        return sum(1 for c in self.client.calls if c[0] == verb)

    async def settle(self) -> None:
        """Wait until the sender has handled everything recorded so far."""

        await asyncio.wait_for(self.recorder.flush(), timeout=2.0)


@asynccontextmanager
async def sending(h: Harness) -> AsyncIterator[None]:
    task = asyncio.create_task(h.recorder.run())
    try:
        yield
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_events_v1_event_regards_the_object() -> None:
    h = Harness()
    async with sending(h):
        h.recorder.record(APP, "Warning", "ApplyFailed", "quota exceeded")
        await h.settle()
    [event] = h.events()
    assert (event["apiVersion"], event["kind"]) == ("events.k8s.io/v1", "Event")
    assert event["metadata"]["namespace"] == "shop"
    assert event["metadata"]["name"].startswith("web.")
    assert event["regarding"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "shop",
        "name": "web",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert (event["type"], event["reason"], event["note"]) == (
        "Warning",
        "ApplyFailed",
        "quota exceeded",
    )
    assert event["action"] == "ApplyFailed"
    assert event["eventTime"] == "2026-01-01T00:00:00.000000Z"
    assert (event["reportingController"], event["reportingInstance"]) == ("kro.run/test", "p-0")


async def test_core_v1_event_has_count_and_timestamps() -> None:
    h = Harness(api="v1")
    async with sending(h):
        h.recorder.record(APP, "Normal", "Synced", "ok", action="Reconcile")
        await h.settle()
    key = next(iter(h.client.objects))
    assert key[0] == CORE_EVENTS
    event = h.client.objects[key]
    assert event["involvedObject"]["name"] == "web"
    assert (event["message"], event["count"], event["action"]) == ("ok", 1, "Reconcile")
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["source"] == {"component": "kro.run/test"}


async def test_cluster_scoped_objects_get_events_in_default() -> None:
    h = Harness()
    async with sending(h):
        h.recorder.record(NODE, "Normal", "Seen", "hello")
        await h.settle()
    assert h.events()[0]["metadata"]["namespace"] == "default"


async def test_repeats_within_the_window_update_one_series() -> None:
    h = Harness()
    async with sending(h):
        h.recorder.record(APP, "Warning", "ApplyFailed", "quota exceeded")
        await h.settle()
        await h.clock.advance(10.0)
        h.recorder.record(APP, "Warning", "ApplyFailed", "quota exceeded")
        h.recorder.record(APP, "Warning", "ApplyFailed", "quota exceeded")
        await h.settle()
    [event] = h.events()
    assert event["series"] == {"count": 3, "lastObservedTime": "2026-01-01T00:00:10.000000Z"}
    assert h.calls("create") == 1


async def test_core_v1_repeats_bump_count() -> None:
    h = Harness(api="v1")
    async with sending(h):
        h.recorder.record(APP, "Warning", "ApplyFailed", "quota exceeded")
        await h.settle()
        await h.clock.advance(5.0)
        h.recorder.record(APP, "Warning", "ApplyFailed", "quota exceeded")
        await h.settle()
    [event] = h.events()
    assert (event["count"], event["lastTimestamp"]) == (2, "2026-01-01T00:00:05Z")


async def test_a_different_message_is_a_new_event() -> None:
    h = Harness()
    async with sending(h):
        h.recorder.record(APP, "Warning", "ApplyFailed", "quota exceeded")
        h.recorder.record(APP, "Warning", "ApplyFailed", "forbidden")
        await h.settle()
    assert h.calls("create") == 2


async def test_a_repeat_after_the_window_starts_a_new_event() -> None:
    h = Harness(series_window_s=60.0)
    async with sending(h):
        h.recorder.record(APP, "Normal", "Synced", "ok")
        await h.settle()
        await h.clock.advance(61.0)
        h.recorder.record(APP, "Normal", "Synced", "ok")
        await h.settle()
    assert h.calls("create") == 2


async def test_an_expired_event_is_recreated_on_repeat() -> None:
    h = Harness()
    async with sending(h):
        h.recorder.record(APP, "Normal", "Synced", "ok")
        await h.settle()
        h.client.objects.clear()  # the Event TTL passed
        h.recorder.record(APP, "Normal", "Synced", "ok")
        await h.settle()
    assert h.calls("create") == 2
    assert len(h.events()) == 1


async def test_spam_beyond_the_burst_is_dropped_per_object() -> None:
    h = Harness(burst=2)
    async with sending(h):
        for i in range(5):
            h.recorder.record(APP, "Normal", "Step", f"step {i}")
        h.recorder.record(NODE, "Normal", "Step", "other object")
        await h.settle()
    assert h.calls("create") == 3  # two for APP, one for NODE


async def test_the_spam_filter_refills_over_time() -> None:
    h = Harness(burst=1, refill_interval_s=300.0)
    async with sending(h):
        h.recorder.record(APP, "Normal", "Step", "one")
        h.recorder.record(APP, "Normal", "Step", "two")
        await h.settle()
        await h.clock.advance(300.0)
        h.recorder.record(APP, "Normal", "Step", "three")
        await h.settle()
    assert sorted(e["note"] for e in h.events()) == ["one", "three"]


async def test_an_api_failure_is_logged_not_raised() -> None:
    h = Harness()
    h.client.fail_next("create", Forbidden(status=403, reason="Forbidden", message="no"))
    async with sending(h):
        h.recorder.record(APP, "Normal", "Synced", "lost")
        h.recorder.record(APP, "Normal", "Synced", "kept")
        await h.settle()
    assert [e["note"] for e in h.events()] == ["kept"]


async def test_record_never_raises_even_for_a_broken_object() -> None:
    h = Harness()
    h.recorder.record({"metadata": None}, "Normal", "Odd", "no kind")
    h.recorder.record("not an object", "Normal", "Odd", "x")  # type: ignore[arg-type]


async def test_a_full_buffer_drops_new_events() -> None:
    h = Harness(buffer_size=1)
    h.recorder.record(APP, "Normal", "A", "first")
    h.recorder.record(APP, "Normal", "B", "second")
    assert h.recorder.pending == 1


async def test_long_notes_are_cut_to_the_api_limit() -> None:
    h = Harness()
    async with sending(h):
        h.recorder.record(APP, "Warning", "Big", "é" * 2000)
        await h.settle()
    assert len(h.events()[0]["note"].encode()) <= 1024


def test_events_v1_is_the_default_api() -> None:
    assert EVENTS_V1.group == "events.k8s.io"


async def test_a_named_recorder_reports_as_its_controller_through_the_same_sender() -> None:
    h = Harness(api="v1", burst=2)
    website = h.recorder.named("website")
    async with sending(h):
        website.record(APP, "Warning", "ReconcileFailed", "boom")
        h.recorder.record(APP, "Normal", "Synced", "ok")
        website.record(APP, "Normal", "Third", "over the object's burst")
        await h.settle()
    by_reason = {e["reason"]: e for e in h.events()}
    assert set(by_reason) == {"ReconcileFailed", "Synced"}  # one spam filter per object
    assert by_reason["ReconcileFailed"]["source"] == {"component": "website"}
    assert by_reason["ReconcileFailed"]["reportingComponent"] == "website"
    assert by_reason["Synced"]["source"] == {"component": "kro.run/test"}


@pytest.mark.parametrize(
    ("name", "reported"),
    [
        ("website", "website"),
        ("deployments.apps", "deployments.apps"),
        ("Example.COM/my controller!", "example.com/my-controller"),
        ("x" * 80, "x" * 63),
        ("::", "controller"),
    ],
)
def test_reporting_names_are_qualified_names(name: str, reported: str) -> None:
    h = Harness()
    assert h.recorder.named(name).reporting_controller == reported


async def test_near_repeats_are_combined_into_one_event_with_a_count() -> None:
    """client-go's EventAggregator: the 10th different message for one object and reason
    within 10 minutes, and every one after it, fold into one combined Event."""
    h = Harness(api="v1")
    async with sending(h):
        for i in range(13):
            h.recorder.record(APP, "Warning", "ReconcileFailed", f"conflict at version {i}")
        await h.settle()
    events = h.events()
    assert len(events) == 10
    [combined] = [e for e in events if e["message"].startswith("(combined from similar")]
    assert combined["message"] == "(combined from similar events): conflict at version 9"
    assert combined["count"] == 4
    assert h.calls("create") == 10


async def test_the_aggregation_window_starts_again_after_ten_minutes() -> None:
    h = Harness(api="v1", aggregate_after=2)
    async with sending(h):
        h.recorder.record(APP, "Warning", "Failed", "one")
        h.recorder.record(APP, "Warning", "Failed", "two")  # combined
        await h.settle()
        await h.clock.advance(601.0)
        h.recorder.record(APP, "Warning", "Failed", "three")  # a new window: its own Event
        await h.settle()
    messages = sorted(e["message"] for e in h.events())
    assert messages == ["(combined from similar events): two", "one", "three"]


async def test_a_typed_object_is_regarded_as_its_dict() -> None:
    from kro.runtime.gvk import GVK
    from kro.runtime.typed import KubeModel

    class Site(KubeModel):
        gvk = GVK("example.com", "v1", "Site")

    site = Site.from_object({"metadata": {"name": "shop", "namespace": "web", "uid": "u-9"}})
    h = Harness()
    async with sending(h):
        h.recorder.record(site, "Normal", "Synced", "ok")
        await h.settle()
    [event] = h.events()
    assert event["regarding"] == {
        "apiVersion": "example.com/v1",
        "kind": "Site",
        "namespace": "web",
        "name": "shop",
        "uid": "u-9",
    }
