"""InformerCache, the one informer registry: one informer per key, shared by the informers held
for the cache's life and those acquired and released (ref-counted, stopped with the last
release); only the ones held for good hold readiness back; reads are answered only by informers
that hold whole objects."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.clock import FakeClock
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")


async def test_same_key_shares_one_informer_and_one_watch(
    client: Client, fake_api: FakeApiServer
) -> None:
    cache = InformerCache(client, clock=FakeClock())
    first = await cache.acquire(CM)
    second = await cache.acquire(CM)
    assert first is second
    assert await first.wait_for_sync(timeout_s=5)
    await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
    assert len(fake_api.watchers) == 1
    await cache.close()


async def test_different_keys_get_different_informers(client: Client) -> None:
    cache = InformerCache(client, clock=FakeClock())
    full = await cache.acquire(CM)
    meta = await cache.acquire(CM, metadata_only=True)
    scoped = await cache.acquire(CM, namespace="x")
    assert len({id(full), id(meta), id(scoped)}) == 3
    assert meta.metadata_only
    assert scoped.namespace == "x"
    assert len(cache.informers()) == 3
    await cache.close()


async def test_release_stops_the_informer_at_zero_refs(
    client: Client, fake_api: FakeApiServer
) -> None:
    cache = InformerCache(client, clock=FakeClock())
    informer = await cache.acquire(CM)
    await cache.acquire(CM)
    await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
    await cache.release(informer)
    assert cache.informers() == [informer]
    await cache.release(informer)
    assert cache.informers() == []
    await asyncio.wait_for(fake_api.wait_for(lambda: not fake_api.watchers), timeout=5)
    again = await cache.acquire(CM)
    assert again is not informer
    await cache.close()


async def test_release_of_a_foreign_informer_is_an_error(client: Client) -> None:
    cache = InformerCache(client)
    with pytest.raises(ValueError, match="not acquired"):
        await cache.release(Informer(client, CM))
    await cache.close()


async def test_run_stops_everything_when_cancelled(client: Client) -> None:
    cache = InformerCache(client, clock=FakeClock())
    runner = asyncio.create_task(cache.run())
    informer = await cache.acquire(SECRETS)
    assert await informer.wait_for_sync(timeout_s=5)
    assert cache.has_synced()
    runner.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await runner
    assert cache.informers() == []
    with pytest.raises(RuntimeError, match="closed"):
        await cache.acquire(CM)


async def test_run_reraises_an_informer_crash(client: Client, fake_api: FakeApiServer) -> None:
    def explode(obj: dict[str, Any]) -> dict[str, Any]:
        raise ZeroDivisionError("bug in a transform")

    fake_api.seed(CM, {"metadata": {"name": "a", "namespace": "default"}})
    cache = InformerCache(client, clock=FakeClock(), transform=explode)
    runner = asyncio.create_task(cache.run())
    await cache.acquire(CM)
    with pytest.raises(ZeroDivisionError):
        await asyncio.wait_for(runner, timeout=5)


async def test_an_informer_held_for_good_is_shared_with_acquirers_and_outlives_them(
    client: Client, fake_api: FakeApiServer
) -> None:
    cache = InformerCache(client, clock=FakeClock())
    runner = asyncio.create_task(cache.run())
    held = cache.informer(CM)
    borrowed = await cache.acquire(CM)
    assert borrowed is held
    assert await held.wait_for_sync(timeout_s=5)
    await cache.release(borrowed)
    assert cache.informers() == [held]  # still held for the controllers built on it
    await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)
    assert cache.informers() == [held]  # stopped, its store kept


async def test_only_informers_held_for_good_hold_readiness_back(
    client: Client, fake_api: FakeApiServer
) -> None:
    cache = InformerCache(client, clock=FakeClock())
    held = cache.informer(SECRETS)
    assert cache.unsynced() == [str(SECRETS)]  # created before run: waits for it
    runner = asyncio.create_task(cache.run())
    assert await held.wait_for_sync(timeout_s=5)
    assert cache.has_synced()
    fake_api.inject(Fault("status", method="GET", path="/configmaps", watch=False, times=1000))
    borrowed = await cache.acquire(CM)  # cannot list: its owner waits for it, not readiness
    assert not borrowed.has_synced()
    assert cache.has_synced()
    await cache.release(borrowed)
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)


async def test_a_metadata_only_informer_never_answers_reads(client: Client) -> None:
    cache = InformerCache(client, clock=FakeClock())
    runner = asyncio.create_task(cache.run())
    meta = cache.informer(CM, metadata_only=True)
    assert await meta.wait_for_sync(timeout_s=5)
    assert cache.covering(CM, None) is None
    assert cache.holding(CM, "default") == (None, False)
    full = cache.informer(CM)
    assert await full.wait_for_sync(timeout_s=5)
    assert cache.covering(CM, None) is full
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)


async def test_an_informer_built_by_hand_is_run_and_shared(client: Client) -> None:
    cache = InformerCache(client, clock=FakeClock())
    mine = Informer(client, CM, namespace="x")
    cache.add(mine)
    assert cache.informer(CM, namespace="x") is mine
    with pytest.raises(ValueError, match="already holds"):
        cache.add(Informer(client, CM, namespace="x"))
    runner = asyncio.create_task(cache.run())
    assert await mine.wait_for_sync(timeout_s=5)
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)
