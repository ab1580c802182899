"""SharedInformerFactory: one informer per key, ref-counted, stopped with the last release."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from fakeapi import FakeApiServer

from kro.runtime.client import Client
from kro.runtime.clock import FakeClock
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.runtime.informerfactory import SharedInformerFactory

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")


async def test_same_key_shares_one_informer_and_one_watch(
    client: Client, fake_api: FakeApiServer
) -> None:
    factory = SharedInformerFactory(client, clock=FakeClock())
    first = await factory.acquire(CM)
    second = await factory.acquire(CM)
    assert first is second
    assert await first.wait_for_sync(timeout_s=5)
    await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
    assert len(fake_api.watchers) == 1
    await factory.close()


async def test_different_keys_get_different_informers(client: Client) -> None:
    factory = SharedInformerFactory(client, clock=FakeClock())
    full = await factory.acquire(CM)
    meta = await factory.acquire(CM, metadata_only=True)
    scoped = await factory.acquire(CM, namespace="x")
    assert len({id(full), id(meta), id(scoped)}) == 3
    assert meta.metadata_only
    assert scoped.namespace == "x"
    assert len(factory.informers()) == 3
    await factory.close()


async def test_release_stops_the_informer_at_zero_refs(
    client: Client, fake_api: FakeApiServer
) -> None:
    factory = SharedInformerFactory(client, clock=FakeClock())
    informer = await factory.acquire(CM)
    await factory.acquire(CM)
    await asyncio.wait_for(fake_api.wait_for_watchers(1), timeout=5)
    await factory.release(informer)
    assert factory.informers() == [informer]
    await factory.release(informer)
    assert factory.informers() == []
    await asyncio.wait_for(fake_api.wait_for(lambda: not fake_api.watchers), timeout=5)
    again = await factory.acquire(CM)
    assert again is not informer
    await factory.close()


async def test_release_of_a_foreign_informer_is_an_error(client: Client) -> None:
    factory = SharedInformerFactory(client)
    with pytest.raises(ValueError, match="not acquired"):
        await factory.release(Informer(client, CM))
    await factory.close()


async def test_run_stops_everything_when_cancelled(client: Client) -> None:
    factory = SharedInformerFactory(client, clock=FakeClock())
    runner = asyncio.create_task(factory.run())
    informer = await factory.acquire(SECRETS)
    assert await informer.wait_for_sync(timeout_s=5)
    assert factory.has_synced()
    runner.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await runner
    assert factory.informers() == []
    with pytest.raises(RuntimeError, match="closed"):
        await factory.acquire(CM)


async def test_run_reraises_an_informer_crash(client: Client, fake_api: FakeApiServer) -> None:
    def explode(obj: dict[str, Any]) -> dict[str, Any]:
        raise ZeroDivisionError("bug in a transform")

    fake_api.seed(CM, {"metadata": {"name": "a", "namespace": "default"}})
    factory = SharedInformerFactory(client, clock=FakeClock(), transform=explode)
    runner = asyncio.create_task(factory.run())
    await factory.acquire(CM)
    with pytest.raises(ZeroDivisionError):
        await asyncio.wait_for(runner, timeout=5)
