"""kro.testing.lockfile: a file lock that says who holds it and what they are doing.

Two things in the harness serialise on a lock: building the control-plane binaries (testbin,
one build at a time on the machine) and `make run` (one local kro at a time, since it binds
fixed ports). A bare lock made the second comer silent: `make run` once printed nothing for 19
minutes while another process built. So the holder writes a small JSON record next to the lock
(`<lock>.holder.json`): its pid, what it is doing, since when, and details it updates as it
works (packages compiled, the cluster's directory). A waiter prints that record while it waits;
a second `make run` prints it and leaves.

The record is advisory. The lock itself is filelock's, flock(2) underneath, which the kernel
releases when its holder dies, so a crashed holder never blocks anyone; its record stays
behind and the next holder finds it in `previous` (that is how `make run` removes the temporary
directory of a run that was killed with SIGKILL).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from kro.testing.processes import is_alive
from kro.testing.progress import format_duration, interval_s


@dataclass(frozen=True, slots=True)
class Holder:
    """What a lock's holder wrote about itself.

    details: short phrases shown after `what`, in order (`run by pytest`, `812 packages
    compiled`); their keys are for programs (`make run` keeps its cluster's directory there).
    """

    pid: int
    what: str
    since: float
    details: Mapping[str, str] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return is_alive(self.pid)

    def describe(self, now: float | None = None) -> str:
        """One line: `pid 4242 (building kubernetes; 812 packages compiled) for 4m10s`."""
        held_s = (time.time() if now is None else now) - self.since
        doing = "; ".join([self.what, *(v for v in self.details.values() if v)])
        return f"pid {self.pid} ({doing}) for {format_duration(held_s)}"

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        try:
            raw: Any = json.loads(text)
            return cls(
                pid=int(raw["pid"]),
                what=str(raw["what"]),
                since=float(raw["since"]),
                details={str(k): str(v) for k, v in dict(raw.get("details") or {}).items()},
            )
        except (ValueError, TypeError, KeyError):
            return None


class LockFile:
    """An exclusive lock on `path` plus the holder's record at `<path>.holder.json`.

    Not reentrant, and one instance is one holder: acquire, (update)*, release.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.record_path = path.with_name(path.name + ".holder.json")
        # thread_local=False: the holder's progress thread calls update() on the same object.
        self._lock = FileLock(str(path), thread_local=False)
        self._record: Holder | None = None
        self.previous: Holder | None = None
        """The record found on acquiring: a holder that died without releasing, if any."""

    @property
    def is_held(self) -> bool:
        return self._record is not None

    def holder(self) -> Holder | None:
        """The current holder's record, or None if there is none, or it is unreadable."""
        try:
            return Holder.parse(self.record_path.read_text())
        except OSError:
            return None

    def try_acquire(self, what: str, **details: str) -> bool:
        """Take the lock if it is free, without waiting."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        self._took(what, details)
        return True

    def acquire(
        self,
        what: str,
        *,
        waiting: Callable[[Holder | None, float], None],
        every_s: float | None = None,
        **details: str,
    ) -> None:
        """Take the lock, calling `waiting(holder, waited_s)` at once and then every
        `every_s` (default: kro.testing.progress.interval_s()) while someone else holds it.
        The holder may be None: its record is not written yet, or was lost."""
        every = interval_s() if every_s is None else every_s
        started = time.monotonic()
        while not self.try_acquire(what, **details):
            waiting(self.holder(), time.monotonic() - started)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._lock.acquire(timeout=every)
            except Timeout:
                continue
            self._took(what, details)
            return

    def update(self, **details: str) -> None:
        """Change details of our record (a progress figure, a directory); holder only."""
        if self._record is None:
            raise RuntimeError(f"{self.path} is not held by this LockFile")
        merged = {**self._record.details, **details}
        self._record = Holder(self._record.pid, self._record.what, self._record.since, merged)
        self._write(self._record)

    def release(self) -> None:
        """Drop the record, then the lock; safe to call when not held."""
        if self._record is None:
            return
        self._record = None
        with contextlib.suppress(FileNotFoundError):
            self.record_path.unlink()
        self._lock.release()

    def _took(self, what: str, details: Mapping[str, str]) -> None:
        self.previous = self.holder()
        self._record = Holder(os.getpid(), what, time.time(), dict(details))
        self._write(self._record)

    def _write(self, record: Holder) -> None:
        # Write a new file and rename it, so a reader never sees half a record.
        tmp = self.record_path.with_name(f"{self.record_path.name}.{os.getpid()}.tmp")
        tmp.write_text(
            json.dumps(
                {
                    "pid": record.pid,
                    "what": record.what,
                    "since": record.since,
                    "details": dict(record.details),
                }
            )
        )
        tmp.replace(self.record_path)
