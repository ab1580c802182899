"""kro.runtime._watch: turn a watch response body into `WatchEvent`s.

A watch body is JSON lines: `{"type": ..., "object": {...}}`. We split lines ourselves rather than
use aiohttp's readline, whose line cap (2 x read_bufsize) is smaller than the largest objects
etcd accepts; our cap is `max_line_bytes`. Failures are mapped here:

* a line that is not a JSON event (a proxy's text error, a torn line) -> TransportError;
* an `ERROR` event -> the ApiError of its Status (`Gone` for 410: the caller must relist);
* no bytes for the idle timeout -> RequestTimeout (reconnect from the last resourceVersion);
* a connection dropped mid-stream -> TransportError (same).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from kro.runtime.errors import RequestTimeout, TransportError, error_from_status

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: `type` is ADDED, MODIFIED, DELETED or BOOKMARK (ERROR is raised instead).

    For BOOKMARK, `object` carries only `metadata.resourceVersion` (resume point, no change).
    """

    type: str
    object: dict[str, Any]


async def iter_lines(resp: aiohttp.ClientResponse, *, max_line_bytes: int) -> AsyncIterator[bytes]:
    """Yield complete non-empty lines; a partial line at EOF means the stream was torn."""
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in resp.content.iter_any():
            start = 0
            while (nl := chunk.find(b"\n", start)) >= 0:
                if parts:
                    parts.append(chunk[start:nl])
                    line = b"".join(parts)
                    parts.clear()
                    size = 0
                else:
                    line = chunk[start:nl]
                start = nl + 1
                if line.strip():
                    yield line
            if start < len(chunk):
                parts.append(chunk[start:])
                size += len(chunk) - start
                if size > max_line_bytes:
                    raise TransportError(f"watch event larger than {max_line_bytes} bytes")
    except TimeoutError as e:
        raise RequestTimeout("watch: no data within the idle timeout") from e
    except aiohttp.ClientError as e:
        raise TransportError(f"watch: connection failed: {e!r}") from e
    tail = b"".join(parts)
    if tail.strip():
        raise TransportError("watch: stream ended in the middle of an event")


def decode_event(line: bytes) -> WatchEvent:
    """Parse one line; raise for ERROR events and for anything that is not an event."""
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise TransportError(f"watch: undecodable line: {line[:200]!r}") from e
    if not isinstance(raw, dict):
        raise TransportError(f"watch: unexpected line: {line[:200]!r}")
    kind = raw.get("type")
    obj = raw.get("object")
    if kind == "ERROR":
        status = obj if isinstance(obj, dict) else {}
        code = status.get("code")
        raise error_from_status(code if isinstance(code, int) else 500, status)
    if kind not in EVENT_TYPES or not isinstance(obj, dict):
        raise TransportError(f"watch: unexpected event: {line[:200]!r}")
    return WatchEvent(kind, obj)
