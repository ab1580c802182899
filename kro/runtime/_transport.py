"""kro.runtime._transport: the client's HTTP half: sessions, auth, throttling, retries, metrics.

Only this module (and `_watch`, which reads the streams it opens) touches aiohttp; every aiohttp
failure is mapped to `kro.runtime.errors` here.
Two sessions, because HTTP/1.1 watches hold a connection for their whole life: requests share a
bounded pool, watches get their own unbounded one, so 100 open watches never block a GET.
`trust_env=False` on both: reading proxy/netrc settings costs two thread hops per request.

Retries live here and nowhere else: 429 and 503 (and any 5xx that carries Retry-After) wait
for Retry-After, bounded by `max_retry_wait_s` and `max_retries`; a 401 invalidates credentials
and is retried once; a failed connection is retried only for GET (a write may have landed).

Failures are described, never dumped (`describe_failure`): aiohttp's exception reprs include the
request's headers, Authorization among them, and its HTTP parser errors quote the bytes it
received. A TransportError therefore names the method, the path, the HTTP status if a response
head arrived, the failure's class and a description made of library text only; the aiohttp
exception is chained as the cause only when its text cannot quote received bytes.
"""

from __future__ import annotations

import errno
import re
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import aiohttp
import orjson
import structlog

from kro.runtime.clientoptions import ClientOptions
from kro.runtime.clock import Clock, RealClock
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import ApiError, RequestTimeout, TransportError, error_from_status
from kro.runtime.throttle import TokenBucket

log = structlog.get_logger(__name__)

LATENCY_BUCKETS: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""client-go's buckets for rest_client_request_duration_seconds."""
SIZE_BUCKETS: Final = tuple(64.0 * 2**n for n in range(16))
"""Upstream's buckets for rest_client_request/response_size_bytes: 64 B x 2^n, 16 of them."""
DEFAULT_RETRY_AFTER_S: Final = 1.0
"""Wait before retrying a 429/503 that carries no Retry-After header."""


class _TLSFailure(TransportError):
    """Certificate or handshake failure: permanent until the config changes, so not retried."""


@dataclass(frozen=True, slots=True)
class _Call:
    """One logical request, re-sent unchanged on each retry."""

    method: str
    path: str
    params: Mapping[str, str] | None
    body: bytes | None
    content_type: str | None
    accept: str
    client_timeout: aiohttp.ClientTimeout
    watch: bool

    @property
    def verb(self) -> str:
        return "WATCH" if self.watch else self.method


@dataclass(frozen=True, slots=True)
class Response:
    """A completed, successful response: body bytes are decoded by the caller."""

    status: int
    content_type: str
    body: bytes


class Transport:
    """Sends requests for one `Client`; sessions are created lazily inside the running loop."""

    def __init__(self, config: ConnectionConfig, options: ClientOptions) -> None:
        self._config = config
        self._options = options
        self._clock: Clock = options.clock or RealClock()
        self._limiter = TokenBucket(options.qps, options.burst, clock=self._clock)
        self._host = urlsplit(config.server).netloc or config.server
        self._base = config.server.rstrip("/")
        self._request_session: aiohttp.ClientSession | None = None
        self._watch_session: aiohttp.ClientSession | None = None
        self._closed = False
        metrics = options.metrics
        self._m_requests = metrics.counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
        )
        self._m_duration = metrics.histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ("verb", "host"),
            LATENCY_BUCKETS,
        )
        self._m_limiter = metrics.histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ("verb", "host"),
            LATENCY_BUCKETS,
        )
        self._m_request_size = metrics.histogram(
            "rest_client_request_size_bytes",
            "Request size in bytes. Broken down by verb and host.",
            ("verb", "host"),
            SIZE_BUCKETS,
        )
        self._m_response_size = metrics.histogram(
            "rest_client_response_size_bytes",
            "Response size in bytes. Broken down by verb and host.",
            ("verb", "host"),
            SIZE_BUCKETS,
        )
        self._m_retries = metrics.counter(
            "rest_client_request_retries_total",
            "Number of request retries, partitioned by status code, verb, and host.",
            ("code", "verb", "host"),
        )

    @property
    def clock(self) -> Clock:
        return self._clock

    def _session(self, *, watch: bool) -> aiohttp.ClientSession:
        if self._closed:
            raise TransportError("client is closed")
        if watch and self._watch_session is not None:
            return self._watch_session
        if not watch and self._request_session is not None:
            return self._request_session
        opts = self._options
        connector = aiohttp.TCPConnector(
            limit=opts.watch_pool_size if watch else opts.pool_size,
            limit_per_host=0,
            ssl=self._config.ssl_context if self._config.ssl_context is not None else True,
            keepalive_timeout=opts.keepalive_timeout_s,
        )
        headers = {"User-Agent": opts.user_agent, **self._config.headers}
        session = aiohttp.ClientSession(
            connector=connector,
            headers=headers,
            trust_env=False,
            auto_decompress=True,
            read_bufsize=2**21 if watch else 2**16,
        )
        if watch:
            self._watch_session = session
        else:
            self._request_session = session
        return session

    async def close(self) -> None:
        self._closed = True
        for session in (self._request_session, self._watch_session):
            if session is not None:
                await session.close()
        self._request_session = self._watch_session = None

    async def send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = "application/json",
    ) -> Response:
        """One request with throttling and bounded retries; raises ApiError on a failure status."""
        opts = self._options
        timeout = aiohttp.ClientTimeout(
            total=opts.request_timeout_s, sock_connect=opts.connect_timeout_s
        )
        call = _Call(method, path, params, body, content_type, accept, timeout, watch=False)
        resp = await self._with_retries(call)
        try:
            data = await self._read(resp, method, path)
            self._m_response_size.observe(len(data), verb=call.verb, host=self._host)
        finally:
            resp.release()
        return Response(resp.status, resp.content_type, data)

    async def open_stream(
        self,
        path: str,
        *,
        params: Mapping[str, str],
        accept: str,
    ) -> aiohttp.ClientResponse:
        """Open a watch; the caller reads and must close the returned response."""
        opts = self._options
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=opts.connect_timeout_s, sock_read=opts.watch_idle_timeout_s
        )
        return await self._with_retries(
            _Call("GET", path, params, None, None, accept, timeout, watch=True)
        )

    async def _read(self, resp: aiohttp.ClientResponse, method: str, path: str) -> bytes:
        try:
            return await resp.read()
        except TimeoutError as e:
            late = "body not received in time"
            raise _failure(RequestTimeout, method, path, e, status=resp.status, detail=late) from e
        except aiohttp.ClientError as e:
            raise _failure(TransportError, method, path, e, status=resp.status) from _cause(e)

    async def _with_retries(self, call: _Call) -> aiohttp.ClientResponse:
        verb = call.verb
        attempt = 0
        reauthenticated = False
        while True:
            waited = await self._limiter.acquire()
            self._m_limiter.observe(waited, verb=verb, host=self._host)
            try:
                resp = await self._attempt(call)
            except TransportError as e:
                if (
                    call.method != "GET"
                    or call.watch
                    or attempt >= self._options.max_retries
                    or isinstance(e, RequestTimeout | _TLSFailure)
                ):
                    unanswered = self._options.unanswered
                    if unanswered is None:
                        raise
                    raise unanswered(e) from e
                attempt += 1
                self._m_retries.inc(code="<error>", verb=verb, host=self._host)
                await self._clock.sleep(min(0.1 * 2**attempt, self._options.max_retry_wait_s))
                continue
            if resp.status < 400:
                return resp
            error = await self._error(resp, call.method, call.path)
            if resp.status == 401 and self._config.auth is not None and not reauthenticated:
                reauthenticated = True
                self._config.auth.invalidate()
                log.info("client.reauthenticating", host=self._host, path=call.path)
                continue
            delay = self._retry_delay(resp.status, error, attempt)
            if delay is None:
                raise error
            attempt += 1
            self._m_retries.inc(code=str(resp.status), verb=verb, host=self._host)
            log.debug(
                "client.retrying",
                status=resp.status,
                path=call.path,
                attempt=attempt,
                delay_s=delay,
            )
            await self._clock.sleep(delay)

    def _retry_delay(self, status: int, error: ApiError, attempt: int) -> float | None:
        if attempt >= self._options.max_retries:
            return None
        if status in (429, 503) or (status >= 500 and error.retry_after_s is not None):
            wait = error.retry_after_s if error.retry_after_s is not None else DEFAULT_RETRY_AFTER_S
            return max(0.0, min(wait, self._options.max_retry_wait_s))
        return None

    async def _attempt(self, call: _Call) -> aiohttp.ClientResponse:
        session = self._session(watch=call.watch)
        method, path = call.method, call.path
        headers = {"Accept": call.accept}
        if call.content_type is not None:
            headers["Content-Type"] = call.content_type
        if self._config.auth is not None:
            value = await self._config.auth.authorization()
            if value:
                headers["Authorization"] = value
        extra: dict[str, Any] = {}
        if self._config.proxy:
            extra["proxy"] = self._config.proxy
        if self._config.tls_server_name:
            extra["server_hostname"] = self._config.tls_server_name
        verb = call.verb
        started = time.perf_counter()
        code = "<error>"
        try:
            resp = await session.request(
                method,
                self._base + path,
                params=call.params,
                data=call.body,
                headers=headers,
                timeout=call.client_timeout,
                allow_redirects=False,
                **extra,
            )
            code = str(resp.status)
            return resp
        except TimeoutError as e:
            raise _failure(RequestTimeout, method, path, e, detail="no response in time") from e
        except aiohttp.ClientSSLError as e:
            raise _failure(_TLSFailure, method, path, e) from e
        except aiohttp.ClientError as e:
            raise _failure(TransportError, method, path, e) from _cause(e)
        finally:
            self._m_requests.inc(code=code, method=method, host=self._host)
            self._m_duration.observe(time.perf_counter() - started, verb=verb, host=self._host)
            self._m_request_size.observe(len(call.body or b""), verb=verb, host=self._host)

    async def _error(self, resp: aiohttp.ClientResponse, method: str, path: str) -> ApiError:
        try:
            raw = await self._read(resp, method, path)
        finally:
            resp.release()
        body: Mapping[str, Any] | bytes = raw
        if raw[:1] == b"{":
            try:
                decoded = orjson.loads(raw)
            except orjson.JSONDecodeError:
                decoded = None
            if isinstance(decoded, dict):
                body = decoded
        return error_from_status(
            resp.status, body, retry_after_s=_retry_after(resp.headers.get("Retry-After"))
        )


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header; HTTP dates are not used by the API server."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def decode_json(
    data: bytes, method: str, path: str, *, status: int | None = None, content_type: str = ""
) -> Any:
    """orjson, with undecodable bodies mapped to TransportError (a proxy's HTML error page).

    The message gives the body's size and content type and the decoder's complaint (library
    text with a position), not the body: it may be anything, a Secret's data included.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        kind = f", {content_type}" if content_type else ""
        raise _failure(
            TransportError,
            method,
            path,
            e,
            status=status,
            detail=f"response is not JSON ({len(data)} bytes{kind}): {e.msg} at byte {e.pos}",
        ) from None


# -- describing failures without quoting them -----------------------------------------------

_PARSER_REASON: Final = re.compile(r"[A-Za-z][A-Za-z ,/-]{2,60}")
"""aiohttp's parser messages start with fixed text ("Bad status line", "Invalid header token",
"Invalid character in chunk size") before the quoted bytes; only such a prefix is kept."""
_SSL_REASON: Final = re.compile(r"[A-Z0-9_]{2,64}")
_PAYLOAD_ERRORS: Final[Mapping[str, str]] = {
    "TransferEncodingError": "chunked body broken or cut short",
    "ContentLengthError": "body shorter than its Content-Length",
    "ContentEncodingError": "body cannot be decompressed",
}


def describe_failure(error: BaseException) -> str:
    """`<class>: <description>` of a failed request, safe to put in any message.

    Not `repr(error)` nor `str(error)`: for aiohttp errors those can carry the request headers
    or the bytes received. The description comes from the error's class and from fields that
    only ever hold library text: an errno, an OpenSSL reason code, the verifier's message,
    aiohttp's fixed parser wording.
    """
    return f"{type(error).__name__}: {_detail(error)}"


def _detail(error: BaseException) -> str:
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        return "certificate verification failed" + _verify_message(error.certificate_error)
    if isinstance(error, aiohttp.ClientSSLError):
        return "TLS failed" + _ssl_reason(error.os_error)
    if isinstance(error, ssl.SSLError):
        return "TLS failed" + _ssl_reason(error)
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection without a complete response"
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, aiohttp.ClientConnectorError):
        return "cannot connect" + _os_reason(error.os_error)
    if isinstance(error, aiohttp.ClientPayloadError):
        cause = error.__cause__
        if isinstance(cause, ssl.SSLError):
            return "response body unreadable: TLS failed" + _ssl_reason(cause)
        if isinstance(cause, OSError):
            return "response body unreadable" + _os_reason(cause)
        name = type(cause).__name__ if cause is not None else ""
        return f"response body unreadable: {_PAYLOAD_ERRORS.get(name, 'incomplete')}"
    if isinstance(error, aiohttp.ClientResponseError):
        first = re.split(r"[:'\"\n]", error.message, maxsplit=1)[0].strip()
        what = first if _PARSER_REASON.fullmatch(first) else "unparseable"
        return f"malformed response: {what}"
    if isinstance(error, aiohttp.InvalidURL):
        return "invalid URL"
    if isinstance(error, OSError):
        return "connection failed" + _os_reason(error)
    return "request failed"


def _os_reason(error: OSError | None) -> str:
    if isinstance(error, ssl.SSLError):
        return ": TLS failed" + _ssl_reason(error)
    code = getattr(error, "errno", None)
    if isinstance(code, int) and code in errno.errorcode:
        return f": {errno.errorcode[code]}"
    return ""


def _ssl_reason(error: BaseException | None) -> str:
    reason = getattr(error, "reason", None)
    return f": {reason}" if isinstance(reason, str) and _SSL_REASON.fullmatch(reason) else ""


def _verify_message(error: BaseException | None) -> str:
    message = getattr(error, "verify_message", None)
    return f": {message[:200]}" if isinstance(message, str) and message else ""


def _cause(error: aiohttp.ClientError) -> BaseException | None:
    """The error to chain as `__cause__`, or None when its text may quote received bytes.

    Tracebacks print the cause's text; parser and payload errors quote what the server (or
    anything in between) sent, so they are left out and only described.
    """
    if isinstance(error, aiohttp.ClientResponseError | aiohttp.ClientPayloadError):
        return None
    return error


def _failure(
    cls: type[TransportError],
    method: str,
    path: str,
    error: BaseException,
    *,
    status: int | None = None,
    detail: str | None = None,
) -> TransportError:
    """`cls` for `error` on `method path`, with the fields set and a message built from them."""
    reason = type(error).__name__
    head = f"{method} {path}" + (f" (HTTP {status})" if status else "")
    what = f"{reason}: {detail}" if detail else describe_failure(error)
    return cls(
        f"{head}: {what}",
        method=method,
        path=path,
        status=status,
        reason=reason,
    )
