"""kro.controllers.app: kro's controllers, built on a kro.runtime Manager.

Three controllers share one client and the manager's one informer cache: the RGD controller
(fed by RGDs, GraphRevisions and CRD metadata, P-01), the GraphRevision controller (N-01), both
built with kro.runtime's ControllerBuilder, and the dynamic controller that hosts every RGD's
instance reconciler (W-01), which acquires and releases the informers of generated kinds and
their children from the same cache. The CLI builds a `KroApp` on its manager from its flags;
tests and operators embedding kro can build one directly.

Beyond upstream's triggers, an RGD is also reconciled when it disappears and when a kro-owned
CRD naming it is listed (every one at start-up): that is how the instances of a deleted RGD are
found and served until they are gone (kro.controllers.instance.kinds), also after a restart.

Sharded (the manager's cache has a `ShardView`: `kro controller --shards=auto`), the three
controllers run on every replica (`leader_only(False)`) and the manager's leadership becomes
the `WriteGate` of the RGD and GraphRevision reconcilers: only the leader writes RGDs,
GraphRevisions and CRDs, the others follow (kro.controllers.leadership). A follower also queues a
GraphRevision again when the leader writes its status (the verdict it waits for), and a replica
that wins the Lease queues every RGD and GraphRevision (`Promotion`). Each replica exports how
many instances it owns (`kro_shard_owned_instances`: the objects in its sharded informers).
Without sharding nothing of this applies: the controllers are leader-only and always write.

The cache re-delivers every object each `ManagerOptions.resync_period_s`; the RGD and
GraphRevision controllers ignore those resyncs, as they always have (only the instance
controllers act on them, upstream's `--dynamic-controller-default-resync-period`).

Graphs (`kro.run/v1alpha1` `Graph`, alpha) exist only with the `GraphKind` gate
(`AppOptions.graph_kind`): everything about them is set up in `KroApp._add_graph_controller`,
so with the gate off nothing lists or watches `graphs.kro.run` and RGDs run exactly as before.
`kro controller` checks that the Graph CRD is served before it builds the app (kro.cli.controller).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kro.api.conditions import is_condition_true
from kro.api.graph import GRAPH_RECORDER, service_account_username
from kro.api.names import (
    ALLOW_BREAKING_CHANGES_VALUE,
    ANNOTATION_ALLOW_BREAKING_CHANGES,
    CLUSTER_SECRETS_KEY_DEFAULT,
    CLUSTER_SECRETS_LABEL_DEFAULT,
    CONDITION_READY,
    FEATURE_INSTANCE_CONDITION_METRICS,
    LABEL_RGD_NAME,
    LOCAL_CLUSTER_NAME_DEFAULT,
    RGD_STATE_ACTIVE,
)
from kro.applyset import Applier, ApplierOptions, tooling_for
from kro.controllers.crd import CRDS, is_kro_owned
from kro.controllers.events import RecorderPool
from kro.controllers.graph import GRAPHS, GraphOptions, GraphReconciler
from kro.controllers.graphrevision import GRAPH_REVISIONS, GraphRevisionReconciler
from kro.controllers.instance.kinds import InstanceControllers
from kro.controllers.instance.labels import KRO_VERSION
from kro.controllers.kind_waits import KindWaits
from kro.controllers.leadership import Promotion, WriteGate
from kro.controllers.members import (
    MEMBER_SYNC_TIMEOUT_S,
    ClusterWaits,
    MemberSchemas,
    RegistryMembers,
)
from kro.controllers.metrics import (
    CelMetrics,
    ConditionDurations,
    GraphEngineMetrics,
    GraphRevisionMetrics,
    GraphRouterMetrics,
    InstanceMetrics,
    RegistryMetrics,
    RGDMetrics,
    RuntimeMetrics,
    SchemaResolverMetrics,
)
from kro.controllers.programs import ProgramCache
from kro.controllers.registry import RevisionRegistry
from kro.controllers.rgd import RGDS, RGDOptions, RGDReconciler
from kro.controllers.schemas import LiveSchemaResolver
from kro.controllers.spokes import Spokes
from kro.dynamic import DynamicController, DynamicControllerOptions, ObjectRef, ScalarWatch
from kro.dynamic.watches import Versions
from kro.fleet import ClusterRegistry
from kro.fleet.spoke_metrics import SpokeMetrics
from kro.graph.hashing import graph_revision_name
from kro.graph.resolver import SchemaResolver
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.controller import Admission, Controller
from kro.runtime.manager import Manager
from kro.runtime.memory import ObjectMemory
from kro.runtime.metrics import MetricsProvider
from kro.runtime.predicates import (
    Predicate,
    generation_changed,
    on_update,
    resource_version_changed,
)
from kro.runtime.ratelimit import default_controller_rate_limiter
from kro.runtime.reconcile import Request
from kro.runtime.workqueue import WorkQueue

Obj = Mapping[str, Any]

_NOT_RESYNC = resource_version_changed()
"""Lets through every event but the cache's periodic resync (an object delivered unchanged)."""


@dataclass(frozen=True, kw_only=True)
class AppOptions:
    """What `kro controller`'s flags configure (§1.S); defaults are upstream's. The informer
    options (`--dynamic-controller-default-resync-period`, `--shards=auto`'s view) are the
    manager's (`ManagerOptions.resync_period_s`, `.shard`): every informer is in its cache.

    feature_gates: `--feature-gates` (§1.V); here InstanceConditionEvents turns on Events for
    instance condition changes. CELOmitFunction reaches the builder through `rgd.build`.
    state_gauges: keep `instances_by_state` and `rgds_by_state` (default on; `kro controller`
    turns them off only with KRO_STATE_GAUGES=0, to measure what they cost).
    """

    rgd: RGDOptions = field(default_factory=RGDOptions)
    dynamic: DynamicControllerOptions = field(default_factory=DynamicControllerOptions)
    rgd_workers: int = 1
    graph_revision_workers: int = 1
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    state_gauges: bool = True
    apply_concurrency: int = 20  # `--apply-concurrency` (kro.applyset.ApplierOptions.concurrency)
    skip_unchanged: bool = True  # `--skip-unchanged`: the one skip memory (kro.runtime.memory)
    # GraphKind (V-40): run the Graph controller. `controller_namespace` and
    # `controller_service_account` name kro's own ServiceAccount, which no Graph may impersonate
    # (V-55); `--controller-namespace`/`--controller-service-account` are required with the gate.
    graph_kind: bool = False
    controller_namespace: str = ""
    controller_service_account: str = ""
    graph_concurrent_reconciles: int = 1  # `--graph-concurrent-reconciles`
    # MultiCluster (M-01, M-02): where member clusters' Secrets are and how they are marked;
    # None with the gate off (no registry, no Secret informer, nothing changes).
    clusters: ClusterRegistryOptions | None = None
    enable_multicluster: bool = False  # `--enable-multicluster`: hub and spokes (M-20..M-22)


@dataclass(frozen=True, kw_only=True)
class ClusterRegistryOptions:
    """`--cluster-secrets-namespace/-label/-key` and `--local-cluster-name` (M-02)."""

    namespace: str
    label: str = CLUSTER_SECRETS_LABEL_DEFAULT
    key: str = CLUSTER_SECRETS_KEY_DEFAULT
    local_name: str = LOCAL_CLUSTER_NAME_DEFAULT


class _Handler:
    """An informer event handler made of three optional functions."""

    def __init__(
        self,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj], None] | None = None,
    ) -> None:
        self._add, self._update, self._delete = on_add, on_update, on_delete

    def on_add(self, obj: Obj) -> None:
        if self._add:
            self._add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self._update:
            self._update(old, new)

    def on_delete(self, obj: Obj) -> None:
        if self._delete:
            self._delete(obj)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _allows_breaking(obj: Obj) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ANNOTATION_ALLOW_BREAKING_CHANGES) == ALLOW_BREAKING_CHANGES_VALUE


def rgd_update_matters(old: Obj, new: Obj) -> bool:
    """P-01: a new generation, the start of deletion, or the allow-breaking flag flipped."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return (
        old_meta.get("generation") != new_meta.get("generation")
        or (bool(new_meta.get("deletionTimestamp")) and not old_meta.get("deletionTimestamp"))
        or _allows_breaking(old) != _allows_breaking(new)
    )


class KroApp:
    """Every kro controller, built on `manager` (registered with it as they are built)."""

    def __init__(
        self,
        manager: Manager,
        options: AppOptions,
        *,
        metrics: MetricsProvider | None = None,
        resolver: SchemaResolver | None = None,
    ) -> None:
        """`metrics`: where kro's own metrics go (default: the manager's provider, which
        also holds the controllers' workqueue_* and controller_runtime_* series).
        `resolver`: where graphs find the schemas of the kinds they use (default: the
        cluster's OpenAPI, cached; tests pass an offline one)."""
        metrics = metrics if metrics is not None else manager.metrics
        self.manager = manager
        self.cache = cache = manager.cache
        self.client = client = cache.client
        self.options = options
        sharded = cache.shard is not None
        # Open unless sharded replicas bind it to leadership (module docstring).
        self.writes = WriteGate()
        self.registry = RevisionRegistry(RegistryMetrics(metrics))
        # Always there: Warnings of kro-py's own (a field another controller keeps rewriting)
        # are recorded whatever the gates; the gate InstanceConditionEvents only decides the
        # per-condition Events (InstanceOptions.condition_events).
        self.recorders: RecorderPool | None = RecorderPool(client)
        self.schemas = LiveSchemaResolver(client, metrics=SchemaResolverMetrics(metrics))
        self.kind_waits = KindWaits(self._wake)
        """Owners whose deferred nodes wait for a kind (DeferredSchemaResolution)."""
        self.resolver: SchemaResolver = resolver or self.schemas
        self.dynamic = DynamicController(cache, options=options.dynamic, metrics=metrics)
        self.spoke_metrics = SpokeMetrics(metrics)
        """What the members' spokes record, beside the hub's series (kro.fleet.spoke_metrics)."""
        self._spoke_caches: dict[str, InformerCache] = {}
        """Each member's spoke's informers, for `kro_cluster_watch_count`."""
        self.members = self._cluster_registry(options.clusters, metrics)
        self.cluster_schemas = (
            MemberSchemas(self.members, self.resolver) if self.members is not None else None
        )
        self.cluster_waits = ClusterWaits(self._wake) if self.members is not None else None
        self.applier = self._applier(client)
        self.spokes = (
            Spokes(
                self.members,
                self._spoke,
                conservative=options.rgd.conservative_crd_comparison,
                share=cache.shard,
                gained=self.requeue_rgds,
                retired=self._spoke_retired,
            )
            if self.members is not None and options.enable_multicluster
            else None
        )
        if self.spokes is not None:
            manager.add_runnable(self.spokes)
        self.rgd_reconciler = RGDReconciler(
            client=client,
            registry=self.registry,
            resolver=self.resolver,
            dynamic=self.dynamic,
            applier=self.applier,
            options=options.rgd,
            metrics=RGDMetrics(metrics, state_gauges=options.state_gauges),
            instance_metrics=InstanceMetrics(metrics, state_gauges=options.state_gauges),
            runtime_metrics=RuntimeMetrics(metrics),
            cel_metrics=CelMetrics(metrics),
            condition_durations=ConditionDurations(metrics)
            if options.feature_gates.get(FEATURE_INSTANCE_CONDITION_METRICS)
            else None,
            recorders=self.recorders,
            enqueue_rgd=self.enqueue_rgd,
            writes=self.writes,
            kind_waits=self.kind_waits,
            members=self.members,
            clusters=self.cluster_schemas,
            spokes=self.spokes,
            cluster_waits=self.cluster_waits,
        )
        self.programs = ProgramCache()
        """The one cache of compiled programs: GraphRevisions' and Graphs'."""
        self.gr_reconciler = GraphRevisionReconciler(
            programs=self.programs,
            client=client,
            registry=self.registry,
            resolver=self.resolver,
            options=options.rgd.build,
            notify_rgd=self.enqueue_rgd,
            metrics=GraphRevisionMetrics(metrics),
            writes=self.writes,
            clusters=self.cluster_schemas,
        )
        # Cache-driven state first, then the controllers that read it.
        cache.informer(CRDS, metadata_only=True).add_handler(
            _Handler(
                on_add=self._forget_schemas,
                on_update=lambda old, new: (
                    self._forget_schemas(new) if _NOT_RESYNC.update(old, new) else None
                ),
                on_delete=self._forget_schemas,
            )
        )
        cache.informer(GRAPH_REVISIONS).add_handler(_Handler(on_delete=self._revision_gone))
        self.gr_controller: Controller[Request] = (
            manager.controller("graphrevision")
            .for_(GRAPH_REVISIONS, predicates=self._revision_news())
            .in_namespace(None)
            .workers(options.graph_revision_workers)
            .rate_limit(default_controller_rate_limiter())
            .leader_only(not sharded)
            .failure_events(False)  # reported in conditions, as upstream
            .build(self.gr_reconciler)
        )
        self.rgd_controller: Controller[Request] = (
            manager.controller("ResourceGraphDefinition")
            .for_(RGDS, predicates=on_update(rgd_update_matters))
            .watches(GRAPH_REVISIONS, _revision_rgd, predicates=_NOT_RESYNC)
            .watches(CRDS, _crd_rgd, predicates=_NOT_RESYNC, metadata_only=True)
            .in_namespace(None)
            .workers(options.rgd_workers)
            .rate_limit(default_controller_rate_limiter())
            .leader_only(not sharded)
            .failure_events(False)  # reported in conditions, as upstream
            .build(self.rgd_reconciler)
        )
        manager.add_controller(self.dynamic, leader_only=not sharded)
        if self.recorders is not None:
            manager.add_runnable(self.recorders)
        if cache.shard is not None:
            self.writes.bind(manager.may_reconcile)
            manager.add_controller(Promotion(self.requeue_all))
            cache.shard.count_owned(self.owned_instances)
        self.graph_metrics: GraphEngineMetrics | None = None
        if options.graph_kind:
            self._add_graph_controller(metrics)

    def _add_graph_controller(self, metrics: MetricsProvider) -> None:
        """GraphKind on: the one place Graphs are set up (with the gate off nothing here runs,
        so kro neither lists nor watches `graphs.kro.run`).

        The graphengine_* series are registered here, so they exist only with the gate.

        Graphs are reconciled by their own controller (`--graph-concurrent-reconciles`
        workers); the watches of what they read route to its queue and share the dynamic
        controller's informers.
        """
        self.graph_metrics = GraphEngineMetrics(metrics)
        options = self.options
        username = service_account_username(
            options.controller_namespace, options.controller_service_account
        )

        def enqueue(ref: ObjectRef) -> None:
            self.graph_controller.queue.add(Request(ref.namespace, ref.name))

        router_metrics = GraphRouterMetrics(self.graph_metrics)
        self.graph_reconciler = GraphReconciler(
            programs=self.programs,
            client=self.client,
            resolver=self.resolver,
            watches=self.dynamic.coordinator(enqueue, router_metrics),
            applier=self.applier,
            options=GraphOptions(
                controller_username=username,
                apply_concurrency=options.apply_concurrency,
                max_collection_size=options.rgd.build.max_collection_size,
                cel_cost_limit=options.rgd.build.cel_cost_limit,
                skip_unchanged=options.skip_unchanged,
                deferred_schema_resolution=options.rgd.build.deferred_schema_resolution,
            ),
            events=self.recorders.recorder(GRAPH_RECORDER) if self.recorders else None,
            kind_waits=self.kind_waits,
            graph_versions=self._graph_versions,
            members=self.members,
            member_watches=self.members.watches(
                lambda client: self.dynamic.coordinator(
                    enqueue, router_metrics, client=client, sync_timeout_s=MEMBER_SYNC_TIMEOUT_S
                )
            )
            if self.members is not None
            else None,
            cluster_schemas=self.cluster_schemas,
            cluster_waits=self.cluster_waits,
        )
        self.graph_controller: Controller[Request] = (
            self.manager.controller("Graph")
            .for_(GRAPHS, predicates=generation_changed())
            .in_namespace(None)
            .workers(options.graph_concurrent_reconciles)
            .rate_limit(default_controller_rate_limiter())
            .leader_only(self.cache.shard is None)
            .failure_events(False)  # reported in conditions, as upstream
            .build(self.graph_reconciler)
        )
        self.manager.add_runnable(self.graph_reconciler.clients)

    def _cluster_registry(
        self, options: ClusterRegistryOptions | None, metrics: MetricsProvider
    ) -> RegistryMembers | None:
        """M-02..M-06: the member clusters from their Secrets, run by the manager (every
        replica: a member's client serves reads as well as writes)."""
        if options is None:
            return None
        registry = ClusterRegistry(
            self.client,
            namespace=options.namespace,
            label=options.label,
            key=options.key,
            local_name=options.local_name,
            metrics=metrics,
            cache=self.cache,
        )
        members = RegistryMembers(registry)
        self.manager.add_runnable(members)
        registry.subscribe(self._cluster_changed)
        registry.count_watches(self._cluster_watches)
        return members

    def _cluster_watches(self, cluster: str) -> int:
        """M-06 `kro_cluster_watch_count`: the informers kro holds open against `cluster` now:
        the hub's cache for the local name; for a member, its spoke's and its owners' member
        watches (read at scrape time)."""
        if self.members is None or cluster == self.members.hub:
            return len(self.cache.informers())
        spoke = self._spoke_caches.get(cluster)
        held = len(spoke.informers()) if spoke is not None else 0
        return held + self.members.informers(cluster)

    def _cluster_changed(self, cluster: str, event: str) -> None:
        """M-12: an RGD whose literal target named a cluster that was not Ready is built again
        as soon as one is (every RGD not Active: the build says which were waiting); with hub
        and spokes, every RGD (M-20: its CRD goes to the member that joined). A member that
        left takes its spoke's series with it (`_spoke_retired`)."""
        if event != "ready":
            return
        if self.cluster_waits is not None:
            self.cluster_waits.ready(cluster)
        for rgd in self.cache.informer(RGDS).store.list():
            state = str((rgd.get("status") or {}).get("state") or "")
            if self.spokes is not None or state != RGD_STATE_ACTIVE:
                self.enqueue_rgd(_name(rgd))

    def _applier(self, client: Client) -> Applier:
        """An applier over `client` (the hub's, or a member's spoke's), with its skip memory."""
        return Applier(
            client,
            ApplierOptions(
                tooling=tooling_for(KRO_VERSION), concurrency=self.options.apply_concurrency
            ),
            memory=ObjectMemory(enabled=self.options.skip_unchanged),
        )

    def _spoke_retired(self, cluster: str) -> None:
        """A member's spoke stopped here (it left, rotated, or another replica owns it now):
        its series and its informers no longer count on this replica."""
        self._spoke_caches.pop(cluster, None)
        self.spoke_metrics.forget(cluster)

    def _spoke(
        self, cluster: str, client: Client, admission: Admission | None
    ) -> tuple[DynamicController, InstanceControllers]:
        """A member's instance controllers (M-21): its informers, queue and workers, an applier
        over its client, the hub's compiled revisions; with `admission`, only while this
        replica owns the member (M-23). Its metrics go to the hub's families (aggregated over
        the fleet), its queue's under `dynamic-controller-queue/<cluster>`
        (kro.fleet.spoke_metrics, docs/metrics.md)."""
        metrics = self.spoke_metrics.provider(cluster)
        cache = self._spoke_caches[cluster] = InformerCache(client)
        dynamic = DynamicController(
            cache, options=self.options.dynamic, metrics=metrics, admission=admission
        )
        kinds = InstanceControllers(
            client=client,
            registry=self.registry,
            applier=self._applier(client),
            dynamic=dynamic,
            options=self.options.rgd.instance,
            metrics=InstanceMetrics(metrics, state_gauges=self.options.state_gauges),
            runtime_metrics=RuntimeMetrics(metrics),
            cel_metrics=CelMetrics(metrics),
            kind_waits=self.kind_waits,
            members=self.members,
            own_cluster=cluster,
        )
        return dynamic, kinds

    @property
    def rgd_queue(self) -> WorkQueue[Request]:
        return self.rgd_controller.queue

    @property
    def gr_queue(self) -> WorkQueue[Request]:
        return self.gr_controller.queue

    def enqueue_rgd(self, name: str) -> None:
        if name:
            self.rgd_queue.add(Request("", name))

    def owned_instances(self) -> int:
        """Instances this replica owns now: the objects in its sharded parent informers (the
        sharded informers of child kinds hold children, kro.dynamic.watches), and those of the
        members whose spokes it runs (M-23)."""
        parents = self.dynamic.registered()
        owned = sum(
            len(i.store) for i in self.cache.informers() if i.shard is not None and i.gvr in parents
        )
        for cluster, kinds in (self.spokes.parents() if self.spokes is not None else {}).items():
            cache = self._spoke_caches.get(cluster)
            informers = cache.informers() if cache is not None else []
            owned += sum(len(i.store) for i in informers if i.gvr in kinds)
        return owned

    def requeue_all(self) -> None:
        """Queue every RGD and GraphRevision in the caches (this replica starts leading)."""
        for revision in self.cache.informer(GRAPH_REVISIONS).store.list():
            self.gr_queue.add(Request("", _name(revision)))
        self.requeue_rgds()

    def requeue_rgds(self) -> None:
        """Queue every RGD in the cache (this replica starts leading, or owns a new member)."""
        for rgd in self.cache.informer(RGDS).store.list():
            self.enqueue_rgd(_name(rgd))

    def _revision_news(self) -> Predicate:
        """Revisions are immutable: only the start of their deletion is news (N-01), and, to
        a replica that does not lead, the leader's verdict in their status. A deleted one
        is done with (`_revision_gone`)."""

        def update(old: Obj, new: Obj) -> bool:
            return _NOT_RESYNC.update(old, new) and bool(
                (new.get("metadata") or {}).get("deletionTimestamp")
                or (old.get("status") != new.get("status") and not self.writes.allowed())
            )

        return Predicate(update=update, delete=lambda _: False, name="revision_news")

    def _revision_gone(self, revision: Obj) -> None:
        """The leader's GraphRevision controller evicts a revision from the registry before it
        removes the finalizer; a replica that does not lead may see the revision gone before
        it reconciled its deletion, so it evicts it here."""
        if not self.writes.allowed():
            spec = revision.get("spec") or {}
            self.registry.evict(_snapshot_name(revision), int(spec.get("revision") or 0))

    def _forget_schemas(self, crd: Obj) -> None:
        """A CRD appeared, changed or vanished: kinds and schemas cached before are stale, and
        a Graph that is not Ready may have been waiting for exactly this kind (its compile
        needs the schema of every literal kind, a dynamic node waits for its kind: V-48).
        Programs typed against the kind are dropped and compiled again on their next
        reconcile; a Ready Graph is not woken for it (what it applied is unchanged).

        Deferred nodes (DeferredSchemaResolution) of the CRD's group: the owners waiting on
        them are enqueued at once (kro.controllers.kind_waits), and each GraphRevision that
        deferred such a kind is compiled again, typed if the kind is now served.

        The CRD informer holds metadata alone: the group and plural come from the CRD's name
        (`<plural>.<group>`), the kind from its spec only when a full object is handed in."""
        self.client.mapper.invalidate()
        self.schemas.invalidate()
        spec = crd.get("spec") or {}
        plural, _, named_group = _name(crd).partition(".")
        group = str(spec.get("group") or named_group)
        kind = str((spec.get("names") or {}).get("kind") or "")
        self.programs.kind_changed(group, kind, plural)
        for entry in self.registry.deferring(group):
            self.gr_queue.add(Request("", graph_revision_name(entry.rgd_name, entry.revision)))
        if self.graph_metrics is not None:
            self.graph_reconciler.clients.invalidate_discovery()
        self.kind_waits.crd_changed(group)
        if self.graph_metrics is not None:
            for graph in self.cache.informer(GRAPHS).store.list():
                if not is_condition_true(graph.get("status"), CONDITION_READY):
                    meta = graph.get("metadata") or {}
                    self.graph_controller.queue.add(
                        Request(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
                    )

    def _graph_versions(self, request: ScalarWatch) -> Versions | None:
        """A Graph's resourceVersion as the Graph controller's informer shows it: the cache
        whose events enqueue the Graph, so a settled pass is never confirmed by a cache that
        has yet to see the change that brought the Graph back (None: not listed yet)."""
        informer = self.cache.informer(GRAPHS)
        if not informer.has_synced():
            return None
        obj = informer.store.get_by(request.namespace or None, request.name)
        if obj is None:
            return {}
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        return {(request.namespace, request.name): version}

    def _wake(self, owner: ObjectRef) -> None:
        """Enqueue an owner a CRD event woke: a Graph on the Graph controller's queue, an RGD
        instance on the dynamic controller's."""
        if owner.gvr == GRAPHS:
            if self.graph_metrics is not None:
                self.graph_controller.queue.add(Request(owner.namespace, owner.name))
            return
        self.dynamic.enqueue(owner)


def _revision_rgd(revision: Obj) -> list[Request]:
    """A GraphRevision's RGD (its snapshot's name)."""
    name = _snapshot_name(revision)
    return [Request("", name)] if name else []


def _crd_rgd(crd: Obj) -> list[Request]:
    """CRD watch healing (P-12): a kro-owned CRD listed, changed or vanished; its RGD."""
    if not is_kro_owned(crd):
        return []
    name = str(((crd.get("metadata") or {}).get("labels") or {}).get(LABEL_RGD_NAME, ""))
    return [Request("", name)] if name else []


def _snapshot_name(revision: Obj) -> str:
    return str(((revision.get("spec") or {}).get("snapshot") or {}).get("name") or "")
