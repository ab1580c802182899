"""kro.dynamic.watches: which parents care about which other objects, and routing their events.

A parent's handler (kro's instance reconciler) reads other objects (children, external
references) and must be re-run when any of them changes. During each reconcile it declares what
it read, and when it finishes it commits or rolls back that set (W-08):

    await watches.watch(parent, ScalarWatch("db", SECRETS, "team-a", "db-creds"))
    await watches.watch(parent, SelectorWatch("pods", PODS, None, LabelSelector.parse("app=web")))
    await watches.done(parent, commit=True)   # exactly this cycle's requests stay
    await watches.done(parent, commit=False)  # failed cycle: the previous set stays

A request takes effect as soon as `watch` returns (the informer is listed by then), so a change
made while the reconcile is still running is not missed. `forget(parent)` drops everything when
the parent is gone; the controller does the same for every parent of a deregistered kind.

Routing (W-09): each watched GVR has one metadata-only informer (kro.dynamic._informers, shared
with the parent informers), and every add/update/delete of it, tombstones included, is matched:

* scalar requests by (GVR, namespace, name);
* selector requests by GVR, filtered by namespace (None or "" = every namespace, which is how kro
  watches forEach collections cross-namespace, N-34) and by the selector against the object's
  new OR old labels, so an object leaving a selector still wakes its parent.

Matching parents are enqueued. Child events are never generation-filtered: a status change of a
child is exactly what a parent waiting on readiness needs to see.

Sharded replicas (kro.runtime.sharding): a request for objects in the parent's own namespace is
served by the GVR's sharded informer, which holds only the namespaces this replica owns. The
parent and those objects hash alike, so the replica that reconciles the parent is the one that
receives their events, before and after any change of ranges. Every other request (another
namespace, a cluster-scoped kind, a selector over all namespaces) is served by the GVR's
whole-kind informer, as without sharding. The rule depends on the request alone, never on the
current ranges, so a handover moves no request between informers; the sharded informer relists.

Invariant: every (parent, request) in the routing index holds one reference on the informer of
its slot (`slot`: the GVR, sharded or not), released when the last such reference goes.

Health (`health`): whether the informers behind a parent's requests deliver its changes. A kind
the API server will not let kro list or watch (403) does not fail the request: `watch` returns
at the refusal, the request is kept and its informer retries; `health` names the kind and the
refusal until a list succeeds. Every change of an informer's state (its first list after a
refusal, a refusal starting or ending) enqueues the parents it serves, so that whatever they
report about it follows without an edit. Kinds that are merely slow to list are still waited
for (InformerSyncTimeout after the deadline).

Nothing is kept for a GVR nobody uses: parent kinds come and go with their RGDs, and so do the
kinds they watch. The per-GVR lock goes when nobody holds or awaits it; the routing series of
a GVR go with the last reference on it, its informer's sync series once the pool holds it no
more; the watch-count gauges of a GVR are removed, not set to 0, when they fall to zero.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from kro.dynamic._informers import InformerPool
from kro.dynamic._metrics import DynamicMetrics, gvr_string
from kro.dynamic.errors import resource_name
from kro.dynamic.selector import LabelSelector
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.runtime.objectref import ObjectRef
from kro.runtime.store import Obj

log = structlog.get_logger(__name__)

Enqueue = Callable[[ObjectRef], None]


@dataclass(frozen=True, slots=True)
class ScalarWatch:
    """Watch one object by name; `namespace` is "" for cluster-scoped kinds."""

    node_id: str
    gvr: GVR
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class SelectorWatch:
    """Watch every object of `gvr` matching `selector`; `namespace` None = all namespaces."""

    node_id: str
    gvr: GVR
    namespace: str | None
    selector: LabelSelector


WatchRequest = ScalarWatch | SelectorWatch


def _kind_of(request: WatchRequest) -> str:
    """The `type` label of dynamic_controller_watch_request_count."""
    return "scalar" if isinstance(request, ScalarWatch) else "collection"


Versions = Mapping[tuple[str, str], str]
"""(namespace, name) -> resourceVersion of the objects one watch request covers."""


def _version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


@dataclass(slots=True)
class _ParentState:
    """A parent's requests: `committed` by its last successful cycle, `cycle` in progress."""

    committed: set[WatchRequest] = field(default_factory=set)
    cycle: set[WatchRequest] | None = None  # None: no reconcile is declaring watches

    def all(self) -> set[WatchRequest]:
        return self.committed | (self.cycle or set())


@dataclass(frozen=True, slots=True)
class WatchHealth:
    """How the informers behind some watch requests stand, by resource name (`configmaps`,
    `deployments.apps`), each kind once, sorted.

    blocked: kinds whose list or watch the API server refuses, with its answer (403).
    pending: kinds whose informer has not finished its first list.
    Neither: every change of every watched object is delivered (`synced`).
    """

    blocked: tuple[tuple[str, str], ...] = ()
    pending: tuple[str, ...] = ()

    @property
    def synced(self) -> bool:
        return not self.blocked and not self.pending


Slot = tuple[GVR, bool]
"""An informer the coordinator holds: the GVR, and whether it is the sharded one."""


@dataclass(slots=True)
class _Held:
    """The coordinator's use of one informer: a router handler and a reference per request."""

    informer: Informer
    router: _Router
    listener: Callable[[Informer], None]
    refs: int = 0


class _Router:
    """The informer event handler for one watched GVR; delivers events to the coordinator."""

    def __init__(self, coordinator: WatchCoordinator, gvr: GVR) -> None:
        self._coordinator = coordinator
        self._gvr = gvr

    def on_add(self, obj: Obj) -> None:
        self._coordinator.route(self._gvr, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._coordinator.route(self._gvr, new, old)

    def on_delete(self, obj: Obj) -> None:
        self._coordinator.route(self._gvr, obj)


class _Series(Protocol):
    def set(self, value: float, **labels: str) -> None: ...

    def inc(self, amount: float = 1, **labels: str) -> None: ...

    def remove(self, **labels: str) -> None: ...


class RouterMetrics(Protocol):
    """What a coordinator records: its parents per parent kind, its watch requests per watched
    GVR and type, and the events it routed and matched. `DynamicMetrics` records them as the
    dynamic_controller_* families; another owner may record them under its own names."""

    @property
    def instance_watch_count(self) -> _Series: ...

    @property
    def watch_request_count(self) -> _Series: ...

    @property
    def route_total(self) -> _Series: ...

    @property
    def route_match_total(self) -> _Series: ...

    def forget_routes(self, gvr: GVR) -> None: ...

    def forget_informer(self, gvr: GVR) -> None: ...


class WatchCoordinator:
    """Per-parent watch requests, their routing index, and the informers they keep alive.

    Built by DynamicController (`controller.watches`); `enqueue` puts a parent on its queue.
    """

    def __init__(
        self, pool: InformerPool, enqueue: Enqueue, metrics: DynamicMetrics | RouterMetrics
    ) -> None:
        self._pool = pool
        self._enqueue = enqueue
        self._metrics = metrics
        self._parents: dict[ObjectRef, _ParentState] = {}
        self._scalar: dict[tuple[GVR, str, str], ObjectRef | Counter[ObjectRef]] = {}
        self._selectors: dict[GVR, set[tuple[ObjectRef, SelectorWatch]]] = {}
        self._held: dict[Slot, _Held] = {}
        self._releasing: list[Informer] = []  # last reference gone; release awaited after
        self._locks: defaultdict[GVR, asyncio.Lock] = defaultdict(asyncio.Lock)  # both slots
        self._request_counts: Counter[tuple[GVR, str]] = Counter()
        self._parent_counts: Counter[GVR] = Counter()

    # -- the reconcile-cycle API ----------------------------------------------------------------

    async def watch(self, parent: ObjectRef, request: WatchRequest) -> None:
        """Route events matching `request` to `parent` from now on (until the cycle ends).

        Raises InformerSyncTimeout when the kind cannot be listed in time; the request is then
        not recorded, and a `done(parent, commit=False)` keeps the previous set. A list the
        API server refuses is no error: the request is recorded at once and `health` reports it.
        """
        state = self._state(parent)
        if state.cycle is None:
            state.cycle = set()
        if request in state.cycle:
            return
        if request in state.committed:  # already indexed and holding its informer
            state.cycle.add(request)
            return
        slot = self.slot(parent, request)
        await self._hold(slot)
        if self._parents.get(parent) is not state or state.cycle is None:
            # forgotten (deregistered, removed) or finished while we waited for the informer
            await self._drop_refs([slot])
            return
        if request in state.cycle:
            await self._drop_refs([slot])
            return
        state.cycle.add(request)
        self._index(parent, request)

    async def done(self, parent: ObjectRef, *, commit: bool) -> None:
        """End the cycle: commit keeps exactly its requests; rollback keeps the previous set.

        Committing a cycle that declared nothing drops every request: the parent read nothing.
        """
        state = self._parents.get(parent)
        if state is None:
            return
        cycle, state.cycle = state.cycle or set(), None
        if commit:
            dropped = state.committed - cycle
            state.committed = cycle
        else:
            dropped = cycle - state.committed
        await self._drop(parent, state, dropped)

    async def forget(self, parent: ObjectRef) -> None:
        """Drop every request of `parent` (it was deleted, or its kind deregistered)."""
        state = self._parents.get(parent)
        if state is None:
            return
        dropped = state.all()
        state.committed, state.cycle = set(), None
        await self._drop(parent, state, dropped)

    async def forget_kind(self, parent_gvr: GVR) -> None:
        """Forget every parent of resource `parent_gvr` (its handler is being deregistered)."""
        for parent in [p for p in self._parents if p.gvr == parent_gvr]:
            await self.forget(parent)

    async def close(self) -> None:
        """Forget everything and release every informer this coordinator holds."""
        for parent in list(self._parents):
            await self.forget(parent)

    # -- introspection --------------------------------------------------------------------------

    def requests(self, parent: ObjectRef) -> frozenset[WatchRequest]:
        """Everything currently routed to `parent` (committed plus the cycle in progress)."""
        state = self._parents.get(parent)
        return frozenset(state.all()) if state is not None else frozenset()

    def parents(self) -> frozenset[ObjectRef]:
        """Parents with any watch state."""
        return frozenset(self._parents)

    def watched_gvrs(self) -> frozenset[GVR]:
        """GVRs whose informer this coordinator holds."""
        return frozenset(gvr for gvr, _sharded in self._held)

    def health(
        self, parent: ObjectRef, requests: Iterable[WatchRequest] | None = None
    ) -> WatchHealth:
        """Whether changes to what `requests` of `parent` name are delivered (default: every
        request routed to `parent`). A request no informer is held for counts as pending.

        Why here: the coordinator holds the informers, and whoever reports on a parent (an
        instance's condition, a Graph's) asks the same question about its own requests.
        """
        wanted = self.requests(parent) if requests is None else requests
        blocked: dict[str, str] = {}
        pending: set[str] = set()
        for request in wanted:
            name = resource_name(request.gvr)
            held = self._held.get(self.slot(parent, request))
            refused = held.informer.refused if held is not None else None
            if refused is not None:
                blocked.setdefault(name, str(refused))
            elif held is None or not held.informer.has_synced():
                pending.add(name)
        return WatchHealth(
            blocked=tuple(sorted(blocked.items())), pending=tuple(sorted(pending - set(blocked)))
        )

    def declared(self, parent: ObjectRef, request: WatchRequest) -> bool:
        """Whether `parent`'s last committed cycle declared `request` (its last successful
        reconcile read, and may have written, what `request` names)."""
        state = self._parents.get(parent)
        return state is not None and request in state.committed

    @property
    def shard_version(self) -> int:
        """The version of this replica's shard ranges (0 when not sharded); it moves whenever
        the ranges change, i.e. whenever instances may have been reconciled elsewhere."""
        return self._pool.shard_version

    def slot(self, parent: ObjectRef, request: WatchRequest) -> Slot:
        """Which informer serves `request` of `parent`: the sharded one for objects in the
        parent's own namespace on a sharded replica, the whole kind otherwise (module doc)."""
        sharded = (
            self._pool.sharded and bool(request.namespace) and request.namespace == parent.namespace
        )
        return (request.gvr, sharded)

    # -- reads from the caches ------------------------------------------------------------------

    def cached_object(self, request: ScalarWatch) -> tuple[bool, Obj | None]:
        """The informer cache's copy of the object `request` names: (False, None) when no
        informer held for the kind has listed its namespace (ask the API server), (True, None)
        when the cache knows of no such object, else (True, the cached object). The object is
        the cache's own (metadata only, shared): read it, never change it."""
        informer = self._pool.covering(request.gvr, request.namespace or "")
        if informer is None:
            return False, None
        return True, informer.store.get_by(request.namespace or None, request.name)

    def cached_versions(self, request: WatchRequest) -> Versions | None:
        """What the informer caches hold for `request`: (namespace, name) -> resourceVersion.

        None when no informer held for the kind has listed everything the request covers (not
        synced; or sharded, and the namespace is not this replica's or awaits the relist after a
        change of ranges): the caller must ask the API server.
        An empty mapping is an answer too: the cache knows of no such object. Why: a reconcile
        whose every read is unchanged (same resourceVersions) would do exactly what it did last
        time, so it can be skipped without a single request (kro.controllers.settled).
        """
        # A scalar's "" is a cluster-scoped object; a selector's None or "" every namespace.
        namespace = request.namespace or ("" if isinstance(request, ScalarWatch) else None)
        informer = self._pool.covering(request.gvr, namespace)
        if informer is None:
            return None
        if isinstance(request, ScalarWatch):
            obj = informer.store.get_by(request.namespace or None, request.name)
            return {} if obj is None else {(request.namespace, request.name): _version(obj)}
        found: dict[tuple[str, str], str] = {}
        for obj in informer.store.list():
            meta = obj.get("metadata") or {}
            namespace = str(meta.get("namespace") or "")
            if request.namespace and request.namespace != namespace:
                continue
            if request.selector.matches(_labels(obj)):
                found[(namespace, str(meta.get("name") or ""))] = _version(obj)
        return found

    # -- routing --------------------------------------------------------------------------------

    def route(self, gvr: GVR, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        """Enqueue every parent with a request matching this event of `gvr` (W-09)."""
        label = gvr_string(gvr)
        self._metrics.route_total.inc(gvr=label)
        matched = self.match(gvr, obj, old)
        if not matched:
            return
        self._metrics.route_match_total.inc(gvr=label)
        for parent in matched:
            self._enqueue(parent)

    def _state_changed(self, slot: Slot) -> None:
        """An informer we hold listed for the first time, or a refusal of it started or
        ended: every parent it serves may have something new to say about its health."""
        for parent, state in list(self._parents.items()):
            if any(self.slot(parent, request) == slot for request in state.all()):
                self._enqueue(parent)

    def match(
        self, gvr: GVR, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
    ) -> set[ObjectRef]:
        """The parents whose requests match `obj` (or, for selectors, the `old` labels)."""
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        held = self._scalar.get((gvr, namespace, str(meta.get("name") or "")))
        matched = set() if held is None else set(held) if isinstance(held, Counter) else {held}
        selectors = self._selectors.get(gvr)
        if not selectors:
            return matched
        labels = _labels(obj)
        old_labels = _labels(old) if old is not None else None
        for parent, request in selectors:
            if parent in matched or (request.namespace and request.namespace != namespace):
                continue
            if request.selector.matches(labels) or (
                old_labels is not None and request.selector.matches(old_labels)
            ):
                matched.add(parent)
        return matched

    # -- internals: state, index, informer references -------------------------------------------

    def _state(self, parent: ObjectRef) -> _ParentState:
        state = self._parents.get(parent)
        if state is None:
            state = self._parents[parent] = _ParentState()
            self._count_parent(parent.gvr, +1)
        return state

    async def _drop(
        self, parent: ObjectRef, state: _ParentState, dropped: set[WatchRequest]
    ) -> None:
        for request in dropped:
            self._unindex(parent, request)
        if not state.committed and state.cycle is None and self._parents.get(parent) is state:
            del self._parents[parent]
            self._count_parent(parent.gvr, -1)
        await self._drop_refs([self.slot(parent, r) for r in dropped])

    def _index(self, parent: ObjectRef, request: WatchRequest) -> None:
        if isinstance(request, ScalarWatch):
            # One parent holding one request for an object is the rule (a child and its
            # instance): it is kept as itself; a Counter only once a second reference comes.
            # A Counter per child was 1.4 MiB at 1,000 instances of five children.
            key = (request.gvr, request.namespace, request.name)
            held = self._scalar.get(key)
            if held is None:
                self._scalar[key] = parent
            elif isinstance(held, Counter):
                held[parent] += 1
            else:
                self._scalar[key] = Counter((held, parent))
        else:
            self._selectors.setdefault(request.gvr, set()).add((parent, request))
        self._count_request(request, +1)

    def _unindex(self, parent: ObjectRef, request: WatchRequest) -> None:
        if isinstance(request, ScalarWatch):
            key = (request.gvr, request.namespace, request.name)
            held = self._scalar.get(key)
            if isinstance(held, Counter):
                held[parent] -= 1
                if held[parent] <= 0:
                    del held[parent]
                if not held:
                    del self._scalar[key]
            elif held == parent:
                del self._scalar[key]
        else:
            entries = self._selectors.get(request.gvr)
            if entries is not None:
                entries.discard((parent, request))
                if not entries:
                    del self._selectors[request.gvr]
        self._count_request(request, -1)

    async def _hold(self, slot: Slot) -> None:
        """Take one reference on the informer of `slot`, acquiring and listing it if needed."""
        gvr, sharded = slot
        lock = self._locks[gvr]
        try:
            async with lock:
                held = self._held.get(slot)
                if held is None:
                    informer = await self._pool.acquire(gvr, sharded=sharded, keep_refused=True)
                    router = _Router(self, gvr)
                    # Replays the cache as adds; the requests it serves are not indexed yet,
                    # so they only count as routed events (or wake a parent whose other
                    # request of the GVR matches: a harmless extra reconcile).
                    informer.add_handler(router)

                    def listener(_: Informer, slot: Slot = slot) -> None:
                        self._state_changed(slot)

                    informer.add_state_listener(listener)
                    held = self._held[slot] = _Held(informer, router, listener)
                held.refs += 1
        finally:
            # Drop the lock once nobody holds or awaits it, or the map would keep one per GVR
            # ever watched (a caller queued on it must not meet a second lock for the GVR).
            if not lock.locked() and not lock._waiters and self._locks.get(gvr) is lock:
                del self._locks[gvr]

    async def _drop_refs(self, slots: list[Slot]) -> None:
        self._release_later(slots)
        await self._drain_releases()

    def _release_later(self, slots: list[Slot]) -> None:
        """Drop references synchronously (no await between index and count changes)."""
        for slot in slots:
            held = self._held[slot]
            held.refs -= 1
            if held.refs == 0:
                del self._held[slot]
                held.informer.remove_handler(held.router)
                held.informer.remove_state_listener(held.listener)
                gvr, sharded = slot
                if (gvr, not sharded) not in self._held:
                    self._metrics.forget_routes(gvr)  # no router of ours counts for it any more
                self._releasing.append(held.informer)

    async def _drain_releases(self) -> None:
        while self._releasing:
            informer = self._releasing.pop()
            await self._pool.release(informer)
            if informer.gvr not in self._pool.gvrs():  # not a registered parent kind either
                self._metrics.forget_informer(informer.gvr)

    def _count_request(self, request: WatchRequest, delta: int) -> None:
        key = (request.gvr, _kind_of(request))
        self._request_counts[key] += delta
        count = self._request_counts[key]
        labels = {"gvr": gvr_string(request.gvr), "type": key[1]}
        if count > 0:
            self._metrics.watch_request_count.set(count, **labels)
        else:
            del self._request_counts[key]
            self._metrics.watch_request_count.remove(**labels)

    def _count_parent(self, parent_gvr: GVR, delta: int) -> None:
        self._parent_counts[parent_gvr] += delta
        count = self._parent_counts[parent_gvr]
        label = gvr_string(parent_gvr)
        if count > 0:
            self._metrics.instance_watch_count.set(count, parent_gvr=label)
        else:
            del self._parent_counts[parent_gvr]
            self._metrics.instance_watch_count.remove(parent_gvr=label)
