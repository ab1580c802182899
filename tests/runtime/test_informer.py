"""Informer: list then watch into the store, handler fan-out, resume from the last version,
relist with synthesized deletes on 410, and recovery from broken or silent watches."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import orjson
import pytest
from fakeapi_options import FAST

from kro.runtime.client import Client
from kro.runtime.clock import FakeClock
from kro.runtime.config import ConnectionConfig
from kro.runtime.gvk import GVR
from kro.runtime.informer import SHARED_VALUE_MAX_LEN, Informer, strip_managed_fields
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
Event = tuple[str, str]  # (kind, key)


class Recorder:
    """An EventHandler that records (kind, key) and lets tests wait for a condition."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.objects: list[tuple[str, Any]] = []
        self._changed = asyncio.Event()

    def _record(self, kind: str, obj: Any) -> None:
        meta = obj["metadata"]
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        self.events.append((kind, key))
        self.objects.append((kind, obj))
        self._changed.set()

    def on_add(self, obj: Any) -> None:
        self._record("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._record("update", new)

    def on_delete(self, obj: Any) -> None:
        self._record("delete", obj)

    async def wait_for(
        self, predicate: Callable[[list[Event]], bool], deadline_s: float = 5
    ) -> None:
        async with asyncio.timeout(deadline_s):
            while not predicate(self.events):
                self._changed.clear()
                await self._changed.wait()

    async def wait_for_event(self, event: Event) -> None:
        await self.wait_for(lambda evs: event in evs)


def cm(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "data": data}


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(informer.run(), name="informer-under-test")
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def make_informer(client: Client, **kwargs: Any) -> tuple[Informer, Recorder]:
    kwargs.setdefault("clock", FakeClock())
    informer = Informer(client, CM, **kwargs)
    recorder = Recorder()
    informer.add_handler(recorder)
    return informer, recorder


async def test_initial_list_fills_the_store_and_syncs(
    client: Client, fake_api: FakeApiServer
) -> None:
    for i in range(5):
        fake_api.seed(CM, cm(f"c{i}"))
    informer, recorder = make_informer(client, page_size=2)
    assert not informer.has_synced()
    async with running(informer):
        assert await informer.wait_for_sync(timeout_s=5)
        assert sorted(informer.store.keys()) == [f"default/c{i}" for i in range(5)]
        assert [e[0] for e in recorder.events] == ["add"] * 5
        assert informer.last_resource_version == str(fake_api.state.rv)


async def test_watch_events_reach_store_and_handlers_in_order(
    client: Client, fake_api: FakeApiServer
) -> None:
    informer, recorder = make_informer(client)
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        created = fake_api.seed(CM, cm("a", x="1"))
        fake_api.modify(CM, dict(created, data={"x": "2"}))
        fake_api.remove(CM, "a", "default")
        await recorder.wait_for(lambda evs: len(evs) == 3)
    assert recorder.events == [
        ("add", "default/a"),
        ("update", "default/a"),
        ("delete", "default/a"),
    ]
    assert informer.store.get("default/a") is None


async def test_watch_starts_at_the_list_version_with_bookmarks(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, cm("a"))
    informer, _ = make_informer(client)
    async with running(informer):
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
    query = fake_api.watch_requests()[0].query
    assert query["resourceVersion"] == "1"
    assert query["allowWatchBookmarks"] == "true"
    assert 300 <= int(query["timeoutSeconds"]) < 600


async def test_default_transform_strips_managed_fields(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, cm("a"))
    assert fake_api.object(CM, "a", "default")["metadata"]["managedFields"]  # type: ignore[index]
    informer, recorder = make_informer(client)
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        fake_api.seed(CM, cm("b"))
        await recorder.wait_for_event(("add", "default/b"))
    for _, obj in recorder.objects:
        assert "managedFields" not in obj["metadata"]


def _decoded_child(name: str) -> dict[str, Any]:
    """A child's metadata as the watch decoder makes it: fresh strings for every value."""
    return cast(
        dict[str, Any],
        orjson.loads(
            orjson.dumps(
                {
                    "apiVersion": "meta.k8s.io/v1",
                    "kind": "PartialObjectMetadata",
                    "metadata": {
                        "name": name,
                        "namespace": "team-a",
                        "uid": f"uid-{name}",
                        "labels": {"kro.run/owned": "true", "kro.run/instance-name": "app-1"},
                        "annotations": {"digest": "x" * (SHARED_VALUE_MAX_LEN + 1)},
                        "managedFields": [{"manager": "kro"}],
                    },
                }
            )
        ),
    )


def test_default_transform_shares_repeated_metadata_strings() -> None:
    """Equal namespaces, kinds and short label/annotation values of two cached objects are one
    string object; unique and long values are left as decoded, and no value changes."""
    a, b = _decoded_child("a"), _decoded_child("b")
    expected = copy.deepcopy(a)
    del expected["metadata"]["managedFields"]
    assert a["metadata"]["namespace"] is not b["metadata"]["namespace"]  # as decoded
    a, b = strip_managed_fields(a), strip_managed_fields(b)
    assert a == expected
    meta_a, meta_b = a["metadata"], b["metadata"]
    assert meta_a["namespace"] is meta_b["namespace"]
    assert a["kind"] is b["kind"]
    assert a["apiVersion"] is b["apiVersion"]
    for key in ("kro.run/owned", "kro.run/instance-name"):
        assert meta_a["labels"][key] is meta_b["labels"][key]
    assert meta_a["annotations"]["digest"] is not meta_b["annotations"]["digest"]
    assert meta_a["annotations"]["digest"] == meta_b["annotations"]["digest"]


async def test_custom_transform_and_metadata_only(client: Client, fake_api: FakeApiServer) -> None:
    fake_api.seed(CM, cm("a", x="1"))

    def tag(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["tagged"] = True
        return obj

    informer, _ = make_informer(client, metadata_only=True, transform=tag)
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
    obj = informer.store.get("default/a")
    assert obj is not None
    assert obj["kind"] == "PartialObjectMetadata"
    assert obj["metadata"]["tagged"] is True
    assert "data" not in obj


async def test_bookmarks_move_the_resume_point(client: Client, fake_api: FakeApiServer) -> None:
    informer, _ = make_informer(client)
    async with running(informer):
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        fake_api.seed(GVR("", "v1", "secrets"), cm("unrelated"))  # moves the global version
        fake_api.send_bookmark()
        fake_api.end_watches()  # same stream, so the bookmark is read before the close
        await asyncio.wait_for(
            fake_api.wait_for(lambda: len(fake_api.watch_requests()) == 2), timeout=5
        )
    assert fake_api.watch_requests()[1].query["resourceVersion"] == "1"


async def test_watch_resumes_from_last_version_after_a_drop(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, cm("a"))
    fake_api.inject(Fault("drop", watch=True, after_events=1))
    informer, recorder = make_informer(client)
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        fake_api.seed(CM, cm("b"))  # delivered, then the connection drops mid-event
        await recorder.wait_for_event(("add", "default/b"))
        clock = informer._clock
        assert isinstance(clock, FakeClock)
        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)  # backing off
        fake_api.seed(CM, cm("c"))  # happens while disconnected
        await clock.advance(1.0)
        await recorder.wait_for_event(("add", "default/c"))
    watches = fake_api.watch_requests()
    assert watches[1].query["resourceVersion"] == "2"
    assert len([r for r in fake_api.requests if not r.is_watch]) == 1  # never relisted


async def test_410_relists_and_synthesizes_deletes(client: Client, fake_api: FakeApiServer) -> None:
    for name in ("keep", "change", "vanish"):
        fake_api.seed(CM, cm(name, v="1"))
    informer, recorder = make_informer(client)
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        fake_api.inject(Fault("gone", watch=True))
        fake_api.send_bookmark()
        fake_api.end_watches()  # the next watch gets an ERROR 410
        # while the watch is down: one deleted, one changed, one added
        fake_api.remove(CM, "vanish", "default")
        current = fake_api.object(CM, "change", "default")
        assert current is not None
        fake_api.modify(CM, dict(current, data={"v": "2"}))
        fake_api.seed(CM, cm("new"))
        await recorder.wait_for_event(("add", "default/new"))
    after_sync = recorder.events[3:]
    assert sorted(after_sync) == [
        ("add", "default/new"),
        ("delete", "default/vanish"),
        ("update", "default/change"),
    ]
    assert sorted(informer.store.keys()) == ["default/change", "default/keep", "default/new"]
    vanished = next(o for kind, o in recorder.objects if kind == "delete")
    assert vanished["data"] == {"v": "1"}  # the last known state


async def test_silent_watch_is_reconnected_without_backoff(fake_api: FakeApiServer) -> None:
    options = dataclasses.replace(FAST, watch_idle_timeout_s=0.1)
    async with Client.from_config(ConnectionConfig(server=fake_api.url), options) as client:
        fake_api.inject(Fault("stall", watch=True))
        informer, recorder = make_informer(client)
        async with running(informer):
            await asyncio.wait_for(
                fake_api.wait_for(lambda: len(fake_api.watch_requests()) >= 2), timeout=5
            )
            await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
            fake_api.seed(CM, cm("a"))
            await recorder.wait_for_event(("add", "default/a"))


async def test_list_failure_backs_off_on_the_clock_then_retries(
    fake_api: FakeApiServer,
) -> None:
    options = dataclasses.replace(FAST, max_retries=0)
    fake_api.inject(Fault("status", watch=False, status=403, body="forbidden", times=2))
    async with Client.from_config(ConnectionConfig(server=fake_api.url), options) as client:
        clock = FakeClock()
        informer, _ = make_informer(client, clock=clock, backoff_base_s=1.0)
        async with running(informer):
            await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
            assert 0.5 <= (clock.next_deadline or 0) <= 1.0
            await clock.advance(1.0)
            await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
            assert 1.0 + 1.0 <= (clock.next_deadline or 0) <= 1.0 + 2.0
            assert not informer.has_synced()
            await clock.advance(2.0)
            assert await informer.wait_for_sync(timeout_s=5)


async def test_wait_for_sync_times_out_on_the_clock(client: Client) -> None:
    clock = FakeClock()
    informer, _ = make_informer(client, clock=clock)  # never started: cannot sync
    waiter = asyncio.create_task(informer.wait_for_sync(timeout_s=10))
    await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
    await clock.advance(10)
    assert await asyncio.wait_for(waiter, timeout=5) is False


async def test_resync_redelivers_every_object_as_update(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, cm("a"))
    clock = FakeClock()
    informer, recorder = make_informer(client, clock=clock, resync_period_s=30)
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
        await clock.advance(30)
        await recorder.wait_for_event(("update", "default/a"))


async def test_a_failing_handler_does_not_stop_the_others(
    client: Client, fake_api: FakeApiServer
) -> None:
    class Broken:
        def on_add(self, obj: Any) -> None:
            raise RuntimeError("handler bug")

        def on_update(self, old: Any, new: Any) -> None:
            raise RuntimeError("handler bug")

        def on_delete(self, obj: Any) -> None:
            raise RuntimeError("handler bug")

    fake_api.seed(CM, cm("a"))
    informer = Informer(client, CM, clock=FakeClock())
    informer.add_handler(Broken())
    recorder = Recorder()
    informer.add_handler(recorder)
    async with running(informer):
        await recorder.wait_for_event(("add", "default/a"))


async def test_a_late_handler_gets_the_cache_replayed_and_can_be_removed(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, cm("a"))
    informer, first = make_informer(client)
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
        late = Recorder()
        informer.add_handler(late)
        assert late.events == [("add", "default/a")]
        informer.remove_handler(first)
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        fake_api.seed(CM, cm("b"))
        await late.wait_for_event(("add", "default/b"))
    assert ("add", "default/b") not in first.events


async def test_namespace_and_selector_scope_the_informer(
    client: Client, fake_api: FakeApiServer
) -> None:
    fake_api.seed(CM, {"metadata": {"name": "a", "namespace": "x", "labels": {"app": "web"}}})
    fake_api.seed(CM, {"metadata": {"name": "b", "namespace": "x"}})
    fake_api.seed(CM, {"metadata": {"name": "c", "namespace": "y", "labels": {"app": "web"}}})
    informer, _ = make_informer(client, namespace="x", label_selector="app=web")
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
    assert informer.store.keys() == ["x/a"]
    assert fake_api.requests[0].path == "/api/v1/namespaces/x/configmaps"


async def test_a_watch_closed_at_once_with_nothing_backs_off(
    client: Client, fake_api: FakeApiServer
) -> None:
    clock = FakeClock()
    informer, _ = make_informer(client, clock=clock)
    async with running(informer):
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        fake_api.end_watches()
        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
        assert len(fake_api.watch_requests()) == 1
        await clock.advance(1.0)
        await asyncio.wait_for(
            fake_api.wait_for(lambda: len(fake_api.watch_requests()) == 2), timeout=5
        )


async def test_running_twice_at_once_is_refused(client: Client) -> None:
    informer, _ = make_informer(client)
    async with running(informer):
        await informer.wait_for_sync(timeout_s=5)
        with pytest.raises(RuntimeError, match="already running"):
            await informer.run()
