"""kro.runtime.failurelog: a failing key's traceback once per change of cause, not per retry.

A reconcile that keeps failing for the same reason (an API server that refuses a write, a
missing permission) is retried with backoff for as long as it fails; logging the traceback at
error level on every attempt buries everything else in the log and says nothing new. So the
first failure of a key, and every failure whose cause differs from the last one (exception type
and message), is logged with its traceback at error level (`reconcile.failed`); repeats of the
same cause are one debug line (`reconcile.retrying`, attempt and error type only); and the first
success after a failure says so at info level (`reconcile.recovered`). Counters still count
every attempt: the log is for people, the metrics are for rates.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

__all__ = ["FailureLog"]


class FailureLog:
    """Remembers the last failure cause of each key that is failing now.

    `remember` / `release` are the mechanism (a cause per key, "is it new?"); `failed` /
    `succeeded` are the reconcile loops' use of it. kro's FailureReporter uses the mechanism
    with its own log lines.
    """

    def __init__(self, logger: Any) -> None:
        self._log = logger
        self._causes: dict[Hashable, Hashable] = {}

    def __len__(self) -> int:
        return len(self._causes)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._causes

    def remember(self, key: Hashable, cause: Hashable) -> bool:
        """Record `cause` as `key`'s failure; True when it differs from the last one."""
        if self._causes.get(key) == cause:
            return False
        self._causes[key] = cause
        return True

    def release(self, key: Hashable) -> Hashable | None:
        """`key` works again (or is gone): its last cause, which is forgotten."""
        return self._causes.pop(key, None)

    def failed(self, key: Hashable, error: BaseException, *, event: str, **fields: Any) -> None:
        """Log `error` for `key`: with its traceback if the cause is new, else at debug."""
        if self.remember(key, f"{type(error).__name__}: {error}"):
            self._log.error(event, exc_info=error, **fields)
        else:
            self._log.debug("reconcile.retrying", error_type=type(error).__name__, **fields)

    def succeeded(self, key: Hashable) -> None:
        """The key reconciled; say so if it was failing."""
        if self.release(key) is not None:
            self._log.info("reconcile.recovered")

    def forget(self, key: Hashable) -> None:
        """The key was dropped or is gone: nothing to remember."""
        self.release(key)
