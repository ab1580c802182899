"""kro.controllers.members: the cluster registry (kro.fleet) as the engine's member clusters.

The engine asks for a member's client by name (kro.engine.places.MemberClusters); the registry
answers with the member's own client or says why it cannot (not registered, refused, failing
its probe). Here its answer becomes the node's error the engine reports (`ClusterNotFound`,
M-12), and the registry runs for as long as the manager does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import structlog

from kro.controllers.schemas import LiveSchemaResolver
from kro.dynamic import InformerSyncTimeout, ObjectRef, ScalarWatch, WatchCoordinator
from kro.dynamic.watches import WatchRequest
from kro.engine.places import ClusterUnavailable
from kro.engine.watches import NoWatches, Watches
from kro.fleet import ClusterError, ClusterRegistry
from kro.graph.errors import GraphError
from kro.graph.resolver import SchemaResolver
from kro.runtime.client import Client

log = structlog.get_logger(__name__)

__all__ = ["ClusterWaits", "MemberSchemas", "MemberWatches", "RegistryMembers"]


class RegistryMembers:
    """`MemberClusters` over a cluster registry, and the manager runnable that runs it."""

    def __init__(self, registry: ClusterRegistry) -> None:
        self.registry = registry
        self._stopped = asyncio.Event()
        self._watches: list[MemberWatches] = []

    @property
    def hub(self) -> str:
        return self.registry.local_name

    @property
    def namespace(self) -> str:
        """Where the member clusters' Secrets live (`--cluster-secrets-namespace`)."""
        return self.registry.namespace

    def client(self, cluster: str) -> Client:
        try:
            return self.registry.client_for(cluster)
        except ClusterError as error:  # its message names no secret (M-06)
            raise ClusterUnavailable(cluster, error.condition_reason, str(error)) from None

    def watches(self, start: Callable[[Client], WatchCoordinator]) -> MemberWatches:
        """Watches of one owner kind in every member (`start` builds one over a member's
        client, routed to that kind's queue), renewed with the member's client."""
        watches = MemberWatches(self, start)
        if not self._watches:
            self.registry.subscribe(self._changed)
        self._watches.append(watches)
        return watches

    def informers(self, cluster: str) -> int:
        """The informers the owners' member watches hold open against `cluster` now (part of
        `kro_cluster_watch_count`, M-06)."""
        return sum(watches.informers(cluster) for watches in self._watches)

    def _changed(self, cluster: str, event: str) -> None:
        """A member's client was replaced or the member left: its watches go with the client."""
        if event in ("updated", "removed"):
            for watches in self._watches:
                watches.retire(cluster)

    async def run(self) -> None:
        await self.registry.start()
        try:
            await self._stopped.wait()
        finally:
            for watches in self._watches:
                await watches.close()
            await self.registry.stop()

    def shutdown(self) -> None:
        self._stopped.set()


MEMBER_SYNC_TIMEOUT_S: Final = 2.0
"""How long a pass waits for a member informer's first list before it goes on unwatched."""
MEMBER_UNWATCHED_S: Final = 30.0
"""After a member's informer could not list in time, how long its watches are skipped at once
(the registry's probe interval: by then it says whether the member is back)."""


class MemberWatches:
    """Per member cluster, the watches of one owner kind's passes there (M-14: drift in a
    member brings its owner back, as in the hub). A member's watches hold informers over its
    client; when the registry replaces that client (a rotation, M-04) or drops the member, its
    watches are closed, and the next pass of each owner declares them again over the new one.

    A member that cannot be listed never holds a pass for long (M-05): its watch waits
    `MEMBER_SYNC_TIMEOUT_S` at most and the pass goes on unwatched (its reads say what is
    wrong), and for `MEMBER_UNWATCHED_S` after that its watches are skipped at once.
    """

    def __init__(
        self,
        members: RegistryMembers,
        start: Callable[[Client], WatchCoordinator],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._members = members
        self._start = start
        self._clock = clock
        self._by_cluster: dict[str, tuple[Client, WatchCoordinator]] = {}
        self._unwatched: dict[str, float] = {}  # cluster -> until when its watches are skipped

    def for_cluster(self, cluster: str) -> Watches:
        """The member's watches (its client as the registry has it now); NoWatches when the
        member cannot be reached (the pass reports that itself)."""
        if self._unwatched.get(cluster, 0.0) > self._clock():
            return NoWatches()
        try:
            client = self._members.client(cluster)
        except ClusterUnavailable:
            return NoWatches()
        known = self._by_cluster.get(cluster)
        if known is not None and known[0] is client:
            return _BestEffort(known[1], cluster, self)
        if known is not None:  # a new client: the old one's informers are closed with it
            self.retire(cluster)
        coordinator = self._start(client)
        self._by_cluster[cluster] = (client, coordinator)
        return _BestEffort(coordinator, cluster, self)

    def informers(self, cluster: str) -> int:
        """The informers these watches hold in `cluster` (one per watched resource)."""
        found = self._by_cluster.get(cluster)
        return 0 if found is None else len(found[1].watched_gvrs())

    def unlisted(self, cluster: str) -> None:
        """A watch in `cluster` could not list in time: skip its watches for a while."""
        self._unwatched[cluster] = self._clock() + MEMBER_UNWATCHED_S
        log.warning("cluster.watch_skipped", cluster=cluster, for_s=MEMBER_UNWATCHED_S)

    async def done(self, parent: ObjectRef, *, commit: bool) -> None:
        """End `parent`'s cycle in every member (a member it no longer reads drops its watches)."""
        for _, coordinator in list(self._by_cluster.values()):
            await coordinator.done(parent, commit=commit)

    async def forget(self, parent: ObjectRef) -> None:
        for _, coordinator in list(self._by_cluster.values()):
            await coordinator.forget(parent)

    def retire(self, cluster: str) -> None:
        """Close the member's watches (its owners declare them again on their next pass)."""
        self._unwatched.pop(cluster, None)
        found = self._by_cluster.pop(cluster, None)
        if found is None:
            return
        coordinator = found[1]
        task = asyncio.ensure_future(coordinator.close())
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    async def close(self) -> None:
        for cluster in list(self._by_cluster):
            _, coordinator = self._by_cluster.pop(cluster)
            await coordinator.close()


class _BestEffort:
    """A member's watches for one pass: a watch whose informer cannot list in time is
    skipped (the member's `unlisted`), never the pass's failure."""

    def __init__(self, coordinator: WatchCoordinator, cluster: str, owner: MemberWatches) -> None:
        self._coordinator = coordinator
        self._cluster = cluster
        self._owner = owner

    async def watch(self, parent: ObjectRef, request: WatchRequest) -> None:
        try:
            await self._coordinator.watch(parent, request)
        except InformerSyncTimeout:
            self._owner.unlisted(self._cluster)

    def cached_object(self, request: ScalarWatch) -> tuple[bool, Mapping[str, Any] | None]:
        return self._coordinator.cached_object(request)

    def declared(self, parent: ObjectRef, request: WatchRequest) -> bool:
        return self._coordinator.declared(parent, request)

    @property
    def shard_version(self) -> int:
        return self._coordinator.shard_version


_closing: set[asyncio.Future[None]] = set()
"""Closes of retired member watches in flight (held so they are not collected mid-way)."""


class MemberSchemas:
    """Member clusters' schemas for the compiler (kro.graph.resolver.ClusterSchemas, M-12):
    a resource whose literal target is a member is typed against that member's kinds, one
    cached resolver per member client (a rotated client gets a fresh one)."""

    def __init__(self, members: RegistryMembers, hub: SchemaResolver) -> None:
        self._members = members
        self._hub = hub
        self._by_cluster: dict[str, tuple[Client, SchemaResolver]] = {}

    def resolver(self, cluster: str) -> SchemaResolver:
        if cluster == self._members.hub:
            return self._hub
        try:
            client = self._members.client(cluster)
        except ClusterUnavailable as error:
            raise GraphError(
                f'target cluster "{cluster}" is not a registered, Ready cluster: {error}'
            ) from None
        known = self._by_cluster.get(cluster)
        if known is not None and known[0] is client:
            return known[1]
        resolver = LiveSchemaResolver(client)
        self._by_cluster[cluster] = (client, resolver)
        return resolver


class ClusterWaits:
    """The owners whose last pass found a target's cluster unusable (not registered, not
    Ready), woken the moment the registry says it is Ready (M-12, M-22): their backoff may
    have grown to minutes while it was away, and nothing else they read changes."""

    def __init__(self, wake: Callable[[ObjectRef], None]) -> None:
        self._wake = wake
        self._owners: dict[ObjectRef, frozenset[str]] = {}

    def waiting(self, owner: ObjectRef, clusters: Iterable[str]) -> None:
        """After a pass: the clusters `owner` waits for (none: it waits no more)."""
        now = frozenset(clusters)
        if now:
            self._owners[owner] = now
        else:
            self._owners.pop(owner, None)

    def forget(self, owner: ObjectRef) -> None:
        self._owners.pop(owner, None)

    def ready(self, cluster: str) -> None:
        """`cluster` is usable now: every owner waiting for it goes back on its queue."""
        for owner, clusters in list(self._owners.items()):
            if cluster in clusters:
                self._wake(owner)
