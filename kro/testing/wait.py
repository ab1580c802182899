"""kro.testing.wait: wait on a condition with a deadline, never a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The condition did not hold before the deadline; the message says what was awaited."""


def wait_for(
    probe: Callable[[], T | None],
    *,
    timeout_s: float = 60.0,
    interval_s: float = 0.2,
    what: str = "condition",
) -> T:
    """Call `probe` until it returns a truthy value and return that value."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval_s)
    raise WaitTimeout(f"timed out after {timeout_s}s waiting for {what}; last value: {last!r}")
