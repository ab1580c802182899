"""kro.runtime.redact: remove credentials from text before it leaves through logs or Events.

    scrub(text, limit)   credentials replaced by "[REDACTED]", then cut to `limit` UTF-8 bytes
                         (marked " [truncated]"); `limit=None` only redacts
    redact(text)         the redaction alone
    cap(text, limit)     the cut alone

Who calls it: `events.EventRecorder.record` (every Event message, capped at
`EVENT_MESSAGE_LIMIT`), the log configuration in `logging` (every rendered field), the errors in
`errors` (every message, capped at `errors.MAX_MESSAGE_BYTES`), and kro's `set_condition`
(every condition message, capped at `CONDITION_MESSAGE_LIMIT`). What the rules recognise is
listed in docs/troubleshooting.md ("What kro never writes").

The implementation is `kro._redact`, a dependency-free leaf of the root package: conditions
are written by `kro.api`, which may not import this package (its import would load aiohttp), so
the one implementation lives below both. It knows nothing of kro; this package still imports no
other kro *package*.
"""

from __future__ import annotations

from kro import _redact

CONDITION_MESSAGE_LIMIT = _redact.CONDITION_MESSAGE_LIMIT
EVENT_MESSAGE_LIMIT = _redact.EVENT_MESSAGE_LIMIT
REDACTED = _redact.REDACTED
TRUNCATED = _redact.TRUNCATED
cap = _redact.cap
redact = _redact.redact
scrub = _redact.scrub

__all__ = [
    "CONDITION_MESSAGE_LIMIT",
    "EVENT_MESSAGE_LIMIT",
    "REDACTED",
    "TRUNCATED",
    "cap",
    "redact",
    "scrub",
]
