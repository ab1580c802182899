"""Informer: a list or watch the API server refuses (403) is kept as `refused` until the same
call succeeds, the cache stops vouching for objects meanwhile, and state listeners hear of the
first list and of every refusal starting or ending."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable

import pytest
from fakeapi_options import FAST

from kro.runtime.client import Client
from kro.runtime.clock import FakeClock
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import Forbidden
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.testing.fakeapi import FakeApiServer, Fault, forbidden
from kro.testing.waiting import eventually

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
FORBIDDEN = forbidden("configmaps")


@pytest.fixture
async def no_retries(fake_api: FakeApiServer) -> AsyncIterator[Client]:
    options = dataclasses.replace(FAST, max_retries=0)
    async with Client.from_config(ConnectionConfig(server=fake_api.url), options) as client:
        yield client


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[None]:
    task = asyncio.create_task(informer.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def until(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    async def probe() -> bool:
        return check()

    await eventually(probe, what="the condition", timeout_s=timeout_s, interval_s=0.01)


async def test_a_refused_list_is_reported_at_once_and_ends_with_the_first_list(
    no_retries: Client, fake_api: FakeApiServer
) -> None:
    fake_api.inject(Fault("status", watch=False, status=403, body=FORBIDDEN, times=1))
    clock = FakeClock()
    informer = Informer(no_retries, CM, clock=clock)
    heard: list[tuple[bool, bool]] = []
    informer.add_state_listener(lambda i: heard.append((i.has_synced(), i.refused is not None)))
    async with running(informer):
        # Waiting with `until_refused` ends at the refusal: the 30 s deadline never passes.
        assert await asyncio.wait_for(
            informer.wait_for_sync(30.0, until_refused=True), timeout=5
        ) is False
        refused = informer.refused
        assert isinstance(refused, Forbidden)
        assert "configmaps is forbidden" in str(refused)
        assert heard == [(False, True)]
        assert not informer.covers(None)

        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
        await clock.advance(1.0)  # the retry: allowed now
        assert await informer.wait_for_sync(timeout_s=5)
        await until(lambda: informer.refused is None)
        assert heard == [(False, True), (True, False)]
        assert informer.covers(None)


async def test_the_first_list_is_heard_once_when_nothing_is_refused(
    client: Client, fake_api: FakeApiServer
) -> None:
    informer = Informer(client, CM, clock=FakeClock())
    heard: list[bool] = []
    informer.add_state_listener(lambda i: heard.append(i.has_synced()))
    async with running(informer):
        assert await informer.wait_for_sync(5.0, until_refused=True)
        assert heard == [True]
        assert informer.refused is None


async def test_a_refused_watch_stops_the_cache_vouching_until_a_watch_is_accepted(
    no_retries: Client, fake_api: FakeApiServer
) -> None:
    fake_api.inject(Fault("status", watch=True, status=403, body=FORBIDDEN, times=1))
    clock = FakeClock()
    informer = Informer(no_retries, CM, clock=clock)
    heard: list[bool] = []
    informer.add_state_listener(lambda i: heard.append(i.refused is not None))
    async with running(informer):
        assert await informer.wait_for_sync(timeout_s=5)
        await until(lambda: informer.refused is not None)
        assert informer.has_synced()  # what it listed stays, but no longer follows the server
        assert not informer.covers(None)
        assert heard == [False, True]  # the first list, then the refusal

        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
        await clock.advance(1.0)  # the watch is retried and accepted
        await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
        fake_api.seed(CM, {"metadata": {"name": "a", "namespace": "default"}})
        await until(lambda: informer.refused is None)
        assert informer.covers(None)
        assert heard == [False, True, False]
        assert informer.store.get_by("default", "a") is not None


async def test_a_listener_can_be_removed(client: Client) -> None:
    informer = Informer(client, CM, clock=FakeClock())
    heard: list[Informer] = []
    informer.add_state_listener(heard.append)
    informer.remove_state_listener(heard.append)
    informer.remove_state_listener(heard.append)  # twice: no error
    async with running(informer):
        assert await informer.wait_for_sync(timeout_s=5)
    assert heard == []
