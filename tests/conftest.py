"""Fixtures shared by every unit-test folder, and the `needs_binaries` mark.

A test that runs a binary kro.testing.testbin builds (helm, promtool, a control plane) waits,
on a fresh machine, for the build lock that the background `testbin ensure` of `.ci/run` holds
for many minutes. `make test` therefore runs the unit tests in two passes: every test without
the mark while the build runs (`make unit-quick`), then the marked ones once `make testbin` has
finished (`make unit-binaries`); each test runs exactly once. A test is marked here, by the
fixtures it uses (`BINARY_FIXTURES`, the whole fixture closure), so a new test that asks for
`helm` cannot block the first pass by forgetting the mark.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import pytest

from kro.testing import testbin

# kro.testing's plugin activates only when asked (it is not an entry point): the unit tests ask
# so that they run with the same fixtures and markers as the e2e suite.
pytest_plugins = ["kro.testing.pytest_plugin"]

NEEDS_BINARIES: Final = "needs_binaries"
BINARY_FIXTURES: Final = frozenset({"helm", "promtool", "kube_cluster"})
"""Fixtures that return (or start) a binary built by kro.testing.testbin: `helm` below,
`promtool` (tests/charts/test_dashboards.py) and the plugin's session control plane."""


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if BINARY_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(NEEDS_BINARIES)


@pytest.fixture(scope="session")
def helm() -> Path:
    """helm v3 built from the committed Go module (cached after the first build).

    On a fresh machine the first call waits for the control-plane build that holds the testbin
    lock, so the chart test modules raise their timeout (see `pytestmark` there).
    """
    return testbin.ensure(["helm"])["helm"]


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
