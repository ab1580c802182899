"""Fixtures for the client/informer tests: a fake API server, a client on it, a task-leak check."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from fakeapi import FakeApiServer
from fakeapi_options import FAST

from kro.runtime.client import Client
from kro.runtime.config import ConnectionConfig


@pytest.fixture
async def no_task_leaks() -> AsyncIterator[None]:
    """Fail the test if it leaves tasks running (every task needs an owner that stops it)."""
    before = asyncio.all_tasks()
    yield
    current = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() - before if t is not current and not t.done()]
    if leaked:
        for task in leaked:
            task.cancel()
        await asyncio.gather(*leaked, return_exceptions=True)
        pytest.fail(f"leaked tasks: {[t.get_name() for t in leaked]}")


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer() as api:
        yield api


@pytest.fixture
async def client(fake_api: FakeApiServer) -> AsyncIterator[Client]:
    async with Client.from_config(ConnectionConfig(server=fake_api.url), FAST) as c:
        yield c
