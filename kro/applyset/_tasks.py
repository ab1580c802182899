"""kro.applyset._tasks: run a batch of API calls concurrently and wait for all of them.

Unlike a TaskGroup, one failure does not cancel the others: a cancelled SSA or DELETE may or
may not have reached the server, which would make per-resource results lie. Every task is
awaited before returning (no orphans; cancelling the caller cancels them all), then the first
failure is raised as itself rather than wrapped in an ExceptionGroup. Calls that report
per-resource errors catch them inside, so only failures that spoil the whole batch get here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def run_all(calls: Iterable[tuple[str, Coroutine[Any, Any, T]]]) -> list[T]:
    """Run named coroutines concurrently; results in input order."""
    tasks = [asyncio.create_task(coro, name=name) for name, coro in calls]
    if not tasks:
        return []
    results = await asyncio.gather(*tasks, return_exceptions=True)
    out: list[T] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        out.append(result)
    return out
