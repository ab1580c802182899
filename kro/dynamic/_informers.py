"""kro.dynamic._informers: metadata-only, all-namespace informers per GVR, synced on acquire.

Upstream's `watch.Manager` (W-02). Reference counting and sharing are the process's informer
registry's (kro.runtime.cache.InformerCache, acquire/release): the controller's parent watches,
the coordinator's child watches and any other controller of the process ask for the same key,
so a GVR that is both parent and child costs one informer. This
pool adds what the dynamic controller needs on top: waiting for the first LIST with a deadline
(a kind whose CRD is gone must not park a worker forever), the sync-duration histogram, and the
`dynamic_controller_watch_count` gauge over the GVRs it holds.

A LIST the API server refuses (403) ends the wait at once: a parent kind cannot be served
(WatchForbidden, which its RGD reports), while a watched kind is held anyway, unlisted, so that
its informer keeps retrying and its first list reaches the parents that wait for it (the
informer's state listeners, kro.dynamic.watches).

A sharded replica may hold two informers of one GVR: the sharded one (its own namespaces) and
the whole kind (what the shard would not deliver); `covering` says which cache can answer.
"""

from __future__ import annotations

import structlog

from kro.dynamic._metrics import DynamicMetrics, gvr_string
from kro.dynamic.errors import InformerSyncTimeout, WatchForbidden
from kro.runtime.cache import InformerCache
from kro.runtime.clock import Clock
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer

log = structlog.get_logger(__name__)


class InformerPool:
    """Acquire/release informers by GVR; every acquire is paired with exactly one release."""

    def __init__(
        self,
        cache: InformerCache,
        *,
        sync_timeout_s: float,
        clock: Clock,
        metrics: DynamicMetrics,
    ) -> None:
        self._cache = cache
        self._sync_timeout_s = sync_timeout_s
        self._clock = clock
        self._metrics = metrics
        self._refs: dict[GVR, int] = {}  # our references per GVR; keys = the GVRs we watch
        # The informers behind each key of _refs, one entry per reference, with `sharded`.
        self._held: dict[GVR, list[tuple[Informer, bool]]] = {}

    @property
    def sharded(self) -> bool:
        """Whether `acquire(..., sharded=True)` gives a sharded informer (this replica is one
        of several sharing the instances, kro.runtime.sharding)."""
        return self._cache.shard is not None

    @property
    def shard_version(self) -> int:
        """The version of the shard ranges (kro.runtime.sharding.ShardView); 0 without one."""
        shard = self._cache.shard
        return shard.version if shard is not None else 0

    def gvrs(self) -> frozenset[GVR]:
        """The GVRs with at least one reference held through this pool."""
        return frozenset(self._refs)

    async def acquire(
        self, gvr: GVR, *, sharded: bool = False, keep_refused: bool = False
    ) -> Informer:
        """The shared informer of `gvr`, listed. InformerSyncTimeout after the deadline.
        `sharded`: only this replica's shard ranges (parents; see kro.runtime.sharding).

        A refused list (403) ends the wait: WatchForbidden, or with `keep_refused` the
        informer as it is, not listed, still held and retrying (`Informer.refused` says why).
        """
        started = self._clock.now()
        informer = await self._cache.acquire(gvr, metadata_only=True, sharded=sharded)
        self._count(gvr, +1)
        fresh = not informer.has_synced()
        try:
            synced = await informer.wait_for_sync(self._sync_timeout_s, until_refused=True)
        except BaseException:
            await self.release(informer)
            raise
        refused = informer.refused
        if not synced and refused is not None:
            log.warning("informer.list_refused", gvr=str(gvr), error=str(refused))
            if not keep_refused:
                await self.release(informer)
                raise WatchForbidden(gvr, refused)
            self._held.setdefault(gvr, []).append((informer, sharded))
            return informer
        if not synced:
            await self.release(informer)
            log.warning("informer.sync_timeout", gvr=str(gvr), timeout_s=self._sync_timeout_s)
            raise InformerSyncTimeout(gvr, self._sync_timeout_s)
        if fresh:
            self._metrics.informer_sync_duration.observe(
                self._clock.now() - started, gvr=gvr_string(gvr)
            )
        self._held.setdefault(gvr, []).append((informer, sharded))
        return informer

    def synced(self, gvr: GVR) -> Informer | None:
        """The informer of `gvr` if this pool holds it and it has listed, else None.

        Why: a reconcile can confirm from the cache that nothing it read has changed (same
        resourceVersions) instead of asking the API server; a cache it cannot trust (not held,
        not listed) must send it back to a GET.
        """
        held = self._held.get(gvr) or []
        # A whole-kind informer first: a sharded one does not see other shards' objects.
        for informer, _sharded in sorted(held, key=lambda entry: entry[1]):
            if informer.has_synced():
                return informer
        return None

    def covering(self, gvr: GVR, namespace: str | None) -> Informer | None:
        """A held informer of `gvr` whose cache holds every object of `namespace` ("":
        cluster-scoped, None: all namespaces), else None (see Informer.covers).

        Why: a sharded informer holds only this replica's namespaces, and only once it has
        relisted after a change of ranges; asked about anything else, its cache would answer
        "no such object" where the truth is "not known here".
        """
        for informer, _sharded in self._held.get(gvr) or []:
            if informer.covers(namespace):
                return informer
        return None

    async def release(self, informer: Informer) -> None:
        """Drop one reference; the cache stops the informer when nobody else holds it."""
        self._count(informer.gvr, -1)
        held = self._held.get(informer.gvr) or []
        for index, (candidate, _) in enumerate(held):
            if candidate is informer:
                del held[index]
                break
        if informer not in self._cache.informers():
            # The cache was closed first (its owner stopped it before us): nothing to release.
            log.debug("informer.already_stopped", gvr=str(informer.gvr))
            return
        await self._cache.release(informer)

    def _count(self, gvr: GVR, delta: int) -> None:
        refs = self._refs.get(gvr, 0) + delta
        if refs > 0:
            self._refs[gvr] = refs
        else:
            self._refs.pop(gvr, None)
            self._held.pop(gvr, None)
        self._metrics.watch_count.set(len(self._refs))
