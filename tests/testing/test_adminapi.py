"""The harness's admin client after an outage drill: kube-apiserver may answer late, so a GET or
DELETE that timed out is sent again (a DELETE meeting the object its first try is deleting is
done); a write that is not idempotent is never sent twice."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kro.testing import adminapi
from kro.testing.adminapi import AdminApi


class _SlowFirst(BaseHTTPRequestHandler):
    """Answers the first request of each method late, the next ones at once (409 for DELETE)."""

    seen: list[str] = []
    late = threading.Event()

    def _answer(self) -> None:
        self.seen.append(self.command)
        if self.seen.count(self.command) == 1:
            self.late.wait(5)  # longer than the client waits; released when the test ends
        status = 409 if self.command == "DELETE" else 200
        body = b'{"kind": "Status"}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_DELETE = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(adminapi, "_TIMEOUT_S", 0.2)
    _SlowFirst.seen = []
    _SlowFirst.late = threading.Event()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SlowFirst)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        _SlowFirst.late.set()
        httpd.shutdown()
        thread.join()


def test_a_delete_that_timed_out_is_sent_again(server: str) -> None:
    started = time.monotonic()
    AdminApi(server).delete("/api/v1/namespaces/drill")
    assert _SlowFirst.seen == ["DELETE", "DELETE"]
    assert time.monotonic() - started < 4  # did not wait for the slow answer


def test_a_create_that_timed_out_is_not_sent_twice(server: str) -> None:
    with pytest.raises(TimeoutError):
        AdminApi(server).create("/api/v1/namespaces", {"metadata": {"name": "drill"}})
    assert _SlowFirst.seen == ["POST"]
