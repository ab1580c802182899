"""kro.controllers.app: wire kro's controllers onto a kro.runtime Manager.

Three controllers share one client: the RGD controller (informers on RGDs, GraphRevisions and
CRD metadata feed its queue, P-01), the GraphRevision controller (N-01), and the dynamic
controller that hosts every RGD's instance reconciler (W-01). The CLI builds a `KroApp` from
its flags; tests and operators embedding kro can build one directly.

Beyond upstream's triggers, an RGD is also reconciled when it disappears and when a kro-owned
CRD naming it is listed (every one at start-up): that is how the instances of a deleted RGD are
found and served until they are gone (kro.controllers.instance.kinds), also after a restart.

Sharded (`AppOptions.shard`, `kro controller --shards=auto`), the three controllers run on every
replica (`Manager.add_controller(..., leader_only=False)`) and the manager's leadership becomes
the `WriteGate` of the RGD and GraphRevision reconcilers: only the leader writes RGDs,
GraphRevisions and CRDs, the others follow (kro.controllers.leadership). A follower also queues a
GraphRevision again when the leader writes its status (the verdict it waits for), and a replica
that wins the Lease queues every RGD and GraphRevision (`Promotion`). Each replica exports how
many instances it owns (`kro_shard_owned_instances`: the objects in its sharded informers).
Without sharding nothing of this applies: the controllers are leader-only and always write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kro.api.names import (
    ALLOW_BREAKING_CHANGES_VALUE,
    ANNOTATION_ALLOW_BREAKING_CHANGES,
    FEATURE_INSTANCE_CONDITION_METRICS,
    LABEL_RGD_NAME,
)
from kro.applyset import Applier, ApplierOptions, tooling_for
from kro.controllers.crd import CRDS, is_kro_owned
from kro.controllers.events import RecorderPool
from kro.controllers.graphrevision import GRAPH_REVISIONS, GraphRevisionReconciler
from kro.controllers.instance.labels import KRO_VERSION
from kro.controllers.leadership import Promotion, WriteGate
from kro.controllers.metrics import (
    CelMetrics,
    ConditionDurations,
    GraphRevisionMetrics,
    InstanceMetrics,
    RegistryMetrics,
    RGDMetrics,
    RuntimeMetrics,
    SchemaResolverMetrics,
)
from kro.controllers.registry import RevisionRegistry
from kro.controllers.rgd import RGDS, RGDOptions, RGDReconciler
from kro.controllers.schemas import LiveSchemaResolver
from kro.dynamic import DynamicController, DynamicControllerOptions
from kro.graph.resolver import SchemaResolver
from kro.runtime.cache import InformerCache
from kro.runtime.client import Client
from kro.runtime.clock import RealClock
from kro.runtime.controller import Controller
from kro.runtime.informer import Informer
from kro.runtime.manager import Manager
from kro.runtime.metrics import MetricsProvider
from kro.runtime.ratelimit import default_controller_rate_limiter
from kro.runtime.reconcile import Request
from kro.runtime.sharding import ShardView
from kro.runtime.workqueue import WorkQueue

Obj = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class AppOptions:
    """What `kro controller`'s flags configure (§1.S); defaults are upstream's.

    feature_gates: `--feature-gates` (§1.V); here InstanceConditionEvents turns on Events for
    instance condition changes. CELOmitFunction reaches the builder through `rgd.build`.
    state_gauges: keep `instances_by_state` and `rgds_by_state` (default on; `kro controller`
    turns them off only with KRO_STATE_GAUGES=0, to measure what they cost).
    """

    rgd: RGDOptions = field(default_factory=RGDOptions)
    dynamic: DynamicControllerOptions = field(default_factory=DynamicControllerOptions)
    rgd_workers: int = 1
    graph_revision_workers: int = 1
    resync_period_s: float | None = 36000.0
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    state_gauges: bool = True
    # `--shards=auto`: this replica's share of the instances (kro.runtime.sharding).
    shard: ShardView | None = None


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
    """Every kro controller, ready to be installed on a Manager."""

    def __init__(
        self,
        client: Client,
        options: AppOptions,
        *,
        metrics: MetricsProvider,
        resolver: SchemaResolver | None = None,
    ) -> None:
        """`resolver`: where graphs find the schemas of the kinds they use (default: the
        cluster's OpenAPI, cached; tests pass an offline one)."""
        clock = RealClock()
        self.client = client
        self.options = options
        # Open unless `install` binds it to leadership (sharded replicas; module docstring).
        self.writes = WriteGate()
        self.registry = RevisionRegistry(RegistryMetrics(metrics))
        # Always there: Warnings of kro-py's own (a field another controller keeps rewriting)
        # are recorded whatever the gates; the gate InstanceConditionEvents only decides the
        # per-condition Events (InstanceOptions.condition_events).
        self.recorders: RecorderPool | None = RecorderPool(client)
        self.schemas = LiveSchemaResolver(client, metrics=SchemaResolverMetrics(metrics))
        self.resolver: SchemaResolver = resolver or self.schemas
        self.factory = InformerCache(
            client, resync_period_s=options.resync_period_s, shard=options.shard
        )
        self.dynamic = DynamicController(self.factory, options=options.dynamic, metrics=metrics)
        self.applier = Applier(client, ApplierOptions(tooling=tooling_for(KRO_VERSION)))
        self.rgd_queue = WorkQueue[Request](
            "ResourceGraphDefinition",
            rate_limiter=default_controller_rate_limiter(clock),
            clock=clock,
            metrics=metrics,
        )
        self.gr_queue = WorkQueue[Request](
            "graphrevision",
            rate_limiter=default_controller_rate_limiter(clock),
            clock=clock,
            metrics=metrics,
        )
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
        )
        self.gr_reconciler = GraphRevisionReconciler(
            client=client,
            registry=self.registry,
            resolver=self.resolver,
            options=options.rgd.build,
            notify_rgd=self.enqueue_rgd,
            metrics=GraphRevisionMetrics(metrics),
            writes=self.writes,
        )
        self.rgd_controller = Controller(
            "ResourceGraphDefinition",
            self.rgd_reconciler,
            self.rgd_queue,
            workers=options.rgd_workers,
            clock=clock,
            metrics=metrics,
        )
        self.gr_controller = Controller(
            "graphrevision",
            self.gr_reconciler,
            self.gr_queue,
            workers=options.graph_revision_workers,
            clock=clock,
            metrics=metrics,
        )
        self.informers = self._informers()
        self.rgd_informer, self.revision_informer = self.informers[0], self.informers[1]
        if options.shard is not None:
            options.shard.count_owned(self.owned_instances)

    def enqueue_rgd(self, name: str) -> None:
        if name:
            self.rgd_queue.add(Request("", name))

    def owned_instances(self) -> int:
        """Instances this replica owns now: the objects in its sharded parent informers (the
        sharded informers of child kinds hold children, kro.dynamic.watches)."""
        parents = self.dynamic.registered()
        return sum(
            len(i.store)
            for i in self.factory.informers()
            if i.shard is not None and i.gvr in parents
        )

    def requeue_all(self) -> None:
        """Queue every RGD and GraphRevision in the caches (this replica starts leading)."""
        for revision in self.revision_informer.store.list():
            self.gr_queue.add(Request("", _name(revision)))
        for rgd in self.rgd_informer.store.list():
            self.enqueue_rgd(_name(rgd))

    def _informers(self) -> list[Informer]:
        rgds = Informer(self.client, RGDS)
        rgds.add_handler(
            _Handler(
                on_add=lambda o: self.enqueue_rgd(_name(o)),
                on_update=lambda old, new: (
                    self.enqueue_rgd(_name(new)) if rgd_update_matters(old, new) else None
                ),
                on_delete=lambda o: self.enqueue_rgd(_name(o)),
            )
        )
        revisions = Informer(self.client, GRAPH_REVISIONS)
        revisions.add_handler(
            _Handler(
                on_add=self._revision_added,
                on_update=self._revision_updated,
                on_delete=self._revision_deleted,
            )
        )
        crds = Informer(self.client, CRDS, metadata_only=True)
        crds.add_handler(
            _Handler(
                on_add=self._crd_added,
                on_update=lambda old, new: self._crd_changed(new),
                on_delete=self._crd_changed,
            )
        )
        return [rgds, revisions, crds]

    def _revision_added(self, revision: Obj) -> None:
        self.gr_queue.add(Request("", _name(revision)))
        self.enqueue_rgd(_snapshot_name(revision))

    def _revision_updated(self, old: Obj, new: Obj) -> None:
        """Revisions are immutable: only the start of their deletion is news (N-01), and, to
        a replica that does not lead, the leader's verdict in their status."""
        if (new.get("metadata") or {}).get("deletionTimestamp") or (
            old.get("status") != new.get("status") and not self.writes.allowed()
        ):
            self.gr_queue.add(Request("", _name(new)))
        self.enqueue_rgd(_snapshot_name(new))

    def _revision_deleted(self, revision: Obj) -> None:
        """The leader's GraphRevision controller evicts a revision from the registry before it
        removes the finalizer; a replica that does not lead may see the revision gone before
        it reconciled its deletion, so it evicts it here."""
        if not self.writes.allowed():
            spec = revision.get("spec") or {}
            self.registry.evict(_snapshot_name(revision), int(spec.get("revision") or 0))
        self.enqueue_rgd(_snapshot_name(revision))

    def _forget_schemas(self) -> None:
        """A CRD appeared or changed: kinds and schemas cached before are stale."""
        self.client.mapper.invalidate()
        self.schemas.invalidate()

    def _crd_added(self, crd: Obj) -> None:
        """A new CRD, or one listed at start-up: if kro generated it, its RGD is reconciled,
        which finds the instances of a kind whose RGD is gone."""
        self._forget_schemas()
        self._enqueue_owner(crd)

    def _crd_changed(self, crd: Obj) -> None:
        """CRD watch healing (P-12): a kro-owned CRD changed or vanished; reconcile its RGD."""
        self._forget_schemas()
        self._enqueue_owner(crd)

    def _enqueue_owner(self, crd: Obj) -> None:
        if is_kro_owned(crd):
            self.enqueue_rgd(
                str(((crd.get("metadata") or {}).get("labels") or {}).get(LABEL_RGD_NAME, ""))
            )

    def install(self, manager: Manager) -> None:
        """Add informers, runnables and controllers to `manager`. Sharded, the controllers
        run on every replica and only the leader writes (module docstring)."""
        for informer in self.informers:
            manager.add_informer(informer)
        manager.add_runnable(self.factory)
        if self.recorders is not None:
            manager.add_runnable(self.recorders)
        if self.options.shard is None:
            manager.add_controller(self.gr_controller)
            manager.add_controller(self.rgd_controller)
            manager.add_controller(self.dynamic)
            return
        self.writes.bind(manager.may_reconcile)
        for controller in (self.gr_controller, self.rgd_controller, self.dynamic):
            manager.add_controller(controller, leader_only=False)
        manager.add_controller(Promotion(self.requeue_all))


def _snapshot_name(revision: Obj) -> str:
    return str(((revision.get("spec") or {}).get("snapshot") or {}).get("name") or "")
