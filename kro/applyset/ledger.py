"""kro.applyset.ledger: when the prune's list would find nothing to delete, skip the list (one
fact of kro's one skip memory, kro.runtime.memory).

Why: R-13 prunes after every pass that resolved everything by listing the ApplySet's members (a
label-selector LIST per kind and namespace, which the API server answers by filtering every
object of the kind in the namespace). On a converging instance that list finds exactly what the
pass applied, every time.

Members are only ever made by kro's applies, so this process can know an ApplySet's complete
member set: none for one whose empty inventory kro has just written (`started`); exactly what a
pass applied after a clean prune, or one skipped on this ledger's word (`settled`); what was
known plus what a pass that could not prune applied, kept only when that is the known set or
the ApplySet is new (`unpruned`). A pass that applies exactly that set (same UIDs) skips the
list; any other lists as before. Kept per ApplySet: a 16-byte digest of the sorted UIDs, or
"started"; bounded LRU, in memory only: forgetting, or a restart, costs one list. `epoch`
forgets everything when the replica's shard ranges change (kro.runtime.sharding): another
replica may have changed the members meanwhile.

What it cannot see: an object someone else labels with the ApplySet's id, or an orphan of a
parent whose finalizer was removed by hand, created again under the same name. Those are
pruned at the next list.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from kro.runtime.memory import UNVERSIONED, Fact, ObjectMemory

__all__ = ["MemberLedger"]

_STARTED = b""


def _digest(uids: Iterable[str]) -> bytes:
    return hashlib.blake2b("\n".join(sorted(uids)).encode(), digest_size=16).digest()


class MemberLedger:
    """ApplySet id -> what this process knows its complete member set to be: the `MEMBERS`
    fact of one `ObjectMemory` (kro.runtime.memory). Unversioned: only kro's own applies and
    prunes change an ApplySet's members, and this process sees each of its own."""

    def __init__(self, max_entries: int = 16384, *, memory: ObjectMemory | None = None) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._fact: Fact[bytes] = Fact("members", max_entries)
        self.memory = memory if memory is not None else ObjectMemory()
        self._epoch = 0

    def epoch(self, epoch: int) -> None:
        """Forget every ApplySet when `epoch` (the shard ranges' version) moved: what was known
        may have changed under another replica meanwhile."""
        if epoch != self._epoch:
            self.memory.clear(self._fact)
            self._epoch = epoch

    def started(self, applyset_id: str) -> None:
        """kro has just written the first inventory of this ApplySet: it has no member yet."""
        self.memory.remember(self._fact, applyset_id, UNVERSIONED, _STARTED)

    def settled(self, applyset_id: str, uids: Iterable[str]) -> None:
        """The ApplySet's members are exactly `uids` (a clean prune, or one skipped here)."""
        self.memory.remember(self._fact, applyset_id, UNVERSIONED, _digest(uids))

    def unpruned(self, applyset_id: str, applied: Iterable[str]) -> None:
        """A pass applied `applied` but did not prune (data pending, or an apply failed): the
        members are now what was known plus `applied`. A new ApplySet's members are exactly
        `applied`; a known set stays known only if `applied` is that same set."""
        entry = self.memory.recall(self._fact, applyset_id, None)
        if entry == _STARTED:
            self.settled(applyset_id, applied)
        elif entry is not None and entry != _digest(applied):
            self.forget(applyset_id)

    def nothing_to_prune(self, applyset_id: str, keep: Iterable[str]) -> bool:
        """Whether every member of the ApplySet is known to be in `keep`."""
        entry = self.memory.recall(self._fact, applyset_id, None)
        return entry is not None and entry in (_STARTED, _digest(keep))

    def knows(self, applyset_id: str) -> bool:
        """Whether this process knows the ApplySet's complete member set (a prune of it will
        list nothing unless the applied set differs)."""
        return self.memory.version(self._fact, applyset_id) is not None

    def forget(self, applyset_id: str) -> None:
        self.memory.forget(self._fact, applyset_id)
