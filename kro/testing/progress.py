"""kro.testing.progress: how the harness says what it is waiting for, and how often.

Everything in kro.testing that can wait for long (another process's build lock, `go build`, a
component of the local cluster, an example converging under `make run`) prints a line at least
every `interval_s()` seconds, naming what it waits for and for how long, so nobody stares at a
silent terminal wondering whether it hangs. A `Ticker` is the clock behind those lines.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

DEFAULT_INTERVAL_S = 10.0


def interval_s() -> float:
    """Seconds between progress lines: $KRO_PROGRESS_INTERVAL_S, else 10 (the promise made to
    the user; tests shorten it). Unparsable or non-positive values fall back to the default."""
    try:
        value = float(os.environ.get("KRO_PROGRESS_INTERVAL_S", DEFAULT_INTERVAL_S))
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value > 0 else DEFAULT_INTERVAL_S


def format_duration(seconds: float) -> str:
    """`7s`, `4m10s`: short enough for a progress line."""
    whole = max(int(seconds), 0)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m{whole % 60:02d}s"


class Ticker:
    """Tells a polling loop when the next progress line is due.

    The first line is due only after one interval: a wait that ends quickly stays quiet.
    """

    def __init__(
        self, every_s: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.every_s = interval_s() if every_s is None else every_s
        self._clock = clock
        self.started = clock()
        self._next = self.started + self.every_s

    def elapsed_s(self) -> float:
        return self._clock() - self.started

    def due(self) -> bool:
        """True once per interval; call it on every turn of the loop."""
        now = self._clock()
        if now < self._next:
            return False
        self._next = now + self.every_s
        return True
