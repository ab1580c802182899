"""kro.applyset.cache: what we last applied to each object, to skip no-op applies (one fact of
kro's one skip memory, kro.runtime.memory).

Why: kro re-applies the full desired state of every child on every reconcile (drift
correction, R-20). An apply of unchanged content changes nothing but is still a write request
through admission, and a steady-state cluster should cost zero writes.

The proof: after our apply of body B returned an object at resourceVersion R, an object still
at R has not been written by anyone since, so it holds exactly what applying B produced, with
our field manager owning B's fields; applying B again would change nothing. A foreign edit, a
re-creation (new UID) or a change of B (new digest) breaks the match. Keyed by UID with the
version in the entry, so a newer apply replaces the stale one; bounded LRU, in memory only
(forgetting costs one redundant apply). The same entries tell a reader, without a request, what
the server answered to kro's last apply of an object (`applied_version`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from kro.runtime.memory import Fact, ObjectMemory

__all__ = ["AppliedCache", "digest"]


def digest(body: Mapping[str, Any]) -> str:
    """A stable hash of an apply body (key order does not matter)."""
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _uid_and_version(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")


class AppliedCache:
    """uid -> (resourceVersion after our apply, digest of the body applied), as the `APPLIED`
    fact of one `ObjectMemory` (kro.runtime.memory): exact versions only."""

    def __init__(
        self,
        max_entries: int = 16384,
        *,
        memory: ObjectMemory | None = None,
        fact: str = "applied",
    ) -> None:
        """`fact`: the name the facts are kept under, one per identity that applies (an RGD
        instance's ApplySet, a `Graph`): one must never vouch for what the other applied."""
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._fact: Fact[str] = Fact(fact, max_entries, exact=True)
        self.memory = memory if memory is not None else ObjectMemory()

    def is_current(self, live: Mapping[str, Any], body_digest: str) -> bool:
        """Whether `live` is exactly what our last apply of this digest left behind."""
        uid, version = _uid_and_version(live)
        if not uid or not version:
            return False
        return self.memory.recall(self._fact, uid, version) == body_digest

    def applied_version(self, uid: str) -> str | None:
        """The resourceVersion our last apply of object `uid` returned, if known."""
        return self.memory.version(self._fact, uid)

    def remember(self, applied: Mapping[str, Any], body_digest: str) -> None:
        """Record the server's answer to our apply of the body with `body_digest`."""
        uid, version = _uid_and_version(applied)
        if not uid or not version:
            return
        self.memory.remember(self._fact, uid, version, body_digest)
