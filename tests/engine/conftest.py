"""Fixtures for the kro.engine unit tests: the in-process fake API server (kro.testing.
fakeapi) serving ConfigMaps and an owner kind, and a real Client on it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kro.runtime.client import Client
from kro.testing.fakeapi import DEFAULT_RESOURCES, FakeApiServer, FakeResource, unthrottled_client

OWNERS = FakeResource("engine.kro.run", "v1alpha1", "owners", "Owner")


@pytest.fixture(autouse=True)
def _fail_on_leaked_tasks(no_task_leaks: None) -> None:
    """Every test here must stop the tasks it starts (see tests/conftest.py)."""


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer((*DEFAULT_RESOURCES, OWNERS)) as server:
        yield server


@pytest.fixture
async def client(api: FakeApiServer) -> AsyncIterator[Client]:
    async with unthrottled_client(api) as c:
        yield c
