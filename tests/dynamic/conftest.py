"""Fixtures for the kro.dynamic tests: a FakeKube behind the real informer cache, a controller
on a FakeClock, recorded metrics, and a check that no test leaves a task behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from dynamic_fakes import FakeKube, MakeController, Metrics

from kro.dynamic import DynamicController, DynamicControllerOptions
from kro.runtime.cache import InformerCache
from kro.runtime.clock import FakeClock


@pytest.fixture(autouse=True)
def _fail_on_leaked_tasks(no_task_leaks: None) -> None:
    """Every test here must stop the tasks it starts (see tests/conftest.py)."""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def kube() -> FakeKube:
    return FakeKube()


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
async def cache(kube: FakeKube, clock: FakeClock) -> AsyncIterator[InformerCache]:
    informers = InformerCache(kube, clock=clock)  # type: ignore[arg-type]
    yield informers
    await informers.close()


@pytest.fixture
async def make_controller(
    cache: InformerCache, clock: FakeClock, metrics: Metrics
) -> AsyncIterator[MakeController]:
    """Build controllers on the shared cache; each is stopped and released afterwards."""
    made: list[DynamicController] = []

    def make(**options: Any) -> DynamicController:
        controller = DynamicController(
            cache, options=DynamicControllerOptions(**options), clock=clock, metrics=metrics
        )
        made.append(controller)
        return controller

    yield make
    for controller in made:
        controller.shutdown()
        for gvr in controller.registered():
            await controller.deregister(gvr)
        await controller.watches.close()


@pytest.fixture
def dynamic(make_controller: MakeController) -> DynamicController:
    return make_controller()
