"""Client.watch: events and bookmarks, and how each broken stream surfaces as an error."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from fakeapi_options import FAST

from kro.runtime._watch import decode_event
from kro.runtime.client import Client, WatchEvent
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import Gone, InternalError, RequestTimeout, TransportError
from kro.runtime.gvk import GVR
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")


def cm(name: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels}, "data": {"k": "v"}}


async def take(events: AsyncGenerator[WatchEvent, None], n: int) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    async with asyncio.timeout(5):
        async for event in events:
            out.append(event)
            if len(out) == n:
                break
    return out


async def test_watch_from_a_version_streams_later_changes(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, cm("before"))
    rv = str(fake_api.state.rv)
    events = client.watch(CM, namespace="default", resource_version=rv)
    async with contextlib.aclosing(events):
        consumer = asyncio.create_task(take(events, 3))
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        created = fake_api.seed(CM, cm("a"))
        fake_api.modify(CM, dict(created, data={"k": "w"}))
        fake_api.remove(CM, "a", "default")
        got = await consumer
    assert [(e.type, e.object["metadata"]["name"]) for e in got] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "a"),
    ]
    query = fake_api.watch_requests()[-1].query
    assert query["resourceVersion"] == rv
    assert query["allowWatchBookmarks"] == "true"
    assert query["timeoutSeconds"] == "300"


async def test_bookmarks_are_delivered(client: Client, fake_api: FakeApiServer) -> None:
    events = client.watch(CM, resource_version="0")
    async with contextlib.aclosing(events):
        consumer = asyncio.create_task(take(events, 1))
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        fake_api.seed(GVR("", "v1", "secrets"), {"metadata": {"name": "s", "namespace": "x"}})
        fake_api.send_bookmark()
        (event,) = await consumer
    assert event.type == "BOOKMARK"
    assert event.object["metadata"]["resourceVersion"] == str(fake_api.state.rv)


async def test_watch_ends_when_the_server_closes_cleanly(
    client: Client, fake_api: FakeApiServer
) -> None:
    async def drain() -> int:
        return len([e async for e in client.watch(CM, resource_version="0")])

    consumer = asyncio.create_task(drain())
    await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
    fake_api.end_watches()
    assert await asyncio.wait_for(consumer, timeout=5) == 0


async def test_error_event_410_raises_gone(client: Client, fake_api: FakeApiServer) -> None:
    fake_api.seed(CM, cm("a"))
    fake_api.seed(CM, cm("b"))
    fake_api.compact()  # the log now starts after version 2; version 1 is too old
    with pytest.raises(Gone) as info:
        await take(client.watch(CM, resource_version="1"), 1)
    assert info.value.status == 410


async def test_http_410_raises_gone(client: Client, fake_api: FakeApiServer) -> None:
    fake_api.inject(Fault("gone", watch=True, http=True))
    with pytest.raises(Gone):
        await take(client.watch(CM, resource_version="1"), 1)


async def test_connection_dropped_mid_event_raises_transport_error(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, cm("a"))
    fake_api.inject(Fault("drop", watch=True, after_events=1))
    seen: list[WatchEvent] = []

    async def drain() -> None:
        async with asyncio.timeout(5):
            async for event in client.watch(CM, resource_version="0"):
                seen.append(event)

    with pytest.raises(TransportError):
        await drain()
    assert [e.type for e in seen] == ["ADDED"]


async def test_silent_stream_raises_request_timeout(fake_api: FakeApiServer) -> None:
    fake_api.inject(Fault("stall", watch=True))
    options = dataclasses.replace(FAST, watch_idle_timeout_s=0.2)
    async with Client.from_config(ConnectionConfig(server=fake_api.url), options) as client:
        with pytest.raises(RequestTimeout):
            await take(client.watch(CM), 1)


async def test_text_error_at_watch_start_raises_api_error(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.inject(Fault("status", watch=True, status=500, body="etcd unavailable"))
    with pytest.raises(InternalError, match="etcd unavailable"):
        await take(client.watch(CM), 1)


async def test_metadata_only_watch_asks_for_partial_object_metadata(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, cm("a"))
    (event,) = await take(client.watch(CM, resource_version="0", metadata_only=True), 1)
    assert event.object["kind"] == "PartialObjectMetadata"
    assert "data" not in event.object
    accept = fake_api.watch_requests()[-1].headers["accept"]
    assert accept.startswith("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")


async def test_selectors_filter_and_label_changes_become_add_or_delete(
    client: Client, fake_api: FakeApiServer
) -> None:
    events = client.watch(CM, resource_version="0", label_selector="app=web")
    async with contextlib.aclosing(events):
        consumer = asyncio.create_task(take(events, 2))
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        other = fake_api.seed(CM, cm("a"))
        fake_api.modify(CM, dict(other, metadata={**other["metadata"], "labels": {"app": "web"}}))
        current = fake_api.object(CM, "a", "default")
        assert current is not None
        fake_api.modify(CM, dict(current, metadata={**current["metadata"], "labels": {}}))
        got = await consumer
    assert [e.type for e in got] == ["ADDED", "DELETED"]


async def test_lines_split_across_chunks_and_large_events_are_reassembled(
    client: Client, fake_api: FakeApiServer
) -> None:
    big = cm("big")
    big["data"] = {"blob": "x" * (3 * 2**20)}  # larger than aiohttp's readline limit
    fake_api.seed(CM, big)
    (event,) = await take(client.watch(CM, resource_version="0"), 1)
    assert len(event.object["data"]["blob"]) == 3 * 2**20


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"not json", TransportError),
        (b"[1, 2]", TransportError),
        (b'{"type": "WEIRD", "object": {}}', TransportError),
        (b'{"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}', Gone),
        (b'{"type": "ERROR", "object": {"code": 500, "message": "x"}}', InternalError),
    ],
    ids=["text", "not-an-object", "unknown-type", "error-410", "error-500"],
)
def test_decode_event_rejects_what_is_not_an_event(line: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        decode_event(line)
