"""Informers running against the in-process fake API server, for tests of what they count:
start them, wait until each has listed and watches, stop them; wait on a condition."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from kro.runtime.informer import Informer
from kro.runtime.sharding import ShardView, fnv1a64
from kro.testing.fakeapi import FakeApiServer
from kro.testing.waiting import eventually


def owning(namespace: str) -> ShardView:
    """A shard view whose range holds the namespace `namespace` only."""
    view = ShardView()
    start = fnv1a64(namespace)
    view.set_ranges([(start, start + 1)])
    return view


def configmap(name: str, ns: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "data": {}}


@contextlib.asynccontextmanager
async def running(*informers: Informer, fake_api: FakeApiServer) -> AsyncIterator[None]:
    tasks = [asyncio.create_task(i.run()) for i in informers]
    try:
        for informer in informers:
            assert await informer.wait_for_sync(timeout_s=5)
        await asyncio.wait_for(fake_api.wait_for_watchers(len(informers)), timeout=5)
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def until(predicate: Callable[[], bool], what: str) -> None:
    async def probe() -> bool:
        return predicate()

    await eventually(probe, what=what, timeout_s=5, interval_s=0.01)
