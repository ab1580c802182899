"""kro.runtime.failurelog: one traceback per change of cause, not one per retry."""

from __future__ import annotations

from typing import Any


class Recorder:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def error(self, event: str, **fields: Any) -> None:
        self.lines.append(("error", event, fields))

    def debug(self, event: str, **fields: Any) -> None:
        self.lines.append(("debug", event, fields))

    def info(self, event: str, **fields: Any) -> None:
        self.lines.append(("info", event, fields))


def test_the_same_cause_is_logged_once_then_a_new_cause_again() -> None:
    from kro.runtime.failurelog import FailureLog

    logger = Recorder()
    failures = FailureLog(logger)
    refused = PermissionError("403 Forbidden: configmaps")
    for attempt in (1, 2, 3):
        failures.failed("ns/a", refused, event="reconcile.failed", attempt=attempt)
    failures.failed("ns/a", ValueError("bad"), event="reconcile.failed", attempt=4)
    levels = [(level, event) for level, event, _ in logger.lines]
    assert levels == [
        ("error", "reconcile.failed"),
        ("debug", "reconcile.retrying"),
        ("debug", "reconcile.retrying"),
        ("error", "reconcile.failed"),
    ]
    assert logger.lines[0][2]["exc_info"] is refused
    assert logger.lines[1][2] == {"error_type": "PermissionError", "attempt": 2}


def test_a_success_after_failures_says_so_once_and_forgets() -> None:
    from kro.runtime.failurelog import FailureLog

    logger = Recorder()
    failures = FailureLog(logger)
    failures.succeeded("ns/a")  # never failed: nothing to say
    failures.failed("ns/a", RuntimeError("x"), event="reconcile.failed", attempt=1)
    failures.succeeded("ns/a")
    failures.failed("ns/a", RuntimeError("x"), event="reconcile.failed", attempt=1)
    assert [event for _, event, _ in logger.lines] == [
        "reconcile.failed",
        "reconcile.recovered",
        "reconcile.failed",
    ]
    failures.forget("ns/a")
    assert len(failures) == 0
