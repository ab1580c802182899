"""kro.applyset.cache: remembers what we last applied to each object, to skip no-op applies.

Why: kro re-applies the full desired state of every child on every reconcile (drift
correction, R-20). Server-side apply of unchanged content is a no-op for the object, but still
a write request through admission, and a steady-state cluster should cost zero writes.

The proof that a skip is safe: after our apply of body B returned an object at resourceVersion
R, an object still at R has not been written by anyone since (resourceVersions change on every
write), so it still holds exactly what applying B produced, with our field manager owning B's
fields. Applying B again would change nothing. Any foreign edit, deletion and re-creation (new
UID), or change of B (new digest) breaks the match and we apply again.

Keyed by UID with the resourceVersion stored in the entry, which is equivalent to keying by
(uid, resourceVersion) but lets a newer apply replace the stale entry instead of piling up.
Bounded LRU: a forgotten entry only costs one redundant apply. In memory only: after a restart
the first reconcile applies everything once.

The same entries answer a reader's question without a request (`applied_version`): "what did
the server answer to kro's last apply of this object?". A pass that finds an object in a
metadata-only cache at that resourceVersion knows the rest of it is what it applied.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["AppliedCache", "digest"]


def digest(body: Mapping[str, Any]) -> str:
    """A stable hash of an apply body (key order does not matter)."""
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _uid_and_version(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")


class AppliedCache:
    """uid -> (resourceVersion after our apply, digest of the body applied)."""

    def __init__(self, max_entries: int = 16384) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max_entries = max_entries
        self._entries: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def is_current(self, live: Mapping[str, Any], body_digest: str) -> bool:
        """Whether `live` is exactly what our last apply of this digest left behind."""
        uid, version = _uid_and_version(live)
        entry = self._entries.get(uid) if uid and version else None
        if entry is None:
            return False
        self._entries.move_to_end(uid)
        return entry == (version, body_digest)

    def applied_version(self, uid: str) -> str | None:
        """The resourceVersion our last apply of object `uid` returned, if known."""
        entry = self._entries.get(uid)
        return entry[0] if entry else None

    def remember(self, applied: Mapping[str, Any], body_digest: str) -> None:
        """Record the server's answer to our apply of the body with `body_digest`."""
        uid, version = _uid_and_version(applied)
        if not uid or not version:
            return
        self._entries[uid] = (version, body_digest)
        self._entries.move_to_end(uid)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def forget(self, uid: str) -> None:
        self._entries.pop(uid, None)
