"""Fixtures for the kro.dynamic tests: a FakeKube behind the real informer factory, a controller
on a FakeClock, recorded metrics, and a check that no test leaves a task behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from dynamic_fakes import FakeKube, MakeController, Metrics

from kro.dynamic import DynamicController, DynamicControllerOptions
from kro.runtime.clock import FakeClock
from kro.runtime.informerfactory import SharedInformerFactory


@pytest.fixture(autouse=True)
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
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def kube() -> FakeKube:
    return FakeKube()


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
async def factory(kube: FakeKube, clock: FakeClock) -> AsyncIterator[SharedInformerFactory]:
    informers = SharedInformerFactory(kube, clock=clock)  # type: ignore[arg-type]
    yield informers
    await informers.close()


@pytest.fixture
async def make_controller(
    factory: SharedInformerFactory, clock: FakeClock, metrics: Metrics
) -> AsyncIterator[MakeController]:
    """Build controllers on the shared factory; each is stopped and released afterwards."""
    made: list[DynamicController] = []

    def make(**options: Any) -> DynamicController:
        controller = DynamicController(
            factory, options=DynamicControllerOptions(**options), clock=clock, metrics=metrics
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
