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


async def run_all(
    calls: Iterable[tuple[str, Coroutine[Any, Any, T]]], *, limit: int | None = None
) -> list[T]:
    """Run named coroutines concurrently, at most `limit` at a time; results in input order."""
    gate = asyncio.Semaphore(limit) if limit is not None and limit > 0 else None

    async def bounded(coro: Coroutine[Any, Any, T]) -> T:
        if gate is None:
            return await coro
        async with gate:
            return await coro

    tasks = [asyncio.create_task(bounded(coro), name=name) for name, coro in calls]
    if not tasks:
        return []
    results = await asyncio.gather(*tasks, return_exceptions=True)
    out: list[T] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        out.append(result)
    return out
