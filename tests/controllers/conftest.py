"""Fixtures for the kro.controllers unit tests: the in-process fake API server
(kro.testing.fakeapi) serving ConfigMaps, Events and the Greeter kind, a real Client on it,
an Applier, a dynamic controller, a Prometheus provider to read metrics from, and a task-leak
check; and the fake API server with kro's own kinds (`kro_api`) with a client on it
(`kro_client`)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "runtime"))

from controllers_fakes import GROUP
from rgd_app_fakes import KroFakeApi

from kro.applyset import Applier, ApplierOptions, tooling_for
from kro.dynamic import DynamicController, DynamicControllerOptions
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.prometheus import PrometheusProvider
from kro.testing.fakeapi import DEFAULT_RESOURCES, FakeApiServer, FakeResource, unthrottled_client

GREETER = FakeResource(GROUP, "v1alpha1", "greeters", "Greeter")


@pytest.fixture(autouse=True)
def _fail_on_leaked_tasks(no_task_leaks: None) -> None:
    """Every test here must stop the tasks it starts (see tests/conftest.py)."""


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer((*DEFAULT_RESOURCES, GREETER)) as server:
        yield server


@pytest.fixture
async def client(api: FakeApiServer) -> AsyncIterator[Client]:
    async with unthrottled_client(api) as c:
        yield c


@pytest.fixture
async def kro_api() -> AsyncIterator[KroFakeApi]:
    """The fake API server with kro's own kinds (RGDs, GraphRevisions, CRDs) too."""
    async with KroFakeApi() as server:
        yield server


@pytest.fixture
async def kro_client(kro_api: KroFakeApi) -> AsyncIterator[Client]:
    async with unthrottled_client(kro_api) as c:
        yield c


@pytest.fixture
async def dynamic(client: Client) -> AsyncIterator[DynamicController]:
    """A dynamic controller on its own informer cache over `client`; no workers run: the
    tests drive the reconciles themselves."""
    cache = InformerCache(client)
    controller = DynamicController(cache, options=DynamicControllerOptions(workers=1))
    yield controller
    controller.shutdown()
    await controller._close()
    await cache.close()


@pytest.fixture
def applier(client: Client) -> Applier:
    return Applier(client, ApplierOptions(tooling=tooling_for("v0.9.3")))


@pytest.fixture
def provider() -> PrometheusProvider:
    return PrometheusProvider(process_metrics=False)
