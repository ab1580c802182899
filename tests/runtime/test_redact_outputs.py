"""The two runtime doors out of the process scrub what passes: every rendered log line (JSON and
console, structlog's records and the standard library's, fields, tracebacks) and every Event
message."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import orjson
import pytest
import structlog
from fakes_control import FakeKubeClient

from kro.runtime import logging as runtime_logging
from kro.runtime.clock import FakeClock
from kro.runtime.errors import TransportError
from kro.runtime.events import EventRecorder, EventRecorderOptions
from kro.runtime.redact import EVENT_MESSAGE_LIMIT, REDACTED, TRUNCATED

TOKEN = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.QmFkU2lnbmF0dXJlMTIz"
APP = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
}


@pytest.fixture
def _fresh_logging() -> Iterator[None]:
    runtime_logging._reset()
    yield
    runtime_logging._reset()


class Headers:
    """Stands in for an aiohttp object whose repr carries the request headers."""

    def __repr__(self) -> str:
        return f"<CIMultiDictProxy('Authorization': 'Bearer {TOKEN}')>"

    __str__ = __repr__


def log_everything(logger_name: str) -> None:
    log = structlog.get_logger(logger_name)
    log.warning(
        "client.failed",
        error=f"GET /x: Authorization: Bearer {TOKEN}",
        headers=Headers(),
        nested={"calls": [f"token={TOKEN}"]},
        attempt=3,
    )
    try:
        try:
            raise ValueError(f"upstream said Bearer {TOKEN}")
        except ValueError as cause:
            raise TransportError("GET /x: ClientOSError: connection failed") from cause
    except TransportError:
        log.exception("reconcile.failed")
    logging.getLogger("aiohttp.client").warning("foreign record with Bearer %s", TOKEN)


@pytest.mark.usefixtures("_fresh_logging")
def test_json_lines_carry_no_token(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_logging.configure("json", "info")
    log_everything("redact-json")
    lines = [orjson.loads(line) for line in capsys.readouterr().err.strip().splitlines()]
    text = "\n".join(orjson.dumps(line).decode() for line in lines)
    assert TOKEN not in text
    assert TOKEN.split(".")[2] not in text
    first, failed, foreign = lines
    assert first["error"] == f"GET /x: Authorization: {REDACTED}"
    assert first["nested"] == {"calls": [f"token={REDACTED}"]}
    assert first["attempt"] == 3
    assert "Authorization" in first["headers"]  # rendered as text, then scrubbed
    assert "TransportError: GET /x: ClientOSError" in failed["exception"]
    assert f"upstream said Bearer {REDACTED}" in failed["exception"]
    assert foreign["event"] == f"foreign record with Bearer {REDACTED}"


@pytest.mark.usefixtures("_fresh_logging")
def test_console_lines_carry_no_token(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_logging.configure("console", "info")
    log_everything("redact-console")
    err = capsys.readouterr().err
    assert TOKEN not in err
    assert "client.failed" in err
    assert "Traceback (most recent call last)" in err
    assert f"upstream said Bearer {REDACTED}" in err


def make_recorder(client: FakeKubeClient) -> EventRecorder:
    return EventRecorder(
        client,
        EventRecorderOptions(reporting_controller="kro.run/test", reporting_instance="p-0"),
        clock=FakeClock(),
        wall_clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
    )


async def send_all(recorder: EventRecorder) -> None:
    sender = asyncio.create_task(recorder.run())
    try:
        await asyncio.wait_for(recorder.flush(), timeout=2.0)
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)


@pytest.mark.usefixtures("no_task_leaks")
async def test_event_messages_are_scrubbed_before_they_are_queued() -> None:
    client = FakeKubeClient()
    recorder = make_recorder(client)
    recorder.record(APP, "Warning", "ApplyFailed", f"GET /x failed: Authorization: Bearer {TOKEN}")
    await send_all(recorder)
    [event] = client.objects.values()
    assert event["note"] == f"GET /x failed: Authorization: {REDACTED}"


@pytest.mark.usefixtures("no_task_leaks")
async def test_event_messages_are_capped_at_one_kib_with_a_marker() -> None:
    client = FakeKubeClient()
    recorder = make_recorder(client)
    recorder.record(APP, "Warning", "Big", "x" * 3000 + f" password={TOKEN}")
    await send_all(recorder)
    [event] = client.objects.values()
    assert len(event["note"].encode()) <= EVENT_MESSAGE_LIMIT
    assert event["note"].endswith(TRUNCATED)
