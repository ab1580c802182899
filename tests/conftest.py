"""Fixtures shared by every unit-test folder."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

# kro.testing's plugin activates only when asked (it is not an entry point): the unit tests ask
# so that they run with the same fixtures and markers as the e2e suite.
pytest_plugins = ["kro.testing.pytest_plugin"]


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
