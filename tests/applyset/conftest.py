"""Fixtures for kro.applyset unit tests: the in-process fake API server (kro.testing.fakeapi)
with a namespaced CR kind (WebApp, the parent) and a cluster-scoped one (Widget), a real Client
on it, an Applier, and a task-leak check."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from applyset_fakes import WEBAPP, WIDGET

from kro.applyset import Applier, ApplierOptions, tooling_for
from kro.runtime.client import Client
from kro.testing.fakeapi import DEFAULT_RESOURCES, FakeApiServer, unthrottled_client


@pytest.fixture(autouse=True)
def _fail_on_leaked_tasks(no_task_leaks: None) -> None:
    """Every test here must stop the tasks it starts (see tests/conftest.py)."""


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer((*DEFAULT_RESOURCES, WEBAPP, WIDGET)) as server:
        yield server


@pytest.fixture
async def client(api: FakeApiServer) -> AsyncIterator[Client]:
    async with unthrottled_client(api) as c:
        yield c


@pytest.fixture
def applier(client: Client) -> Applier:
    return Applier(client, ApplierOptions(tooling=tooling_for("v0.9.3")))
