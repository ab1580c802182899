"""kro.runtime.discovery: which resources the API server serves, and the kind <-> resource map.

`RESTMapper` answers "which URL serves kind K?" (`resource_for`) and "which kind lives at this
resource?" (`kind_for`), with scope, verbs and subresources. It reads aggregated discovery (two
requests for the whole server: `/api` and `/apis` with the `APIGroupDiscoveryList` Accept) and
falls back to legacy discovery (one request per group-version, in parallel) on servers older
than 1.26 or with aggregation turned off.

Why the refresh rules: kro looks up kinds whose CRDs may not exist yet, so misses are normal. A
miss refreshes at most once per `min_refresh_interval_s` (a controller retrying a missing kind
must not hammer discovery); concurrent refreshes share one flight; `invalidate()` (a CRD
changed) makes the next lookup refresh regardless. Nothing is cached on disk.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeVar

import structlog

from kro.runtime.clock import Clock, RealClock
from kro.runtime.errors import ApiError, NoKindMatch, TransportError
from kro.runtime.gvk import GVK, GVR, split_api_version

log = structlog.get_logger(__name__)

AGGREGATED_ACCEPT: Final = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
LEGACY_CONCURRENCY: Final = 8

_T = TypeVar("_T")

__all__ = ["AGGREGATED_ACCEPT", "DiscoveryClient", "NoKindMatch", "RESTMapper", "ResourceInfo"]


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One served resource at one version.

    subresources: names like "status" and "scale" (the parts after the slash).
    singular, short_names, categories: as served, for CLI-style lookups.
    """

    gvr: GVR
    gvk: GVK
    namespaced: bool
    verbs: frozenset[str]
    subresources: frozenset[str] = frozenset()
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    def has_verbs(self, *verbs: str) -> bool:
        return all(v in self.verbs for v in verbs)


class DiscoveryClient(Protocol):
    """The slice of `Client` discovery needs; kept narrow so tests can pass a stub."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = ...,
    ) -> Any: ...


@dataclass(slots=True)
class _Snapshot:
    by_gvk: dict[GVK, ResourceInfo] = field(default_factory=dict)
    by_gvr: dict[GVR, ResourceInfo] = field(default_factory=dict)
    preferred_versions: dict[str, str] = field(default_factory=dict)
    names: dict[str, ResourceInfo | None] = field(default_factory=dict)  # `find` memo

    def add(self, info: ResourceInfo) -> None:
        self.by_gvr[info.gvr] = info
        self.by_gvk.setdefault(info.gvk, info)


class RESTMapper:
    """Cached discovery with single-flight, rate-limited refreshes."""

    def __init__(
        self,
        client: DiscoveryClient,
        *,
        clock: Clock | None = None,
        min_refresh_interval_s: float = 1.0,
    ) -> None:
        self._client = client
        self._clock = clock or RealClock()
        self._min_refresh_interval_s = min_refresh_interval_s
        self._snapshot: _Snapshot | None = None
        self._refreshed_at = float("-inf")
        self._generation = 0
        self._fresh_generation = -1
        self._inflight: asyncio.Task[None] | None = None
        self._inflight_generation = 0

    async def resource_for(self, gvk: GVK) -> ResourceInfo:
        """The resource serving `gvk`; raises NoKindMatch after one refresh if still unknown."""
        return await self._lookup(lambda s: s.by_gvk.get(gvk), f"no resource for kind {gvk}")

    async def kind_for(self, gvr: GVR) -> ResourceInfo:
        """The kind served at `gvr`; raises NoKindMatch after one refresh if still unknown."""
        return await self._lookup(lambda s: s.by_gvr.get(gvr), f"no resource {gvr}")

    async def preferred_version(self, group: str) -> str:
        """The server's preferred version of an API group ("" is the core group)."""
        version = await self._lookup(
            lambda s: s.preferred_versions.get(group), f"no API group {group!r}"
        )
        return version

    async def resources(self) -> list[ResourceInfo]:
        """Everything served (all versions), from the cache unless invalidated."""
        if self._needs_refresh():
            await self.refresh()
        assert self._snapshot is not None
        return list(self._snapshot.by_gvr.values())

    @property
    def loaded(self) -> bool:
        """Whether discovery has been read at least once (`find` answers from that read)."""
        return self._snapshot is not None

    def find(self, name: str | GVK) -> ResourceInfo | None:
        """The resource a name means, from discovery as last read (no request; None when unknown
        or not read yet). Accepts what kubectl accepts: a kind (`Deployment`), a plural,
        singular or short name (`deployments`, `deploy`), each optionally followed by
        `.<group>` or `.<version>.<group>` (`Deployment.apps`, `deployments.v1.apps`), or a
        GVK. Without a group the core group wins; a name served by several other groups is
        ambiguous and raises NoKindMatch naming them. The group's preferred version wins."""
        snapshot = self._snapshot
        if snapshot is None:
            return None
        if isinstance(name, GVK):
            return snapshot.by_gvk.get(name)
        if name in snapshot.names:  # reconcilers name kinds on every write: look up once
            return snapshot.names[name]
        found = self._find(snapshot, name)
        snapshot.names[name] = found
        return found

    @staticmethod
    def _find(snapshot: _Snapshot, name: str) -> ResourceInfo | None:
        head, _, rest = name.partition(".")
        version, group = "", rest
        if rest and "." not in rest and rest.startswith("v") and rest[1:2].isdigit():
            version, group = rest, ""  # `Kind.v1`: the core group at that version
        elif rest:
            first, _, tail = rest.partition(".")
            if tail and first.startswith("v") and first[1:2].isdigit():
                version, group = first, tail
        lowered = head.lower()
        found = [
            info
            for info in snapshot.by_gvr.values()
            if (
                info.gvk.kind == head
                or lowered in (info.gvr.resource, info.singular)
                or lowered in info.short_names
            )
            and (not rest or info.gvr.group == group)
            and (not version or info.gvr.version == version)
        ]
        if not found:
            return None
        groups = sorted({info.gvr.group for info in found})
        if len(groups) > 1:
            if "" not in groups:
                raise NoKindMatch(f"{name!r} is ambiguous: served by groups {groups}")
            found = [info for info in found if info.gvr.group == ""]
        preferred = snapshot.preferred_versions.get(found[0].gvr.group)
        return next((i for i in found if i.gvr.version == preferred), found[0])

    async def resolve(self, name: str | GVK) -> ResourceInfo:
        """`find`, reading discovery first when it is stale or the name is unknown (a CRD
        created since); NoKindMatch when the server serves no such thing."""
        return await self._lookup(lambda _: self.find(name), f"no resource or kind {name}")

    def invalidate(self) -> None:
        """Discovery changed (a CRD was added, changed or removed): refresh on next lookup."""
        self._generation += 1

    async def refresh(self) -> None:
        """Re-read discovery now, joining a refresh already in flight.

        A flight that started before the latest `invalidate()` may predate the change, so we
        wait for it and then fly once more.
        """
        for _ in range(2):
            if self._inflight is None:
                self._inflight_generation = self._generation
                self._inflight = asyncio.create_task(
                    self._refresh(self._generation), name="discovery.refresh"
                )
                self._inflight.add_done_callback(self._clear_inflight)
            started_for = self._inflight_generation
            await asyncio.shield(self._inflight)
            if started_for == self._generation:
                return

    def _clear_inflight(self, task: asyncio.Task[None]) -> None:
        if self._inflight is task:
            self._inflight = None
        if not task.cancelled():
            task.exception()  # retrieved here so a failure nobody awaited is not logged as lost

    def _needs_refresh(self) -> bool:
        return self._snapshot is None or self._fresh_generation != self._generation

    async def _lookup(self, find: Callable[[_Snapshot], _T | None], missing: str) -> _T:
        if self._needs_refresh():
            await self.refresh()
        assert self._snapshot is not None
        found = find(self._snapshot)
        if found is not None:
            return found
        if self._clock.now() - self._refreshed_at >= self._min_refresh_interval_s:
            await self.refresh()
            found = find(self._snapshot)
            if found is not None:
                return found
        raise NoKindMatch(missing)

    async def _refresh(self, generation: int) -> None:
        started = time.perf_counter()
        snapshot = _Snapshot()
        core, groups = await asyncio.gather(
            self._client.request("GET", "/api", accept=AGGREGATED_ACCEPT),
            self._client.request("GET", "/apis", accept=AGGREGATED_ACCEPT),
        )
        aggregated = _is_aggregated(core) and _is_aggregated(groups)
        if aggregated:
            for doc in (core, groups):
                _parse_aggregated(doc, snapshot)
        else:
            await self._legacy(core, groups, snapshot)
        self._snapshot = snapshot
        self._refreshed_at = self._clock.now()
        self._fresh_generation = generation
        log.debug(
            "discovery.refreshed",
            aggregated=aggregated,
            resources=len(snapshot.by_gvr),
            duration_s=round(time.perf_counter() - started, 4),
        )

    async def _legacy(self, core: Any, groups: Any, snapshot: _Snapshot) -> None:
        group_versions: list[str] = []
        if isinstance(core, Mapping):
            versions = [str(v) for v in core.get("versions") or ()]
            group_versions += versions
            if versions:
                snapshot.preferred_versions[""] = versions[0]
        if isinstance(groups, Mapping):
            for group in groups.get("groups") or ():
                name = str(group.get("name", ""))
                preferred = (group.get("preferredVersion") or {}).get("version")
                versions = [str(v.get("version")) for v in group.get("versions") or ()]
                if preferred or versions:
                    snapshot.preferred_versions[name] = str(preferred or versions[0])
                group_versions += [str(v.get("groupVersion")) for v in group.get("versions") or ()]
        limit = asyncio.Semaphore(LEGACY_CONCURRENCY)

        async def fetch(gv: str) -> Any:
            group, _ = split_api_version(gv)
            path = f"/apis/{gv}" if group else f"/api/{gv}"
            async with limit:
                try:
                    return await self._client.request("GET", path)
                except (ApiError, TransportError) as e:
                    # An unavailable aggregated API (metrics-server down) must not hide the rest.
                    log.warning("discovery.group_version_failed", group_version=gv, error=str(e))
                    return None

        for doc in await asyncio.gather(*(fetch(gv) for gv in group_versions)):
            if isinstance(doc, Mapping):
                _parse_resource_list(doc, snapshot)


def _is_aggregated(doc: Any) -> bool:
    return isinstance(doc, Mapping) and doc.get("kind") == "APIGroupDiscoveryList"


def _parse_aggregated(doc: Mapping[str, Any], snapshot: _Snapshot) -> None:
    for group in doc.get("items") or ():
        name = str((group.get("metadata") or {}).get("name") or "")
        versions = group.get("versions") or ()
        if versions:
            snapshot.preferred_versions.setdefault(name, str(versions[0].get("version")))
        for version in versions:
            v = str(version.get("version"))
            for res in version.get("resources") or ():
                kind = (res.get("responseKind") or {}).get("kind")
                if not kind:
                    continue
                snapshot.add(
                    ResourceInfo(
                        gvr=GVR(name, v, str(res["resource"])),
                        gvk=GVK(name, v, str(kind)),
                        namespaced=res.get("scope") == "Namespaced",
                        verbs=frozenset(res.get("verbs") or ()),
                        subresources=frozenset(
                            str(s.get("subresource")) for s in res.get("subresources") or ()
                        ),
                        singular=str(res.get("singularResource") or ""),
                        short_names=tuple(res.get("shortNames") or ()),
                        categories=tuple(res.get("categories") or ()),
                    )
                )


def _parse_resource_list(doc: Mapping[str, Any], snapshot: _Snapshot) -> None:
    group, version = split_api_version(str(doc.get("groupVersion", "")))
    resources: list[Mapping[str, Any]] = list(doc.get("resources") or ())
    subresources: dict[str, set[str]] = {}
    for res in resources:
        parent, sep, sub = str(res.get("name", "")).partition("/")
        if sep:
            subresources.setdefault(parent, set()).add(sub)
    for res in _top_level(resources):
        name = str(res["name"])
        snapshot.add(
            ResourceInfo(
                gvr=GVR(group, version, name),
                gvk=GVK(group, version, str(res.get("kind", ""))),
                namespaced=bool(res.get("namespaced")),
                verbs=frozenset(res.get("verbs") or ()),
                subresources=frozenset(subresources.get(name, ())),
                singular=str(res.get("singularName") or ""),
                short_names=tuple(res.get("shortNames") or ()),
                categories=tuple(res.get("categories") or ()),
            )
        )


def _top_level(resources: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    return (r for r in resources if "/" not in str(r.get("name", "")) and r.get("kind"))
