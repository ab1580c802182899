"""Fixtures for the client/informer tests: a fake API server, a client on it, a task-leak check."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fakeapi_options import FAST

from kro.runtime.client import Client
from kro.runtime.config import ConnectionConfig
from kro.testing.fakeapi import FakeApiServer


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer() as api:
        yield api


@pytest.fixture
async def client(fake_api: FakeApiServer) -> AsyncIterator[Client]:
    async with Client.from_config(ConnectionConfig(server=fake_api.url), FAST) as c:
        yield c
