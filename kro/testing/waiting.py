"""kro.testing.waiting: wait on a condition with a deadline, never a fixed sleep.

Tests of controllers assert the state of the world, which arrives asynchronously: poll a probe
until it returns something truthy, and fail with what was awaited and the last thing seen.
NotFound counts as "not yet", because objects appear a moment after the write that creates them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kro.runtime.errors import NotFound

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]],
    *,
    what: str,
    timeout_s: float,
    interval_s: float = 0.2,
) -> T:
    """Await `probe()` until it returns something truthy; AssertionError after `timeout_s`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    last: object = None
    while True:
        try:
            value = await probe()
        except NotFound as error:
            last = error
        else:
            if value:
                return value
            last = value
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; last: {last!r}")
        await asyncio.sleep(interval_s)
