"""Transport errors say what failed and never what was sent or received.

The client sends a bearer token on every request. Servers here answer badly: bytes that are not
HTTP (echoing the Authorization header back), broken headers, bodies cut short, bodies that are
not JSON, a reset connection, no answer at all, TLS to a server that does not speak it. For each,
the resulting error must name the method, the path, the failure's class and (when a response
head arrived) the HTTP status, and must not contain the token, any header, or a body: neither in
its message nor in the traceback a log line would render.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import pickle
import socket
import ssl
import struct
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from fakeapi_options import FAST

from kro.runtime.client import Client
from kro.runtime.config import ConnectionConfig, StaticAuth
from kro.runtime.errors import InternalError, KubeError, RequestTimeout, TransportError
from kro.runtime.gvk import GVR
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
TOKEN = "kro-unit-9f3c2-bearer-T0KEN"
USER_AGENT = "kro-python/transport-test"
BODY_SECRET = "s3cr3t-in-the-request-body"
CM_PATH = "/api/v1/namespaces/default/configmaps/a"
OPTIONS = dataclasses.replace(FAST, max_retries=0, request_timeout_s=0.5, user_agent=USER_AGENT)

Behaviour = Callable[["RawServer", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
"""How the server answers a request it has read: it writes to, resets or ignores `writer`."""


class RawServer:
    """A TCP server on 127.0.0.1 that reads one request and answers with `behaviour`.

    For what an HTTP server library will not send: arbitrary bytes, a reset, silence. The
    request heads it received are kept in `heads`, to prove the token really was on the wire.
    """

    def __init__(self, behaviour: Behaviour, *, read_request: bool = True) -> None:
        self._behaviour = behaviour
        self._read_request = read_request
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.released = asyncio.Event()
        self.heads: list[bytes] = []
        self.port = 0

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.released.set()
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            if self._read_request:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                length = _content_length(head)
                if length:
                    await reader.readexactly(length)
            await self._behaviour(self, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def send(*chunks: bytes) -> Behaviour:
    async def behaviour(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()

    return behaviour


def send_then_reset(*chunks: bytes) -> Behaviour:
    async def behaviour(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await send(*chunks)(server, reader, writer)
        reset(writer)

    return behaviour


def send_then_stall(*chunks: bytes) -> Behaviour:
    """Send `chunks`, then nothing more until the test ends."""

    async def behaviour(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await send(*chunks)(server, reader, writer)
        await server.released.wait()

    return behaviour


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0), as a crashed peer or a middlebox would."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


ECHO = f"Authorization: Bearer {TOKEN}\r\nUser-Agent: {USER_AGENT}".encode()
JSON_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
OK_CHUNKED = JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
OK_PROMISING_1000 = JSON_HEAD + b"Content-Length: 1000\r\n\r\n"
"""A head announcing 1000 bytes of body: what follows it is cut short."""
NOT_JSON = b"<html>" + ECHO + b"</html>"


def client_for(url: str, **options: Any) -> Client:
    config = ConnectionConfig(server=url, auth=StaticAuth(f"Bearer {TOKEN}"))
    return Client.from_config(config, dataclasses.replace(OPTIONS, **options))


def rendered(error: BaseException) -> str:
    """Everything a log line could show of `error`: message, repr, traceback with causes."""
    return "\n".join([str(error), repr(error), *traceback.format_exception(error)])


def assert_safe(error: BaseException, *, method: str, path: str) -> None:
    """The error names the request and its failure, and carries nothing of the exchange."""
    assert isinstance(error, TransportError)
    message = str(error)
    assert message.startswith(f"{method} {path}"), message
    assert (error.method, error.path) == (method, path)
    assert error.reason, message
    assert error.reason in message, message
    text = rendered(error)
    assert TOKEN not in text
    assert "authorization" not in text.lower()
    assert USER_AGENT not in text
    assert BODY_SECRET not in text
    assert "[REDACTED]" not in message  # safe by construction, not by scrubbing


async def _call(client: Client, call: str) -> None:
    if call == "get":
        await client.get(CM, "a", namespace="default")
    elif call == "create":
        obj = {"metadata": {"name": "a", "namespace": "default"}, "data": {"pw": BODY_SECRET}}
        await client.create(CM, obj)
    elif call == "watch":
        async with contextlib.aclosing(client.watch(CM, namespace="default")) as events:
            async for _ in events:
                pass
    else:
        raise AssertionError(call)


async def fail(client: Client, call: str) -> KubeError:
    """Run one client call that must fail; return its error."""
    with pytest.raises(KubeError) as info:
        await _call(client, call)
    return info.value


@contextlib.asynccontextmanager
async def raw(behaviour: Behaviour) -> AsyncIterator[RawServer]:
    async with RawServer(behaviour) as server:
        yield server
    assert server.heads, "the client never reached the server"
    assert f"Bearer {TOKEN}".encode() in server.heads[0], "the token was not sent"


MALFORMED = [
    (
        "garbage-echoing-the-headers",
        send(b"\x00\x01garbage " + ECHO + b"\r\n\r\n"),
        None,
        "ClientResponseError",
        "malformed response: Bad status line",
    ),
    (
        "bad-status-code",
        send(b"HTTP/1.1 2x0 OK " + ECHO + b"\r\n\r\n"),
        None,
        "ClientResponseError",
        "malformed response: Bad status line",
    ),
    (
        "bad-header-line",
        send(b"HTTP/1.1 200 OK\r\n" + ECHO.replace(b": ", b" ") + b"\r\n\r\n"),
        None,
        "ClientResponseError",
        "malformed response: Invalid header",
    ),
    (
        "truncated-chunked-body",
        send(OK_CHUNKED, b'400\r\n{"kind":"ConfigMap","data":' + ECHO),
        200,
        "ClientPayloadError",
        "chunked body broken or cut short",
    ),
    (
        "short-content-length",
        send(OK_PROMISING_1000, b'{"kind":"ConfigMap","data":{"token":"' + ECHO),
        200,
        "ClientPayloadError",
        "body shorter than its Content-Length",
    ),
    (
        "body-is-not-json",
        send(JSON_HEAD + f"Content-Length: {len(NOT_JSON)}\r\n\r\n".encode() + NOT_JSON),
        200,
        "JSONDecodeError",
        f"response is not JSON ({len(NOT_JSON)} bytes, application/json)",
    ),
    ("reset-before-the-response", send_then_reset(), None, None, None),
    (
        "reset-in-the-body",
        send_then_reset(OK_PROMISING_1000, b'{"data":{"k":"' + ECHO),
        200,
        None,
        None,
    ),
    ("closed-without-a-response", send(), None, "ServerDisconnectedError", "closed the connection"),
]


@pytest.mark.parametrize(
    ("behaviour", "status", "reason", "detail"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
@pytest.mark.parametrize("call", ["get", "create"])
async def test_broken_responses_are_described_not_quoted(
    behaviour: Behaviour, status: int | None, reason: str | None, detail: str | None, call: str
) -> None:
    method, path = ("GET", CM_PATH) if call == "get" else ("POST", CM_PATH.removesuffix("/a"))
    async with raw(behaviour) as server, client_for(server.url) as client:
        error = await fail(client, call)
    assert_safe(error, method=method, path=path)
    assert isinstance(error, TransportError)
    assert error.status == status
    if status is not None:
        assert f"(HTTP {status})" in str(error)
    if reason is not None:
        assert error.reason == reason
    if detail is not None:
        assert detail in str(error)


async def test_a_reset_names_the_connection_failure() -> None:
    async with raw(send_then_reset()) as server, client_for(server.url) as client:
        error = await fail(client, "get")
    assert_safe(error, method="GET", path=CM_PATH)
    assert isinstance(error, TransportError)
    # Which one depends on timing: the RST read as a reset, or as a closed connection.
    assert error.reason in ("ClientOSError", "ServerDisconnectedError"), str(error)


async def test_no_response_in_time_is_a_request_timeout() -> None:
    async with (
        raw(send_then_stall()) as server,
        client_for(server.url, request_timeout_s=0.3) as client,
    ):
        error = await fail(client, "get")
    assert isinstance(error, RequestTimeout)
    assert_safe(error, method="GET", path=CM_PATH)
    assert "no response in time" in str(error)


async def test_a_body_that_stops_coming_is_a_request_timeout_with_the_status() -> None:
    behaviour = send_then_stall(OK_PROMISING_1000, b'{"data":{"token":"' + ECHO)
    async with raw(behaviour) as server, client_for(server.url, request_timeout_s=0.3) as client:
        error = await fail(client, "get")
    assert isinstance(error, RequestTimeout)
    assert_safe(error, method="GET", path=CM_PATH)
    assert error.status == 200
    assert "body not received in time" in str(error)


async def _garbage_for_a_client_hello(
    server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    await reader.read(1)  # the ClientHello has arrived
    await send_then_stall(b"not a TLS record: " + ECHO)(server, reader, writer)


async def test_tls_to_a_server_that_answers_garbage_is_a_tls_failure() -> None:
    async with RawServer(_garbage_for_a_client_hello, read_request=False) as server:
        context = ssl.create_default_context()
        config = ConnectionConfig(
            server=server.url.replace("http:", "https:"),
            ssl_context=context,
            auth=StaticAuth(f"Bearer {TOKEN}"),
        )
        async with Client.from_config(config, OPTIONS) as client:
            with pytest.raises(TransportError) as info:
                await client.get(CM, "a", namespace="default")
    error = info.value
    text = rendered(error)
    assert str(error).startswith(f"GET {CM_PATH}: ")
    assert "TLS failed" in str(error) or "certificate" in str(error)
    assert TOKEN not in text
    assert error.reason
    assert error.reason in str(error)


async def test_a_watch_that_cannot_start_is_described_the_same_way() -> None:
    async with (
        raw(send(b"garbage " + ECHO + b"\r\n\r\n")) as server,
        client_for(server.url) as client,
    ):
        error = await fail(client, "watch")
    assert_safe(error, method="GET", path="/api/v1/namespaces/default/configmaps")


async def test_an_error_status_echoing_the_headers_is_scrubbed() -> None:
    """A proxy's 500 page that quotes the request: an ApiError, whose text is scrubbed."""
    async with FakeApiServer(tokens={TOKEN}) as api:
        api.inject(Fault("status", status=500, body=f"upstream failed for {ECHO.decode()}"))
        async with client_for(api.url) as client:
            with pytest.raises(InternalError) as info:
                await client.get(CM, "a", namespace="default")
    text = rendered(info.value)
    assert TOKEN not in text
    assert "upstream failed for Authorization: [REDACTED]" in info.value.message


async def test_a_dropped_write_never_shows_its_body() -> None:
    async with FakeApiServer(tokens={TOKEN}) as api:
        api.inject(Fault("drop", method="POST"))
        async with client_for(api.url) as client:
            error = await fail(client, "create")
        assert api.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert_safe(error, method="POST", path="/api/v1/namespaces/default/configmaps")


def test_transport_errors_keep_their_fields_across_pickling() -> None:
    error = RequestTimeout(
        "GET /x (HTTP 200): TimeoutError: body not received in time",
        method="GET",
        path="/x",
        status=200,
        reason="TimeoutError",
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.method, copy.path, copy.status, copy.reason) == (
        RequestTimeout,
        str(error),
        "GET",
        "/x",
        200,
        "TimeoutError",
    )


class _Named(TransportError):
    """What a client of many servers raises in place of an unanswered request's error."""


async def test_an_unanswered_request_raises_what_the_options_say_and_an_answer_does_not() -> None:
    """`ClientOptions.unanswered`: after the retries, a request that got no response at all
    raises what the hook returns (kro.fleet names the member cluster in it); one that got an
    answer, even a 500, raises as always, and the hook is not asked."""
    seen: list[TransportError] = []

    def unanswered(error: TransportError) -> TransportError:
        seen.append(error)
        return _Named(f"server X: {error}", method=error.method, path=error.path)

    with socket.socket() as probe:  # a port nothing listens on: the connection is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    options = dataclasses.replace(OPTIONS, unanswered=unanswered)
    async with Client(ConnectionConfig(server=f"http://127.0.0.1:{port}"), options) as client:
        with pytest.raises(_Named) as raised:
            await client.get(CM, "a", namespace="default")
    assert str(raised.value).startswith("server X: GET /api/v1/namespaces/default/configmaps/a")
    assert len(seen) == 1
    async with FakeApiServer() as api, Client(ConnectionConfig(server=api.url), options) as client:
        api.inject(Fault("status", method="GET", path="/configmaps", status=500, times=1))
        with pytest.raises(InternalError):
            await client.get(CM, "a", namespace="default")
    assert len(seen) == 1
