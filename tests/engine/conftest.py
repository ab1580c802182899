"""Fixtures for the kro.engine unit tests: the in-process fake API server (tests/runtime/
fakeapi.py) serving ConfigMaps and an owner kind, and a real Client on it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "runtime"))

from fakeapi import DEFAULT_RESOURCES, FakeApiServer, FakeResource, unthrottled_client

from kro.runtime.client import Client

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
