"""configure(): JSON or console output at a level, applied once."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import orjson
import pytest
import structlog

from kro.runtime import logging as runtime_logging


@pytest.fixture(autouse=True)
def _fresh_configuration() -> Iterator[None]:
    runtime_logging._reset()
    yield
    runtime_logging._reset()


def test_json_lines_carry_event_level_and_fields(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_logging.configure("json", "info")
    structlog.get_logger("t1").info("queue.item_dropped", name="a", attempt=3)
    line = orjson.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["event"] == "queue.item_dropped"
    assert line["level"] == "info"
    assert (line["name"], line["attempt"]) == ("a", 3)
    assert line["timestamp"].endswith("Z")


def test_records_below_the_level_are_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_logging.configure("json", "warning")
    structlog.get_logger("t2").info("not.shown")
    assert "not.shown" not in capsys.readouterr().err


def test_bound_context_is_merged(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_logging.configure("json", "info")
    with structlog.contextvars.bound_contextvars(controller="c", reconcile_id="abcd"):
        structlog.get_logger("t3").info("reconcile.failed")
    line = orjson.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert (line["controller"], line["reconcile_id"]) == ("c", "abcd")


def test_stdlib_records_use_the_same_format(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_logging.configure("json", "info")
    logging.getLogger("aiohttp.access").info("GET /healthz")
    line = orjson.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["event"] == "GET /healthz"
    assert line["logger"] == "aiohttp.access"


def test_console_format_is_human_readable(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_logging.configure("console", "debug")
    structlog.get_logger("t4").debug("informer.relisted", gvr="apps/v1/deployments")
    err = capsys.readouterr().err
    assert "informer.relisted" in err
    assert "gvr=apps/v1/deployments" in err


def test_second_identical_call_is_a_no_op() -> None:
    runtime_logging.configure("json", "info")
    handlers = list(logging.getLogger().handlers)
    runtime_logging.configure("json", "INFO")
    assert logging.getLogger().handlers == handlers


def test_a_different_second_call_is_ignored() -> None:
    runtime_logging.configure("json", "info")
    runtime_logging.configure("console", "debug")
    assert logging.getLogger().level == logging.INFO


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="level"):
        runtime_logging.configure("json", "loud")
