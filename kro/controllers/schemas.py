"""kro.controllers.schemas: the SchemaResolver the controller uses — the live cluster's OpenAPI.

The graph builder is pure and resolves schemas synchronously from memory; this resolver does the
I/O in `prefetch()`: one GET of `/openapi/v3/<group-version>` and one discovery lookup per group
version the RGD references, cached with a TTL (upstream: 5 minutes, G-07) so that CRDs installed
later are picked up, and with concurrent fetches of the same group version de-duplicated.

Invalidation (a CRD was added or changed) makes the next prefetch fetch again; it does not take
schemas away from a build that is between its prefetch and its synchronous resolves. A build
prefetches several group versions concurrently, and a CRD event arriving in between (another
RGD's CRD, or another replica's) used to empty the cache under it: `resolve` then failed with
"schema not found" for a kind it had just fetched, and the graph was reported invalid. So
invalidated entries, and fetches that straddle an invalidation, stay resolvable as "stale" until
their group version is fetched again: such a build sees the schema as it was just before the
event, exactly as if the event had come a moment later, and the event re-enqueues what it
concerns.
Schemas are resolved into self-contained per-kind schemas by `kro.graph.resolver.build_bundle`,
the same code that produced the offline bundle, so offline and live checks agree.

A kind that cannot be resolved is named as upstream names it in the RGD's condition: `cannot
resolve group version "<gv>": schema not found` when the API server serves no such group
version, `cannot resolve group version kind "<gv>, Kind=<kind>": schema not found` when it does
but the kind is not in it (G-07). A group version served without any resolvable kind is
remembered as served (not cached: a CRD may appear in it any moment).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass

import structlog

from kro.controllers.metrics import SchemaResolverMetrics
from kro.graph.resolver import (
    GVK,
    ResolvedSchema,
    build_bundle,
    unknown_group_version,
    unknown_kind,
)
from kro.runtime.client import Client
from kro.runtime.errors import NotFound

log = structlog.get_logger(__name__)

DEFAULT_TTL_S = 300.0


@dataclass(frozen=True, slots=True)
class _Entry:
    fetched_at: float
    kinds: dict[GVK, ResolvedSchema]
    served: bool = True
    """False when the API server answered 404 for the group version."""


class LiveSchemaResolver:
    """Schemas from the API server, per group version, cached for `ttl_s` seconds."""

    def __init__(
        self,
        client: Client,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        metrics: SchemaResolverMetrics | None = None,
    ) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._cache: dict[tuple[str, str], _Entry] = {}
        self._stale: dict[tuple[str, str], _Entry] = {}
        self._epoch = 0  # invalidations so far
        self._inflight: dict[tuple[str, str], asyncio.Future[_Entry]] = {}
        # Group versions whose last fetch found them served but with no kind to resolve.
        self._served_empty: set[tuple[str, str]] = set()
        self._metrics = metrics or SchemaResolverMetrics()

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        group_version = (gvk.group, gvk.version)
        entry = self._cache.get(group_version) or self._stale.get(group_version)
        if entry is None and group_version not in self._served_empty:
            raise unknown_group_version(gvk)
        if entry is None or gvk not in entry.kinds:
            raise unknown_kind(gvk)
        return entry.kinds[gvk]

    async def prefetch(self, gvks: Iterable[GVK]) -> None:
        wanted = {(g.group, g.version) for g in gvks}
        await asyncio.gather(*(self._ensure(gv) for gv in sorted(wanted)))

    def invalidate(self) -> None:
        """Forget everything (e.g. when a CRD changed and its schema must be re-read)."""
        evicted = self._size()
        self._epoch += 1
        self._stale.update(self._cache)
        self._cache.clear()
        if evicted:
            self._metrics.evictions.inc(evicted)
        self._metrics.size.set(0)

    def _size(self) -> int:
        return sum(len(e.kinds) for e in self._cache.values())

    async def _ensure(self, group_version: tuple[str, str]) -> None:
        entry = self._cache.get(group_version)
        if entry is not None and time.monotonic() - entry.fetched_at < self._ttl_s:
            self._metrics.hits.inc()
            return
        pending = self._inflight.get(group_version)
        if pending is not None:
            self._metrics.deduplicated.inc()
            await asyncio.shield(pending)
            return
        self._metrics.misses.inc()
        future: asyncio.Future[_Entry] = asyncio.get_running_loop().create_future()
        self._inflight[group_version] = future
        started, epoch = time.monotonic(), self._epoch
        try:
            fetched = await self._fetch(*group_version)
            self._store(group_version, fetched, fresh=epoch == self._epoch)
            future.set_result(fetched)
        except BaseException as error:
            if isinstance(error, Exception):
                self._metrics.errors.inc()
            future.set_exception(error)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            self._metrics.api_call_duration.observe(time.monotonic() - started)
            del self._inflight[group_version]

    def _store(self, group_version: tuple[str, str], fetched: _Entry, *, fresh: bool) -> None:
        """Cache a fetch; one that an invalidation overtook is only kept as stale."""
        self._stale.pop(group_version, None)
        stale = self._cache.pop(group_version, None)
        if stale is not None and stale.kinds:
            self._metrics.evictions.inc(len(stale.kinds))
        if fetched.kinds:  # a missing group version may appear any moment: never cache it
            (self._cache if fresh else self._stale)[group_version] = fetched
            self._served_empty.discard(group_version)
        elif fetched.served:
            self._served_empty.add(group_version)
        else:
            self._served_empty.discard(group_version)
        self._metrics.size.set(self._size())

    async def _confirm_absent(self, path: str) -> None:
        """Discovery of the group version answers NotFound (or, oddly, serves it without an
        OpenAPI document); any other error propagates."""
        try:
            await self._client.request("GET", f"/{path}")
        except NotFound:
            return

    async def _fetch(self, group: str, version: str) -> _Entry:
        path = f"api/{version}" if not group else f"apis/{group}/{version}"
        try:
            document = await self._client.request("GET", f"/openapi/v3/{path}")
        except NotFound:
            # No OpenAPI document: absent only if discovery says so too. An aggregated API
            # whose server is down has no document either, but discovery answers 503 for it:
            # that outage is raised (retried), never taken for a kind not served, which a
            # deferred node (kro.graph.deferred) would quietly wait for.
            await self._confirm_absent(path)
            log.info("schemas.group_version_missing", group=group, version=version)
            return _Entry(time.monotonic(), {}, served=False)
        try:
            discovery = await self._client.request("GET", f"/{path}")
        except NotFound:
            log.info("schemas.group_version_missing", group=group, version=version)
            return _Entry(time.monotonic(), {}, served=False)
        bundle = build_bundle({path: document}, [discovery])
        kinds: dict[GVK, ResolvedSchema] = {}
        for key, item in bundle.items():
            gvk = GVK.from_key(key)
            kinds[gvk] = ResolvedSchema(
                gvk=gvk,
                schema=item["schema"],
                namespaced=bool(item["namespaced"]),
                resource=str(item.get("resource", "")),
            )
        log.debug("schemas.fetched", group=group, version=version, kinds=len(kinds))
        return _Entry(time.monotonic(), kinds)
