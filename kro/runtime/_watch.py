"""kro.runtime._watch: turn a watch response body into `WatchEvent`s.

A watch body is JSON lines: `{"type": ..., "object": {...}}`. We split lines ourselves rather than
use aiohttp's readline, whose line cap (2 x read_bufsize) is smaller than the largest objects
etcd accepts; our cap is `max_line_bytes`. Failures are mapped here:

* a line that is not a JSON event (a proxy's text error, a torn line) -> TransportError;
* an `ERROR` event -> the ApiError of its Status (`Gone` for 410: the caller must relist);
* no bytes for the idle timeout -> RequestTimeout (reconnect from the last resourceVersion);
* a connection dropped mid-stream -> TransportError (same).

This is the per-event hot path (bench/bench_client.py and bench/bench_informer.py measure it).
For a 7.5 KB Deployment event arriving on its own over TLS, ~65% of the instructions are
`orjson.loads` (half of that for managedFields), ~30% asyncio + TLS + aiohttp per read and ~5%
this module and its caller. So this module does as little as it can per event: one `find` per
line, no copy beyond the line itself, one decode, no per-read timer, and (opt-in) no decoding of
managedFields for callers that drop them anyway.

The idle timeout: aiohttp's `sock_read` (set by the transport) bounds the wait for the response
head, but for the body it re-arms a loop timer for every TLS record (~3 per Deployment event),
~5% of an event's instructions. `iter_lines` swaps it for `_IdleWatchdog`, one timer per quarter
of the idle timeout that samples the byte counter: a stream silent for the idle timeout still
fails (within 1.25x the timeout) and a busy one pays nothing per read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

import aiohttp
import orjson

from kro.runtime._transport import describe_failure
from kro.runtime.errors import RequestTimeout, TransportError, error_from_status

EVENT_TYPES: Final = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
"""A tuple, not a set: membership compares, so an unhashable `type` cannot raise TypeError."""

_WATCHDOG_TICKS: Final = 4
"""Idle checks per idle timeout: a silent stream fails between 1x and 1.25x the timeout."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: `type` is ADDED, MODIFIED, DELETED or BOOKMARK (ERROR is raised instead).

    For BOOKMARK, `object` carries only `metadata.resourceVersion` (resume point, no change).
    """

    type: str
    object: dict[str, Any]


class _IdleWatchdog:
    """Fails a stream with TimeoutError once no bytes arrived for `idle_s` while its reader waits.

    It samples `StreamReader.total_bytes` every `idle_s / 4` instead of being re-armed per read.
    A reader that is busy elsewhere (data buffered, aiohttp paused the socket) is not timed out.
    """

    __slots__ = ("_content", "_handle", "_idle_s", "_loop", "_quiet_since", "_seen", "waiting")

    def __init__(self, content: aiohttp.StreamReader, idle_s: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._content = content
        self._idle_s = idle_s
        self._seen = content.total_bytes
        self._quiet_since = self._loop.time()
        self.waiting = False
        self._handle: asyncio.TimerHandle | None = self._loop.call_at(
            self._quiet_since + idle_s / _WATCHDOG_TICKS, self._check
        )

    @classmethod
    def take_over(cls, resp: aiohttp.ClientResponse) -> _IdleWatchdog | None:
        """Replace aiohttp's per-read `sock_read` timer on `resp` (None if it has none)."""
        connection = resp.connection
        protocol = connection.protocol if connection is not None else None
        if protocol is None or not protocol.read_timeout:
            return None
        idle_s = protocol.read_timeout
        # aiohttp drops its pending timer at the next read; should the stream stay silent, that
        # timer fires first and fails the read exactly as ours would.
        protocol.read_timeout = None
        return cls(resp.content, idle_s)

    def _check(self) -> None:
        now = self._loop.time()
        total = self._content.total_bytes
        if total != self._seen:
            self._seen, self._quiet_since = total, now
        elif self.waiting and now - self._quiet_since >= self._idle_s:
            self._handle = None
            self._content.set_exception(TimeoutError("watch: no data within the idle timeout"))
            return
        self._handle = self._loop.call_at(now + self._idle_s / _WATCHDOG_TICKS, self._check)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


async def iter_lines(resp: aiohttp.ClientResponse, *, max_line_bytes: int) -> AsyncIterator[bytes]:
    """Yield complete non-empty lines; a partial line at EOF means the stream was torn."""
    content = resp.content
    readany = content.readany  # what iter_any() wraps, minus one frame per read
    watchdog = _IdleWatchdog.take_over(resp)
    parts: list[bytes] = []  # the start of a line that spans reads
    size = 0
    try:
        while True:
            if watchdog is not None:
                watchdog.waiting = True
                chunk = await readany()
                watchdog.waiting = False
            else:
                chunk = await readany()
            if not chunk:  # EOF
                break
            start = 0
            nl = chunk.find(b"\n")
            if parts:
                if nl < 0:
                    parts.append(chunk)
                    size += len(chunk)
                    if size > max_line_bytes:
                        raise TransportError(f"watch event larger than {max_line_bytes} bytes")
                    continue
                parts.append(chunk[:nl])
                line = b"".join(parts)
                parts.clear()
                size = 0
                if line and not line.isspace():
                    yield line
                start = nl + 1
                nl = chunk.find(b"\n", start)
            while nl >= 0:
                line = chunk[start:nl]
                start = nl + 1
                if line and not line.isspace():
                    yield line
                nl = chunk.find(b"\n", start)
            if start < len(chunk):
                rest = chunk[start:] if start else chunk
                parts.append(rest)
                size = len(rest)
                if size > max_line_bytes:
                    raise TransportError(f"watch event larger than {max_line_bytes} bytes")
    except TimeoutError as e:
        raise RequestTimeout("watch: no data within the idle timeout") from e
    except aiohttp.ClientError as e:
        raise TransportError(f"watch: connection failed: {describe_failure(e)}") from e
    finally:
        if watchdog is not None:
            watchdog.cancel()
    tail = b"".join(parts)
    if tail and not tail.isspace():
        raise TransportError("watch: stream ended in the middle of an event")


def decode_event(line: bytes, *, drop_managed_fields: bool = False) -> WatchEvent:
    """Parse one line; raise for ERROR events and for anything that is not an event.

    drop_managed_fields: leave `object.metadata.managedFields` out, mostly without decoding it
        (`_decode_without_managed_fields`), for callers that would drop it anyway.
    """
    raw = _decode_without_managed_fields(line) if drop_managed_fields else None
    if raw is None:
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            # Never the bytes: a torn line of a Secret watch would carry Secret data.
            raise TransportError(f"watch: undecodable line of {len(line)} bytes: {e}") from None
    if type(raw) is not dict:  # orjson builds exact dicts: no subclass to allow for
        raise TransportError(f"watch: unexpected line of {len(line)} bytes: not a JSON object")
    kind = raw.get("type")
    obj = raw.get("object")
    if kind in EVENT_TYPES and type(obj) is dict:
        if drop_managed_fields:
            meta = obj.get("metadata")
            if type(meta) is dict:
                meta.pop("managedFields", None)
        return WatchEvent(kind, obj)
    if kind == "ERROR":
        status = obj if isinstance(obj, dict) else {}
        code = status.get("code")
        raise error_from_status(code if isinstance(code, int) else 500, status)
    raise TransportError(f"watch: unexpected event of type {str(kind)[:40]!r}")


_MANAGED_FIELDS: Final = b'"managedFields":[{'
_MANAGED_FIELDS_VALUE: Final = len(b'"managedFields":')  # offset of the array in the match


def _decode_without_managed_fields(line: bytes) -> Any:
    """The decoded event with `object.metadata.managedFields` cut out of the bytes beforehand,
    or None when the cut does not provably hit it (the caller then decodes the line whole).

    managedFields is half of a typical object's JSON and most of its dicts (fieldsV1 is a trie of
    empty objects): skipping it halves the decode of a full Deployment and cuts that of a
    metadata-only event by ~90%. The API server writes compact JSON, and a managedFields array
    is `[{...},...]` with no array inside its entries, so it ends at its first `}]`. We replace
    `[{` ... `}]` with `0` and accept the result only if `object.metadata.managedFields` is that
    0, a value the server never sends there. Anything else fails to decode or fails that check:
    a `"managedFields"` key elsewhere (its 0 lands elsewhere), or a `}]` inside a string (the
    rest then parses with string and structure swapped: field names become bare words).
    """
    at = line.find(_MANAGED_FIELDS)
    if at <= 0 or line[at - 1] not in b"{,":  # a key, not the inside of a string
        return None
    start = at + _MANAGED_FIELDS_VALUE
    end = line.find(b"}]", start)
    if end < 0 or line.find(b"]", start, end) >= 0:  # the first "]" must be ours
        return None
    try:
        raw = orjson.loads(b"".join((line[:start], b"0", line[end + 2 :])))
    except orjson.JSONDecodeError:
        return None
    obj = raw.get("object") if type(raw) is dict else None
    meta = obj.get("metadata") if type(obj) is dict else None
    if type(meta) is not dict or type(meta.get("managedFields")) is not int:
        return None
    if meta.pop("managedFields") != 0:
        return None
    return raw
