"""kro.controllers.kind_waits: the owners whose deferred nodes wait for a kind to be served.

A deferred node (DeferredSchemaResolution, kro.graph.deferred) whose kind is not served waits
with reason `SchemaPending`. Nothing it reads can be watched (its kind has no resource yet), so
its owner would sleep until its requeue backoff came round, minutes later once the streak is
long. What ends the wait is a CRD of the kind's group becoming established, and kro watches
CRDs anyway (kro.controllers.app): every owner waiting on a kind of that group is enqueued the
moment the CRD informer sees it, and one Warning Event `WaitingForCRD` is recorded per owner
and kind when the wait starts (not on every pass).

The API server lists a kind in discovery a moment after its CRD says `Established`, so an owner
woken by the CRD event may still find it missing and no further CRD event would come: for a few
seconds after an event in its group, a waiting owner comes back after `RETRY_AFTER_EVENT_S`
instead of its backoff (`retry_after`).

A program compiled deferred while the kind's schema was not published yet is compiled again
once it is (`served_but_deferred` tells when a compile came too early).

Keys are the CRD's group only: the CRD informer sees metadata alone, whose name is
`<plural>.<group>`, and a kind's plural is not known before it is served. Waking an owner of
another kind of the same group costs one pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Final

import structlog

from kro.dynamic import ObjectRef
from kro.graph.model import Graph
from kro.runtime.discovery import RESTMapper
from kro.runtime.errors import NoKindMatch
from kro.runtime.gvk import GVK as RuntimeGVK

__all__ = ["RECENT_EVENT_S", "RETRY_AFTER_EVENT_S", "KindWaits", "served_but_deferred"]

log = structlog.get_logger(__name__)

RETRY_AFTER_EVENT_S: Final = 0.5
"""How soon an owner woken by a CRD event looks again when discovery did not list it yet."""
RECENT_EVENT_S: Final = 10.0
"""How long after a CRD event of its group a waiting owner retries that soon."""

Kind = tuple[str, str]
"""(group, kind) a deferred node waits for."""


class KindWaits:
    """Owner -> the kinds it waits for; wakes them by CRD group (see the module doc)."""

    def __init__(
        self,
        wake: Callable[[ObjectRef], None] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`wake(owner)`: put the owner on its controller's queue (set later by the app)."""
        self.wake = wake
        self._clock = clock
        self._waiting: dict[ObjectRef, frozenset[Kind]] = {}
        self._events: dict[str, float] = {}  # group -> when its last CRD event came

    def __len__(self) -> int:
        return len(self._waiting)

    def waiting(self, owner: ObjectRef, kinds: Iterable[Kind]) -> list[Kind]:
        """After a pass: the kinds `owner`'s deferred nodes wait for (none: it waits no more).
        Returns those it did not wait for before, to be announced once."""
        now = frozenset(kinds)
        before = self._waiting.get(owner, frozenset())
        if now:
            self._waiting[owner] = now
        else:
            self._waiting.pop(owner, None)
        return sorted(now - before)

    def forget(self, owner: ObjectRef) -> None:
        """The owner is gone."""
        self._waiting.pop(owner, None)

    def retry_after(self, kinds: Iterable[Kind]) -> float | None:
        """`RETRY_AFTER_EVENT_S` while a CRD event of one of these kinds' groups is recent
        (discovery may lag the event); None otherwise."""
        now = self._clock()
        for group, _ in kinds:
            seen = self._events.get(group)
            if seen is not None and now - seen < RECENT_EVENT_S:
                return RETRY_AFTER_EVENT_S
        return None

    def crd_changed(self, group: str) -> int:
        """A CRD of `group` appeared or changed: wake every owner waiting on a kind of it.
        Returns how many were woken."""
        self._events[group] = self._clock()
        owners = [o for o, kinds in self._waiting.items() if any(g == group for g, _ in kinds)]
        if self.wake is not None:
            for owner in owners:
                self.wake(owner)
        if owners:
            log.info("kind_waits.woken", group=group, owners=len(owners))
        return len(owners)


async def served_but_deferred(mapper: RESTMapper, graph: Graph) -> bool:
    """Whether a kind `graph` deferred is served now: its program was compiled before the
    API server published the kind's schema (discovery lists a new kind a moment before its
    OpenAPI document has it), so it should be compiled again, typed, a little later."""
    for node in graph.nodes.values():
        if not node.deferred:
            continue
        try:
            await mapper.resource_for(RuntimeGVK(node.gvk.group, node.gvk.version, node.gvk.kind))
        except NoKindMatch:
            continue
        return True
    return False
