"""kro.controllers.instance.reconciler: reconcile one instance of one RGD (reference §1.F).

A reconcile is a sequence of named phases: load (R-01) → deletion (R-02, §1.L) → resolve the
latest graph revision (R-03) → ensure kro manages the instance (R-05) → suspension (R-07) →
resources (R-08..R-14: one pass of kro.engine, the instance bound by `binding`) → status (R-15,
R-16, R-18) → requeue (R-17).

Errors are recorded in the instance's conditions before they are raised, so a user sees what is
wrong with `kubectl get -o yaml`, not only in the controller's logs. Failures a user must act on
(a child apply refused, a failed pass, a graph that cannot be used, a blocked deletion) are also
reported through the kind's FailureReporter (kro.controllers.failures): a warning line when the
cause changes, a Warning Event, and `instance_errors_total{rgd, reason}`. Every status write
also tells `instances_by_state` the instance's state.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from kro.api.conditions import watches_healthy
from kro.api.names import (
    CONDITION_GRAPH_RESOLVED,
    CONDITION_INSTANCE_MANAGED,
    CONDITION_RESOURCES_READY,
    EVENT_DELETION_BLOCKED,
    EVENT_RECONCILE_FAILED,
    EVENT_RESOURCE_APPLY_FAILED,
    FIELD_MANAGER_INSTANCE_STATUS,
    FIELD_MANAGER_LABELLER,
    FINALIZER,
    INSTANCE_STATE_ACTIVE,
    INSTANCE_STATE_DELETING,
    INSTANCE_STATE_ERROR,
    INSTANCE_STATE_IN_PROGRESS,
    NODE_TERMINAL_STATES,
    REASON_ALL_RESOURCES_READY,
    REASON_FIELD_YIELDED,
    REASON_MANAGED,
    REASON_MANAGEMENT_FAILED,
    REASON_NOT_READY,
    REASON_RECONCILIATION_SUSPENDED,
    REASON_RESOLUTION_FAILED,
    REASON_RESOLVED,
    REASON_RESOURCE_DELETING,
    REASON_SCHEMA_PENDING,
    REASON_UNDER_DELETION,
    STATUS_FALSE,
    STATUS_TRUE,
    STATUS_UNKNOWN,
)
from kro.applyset import Applier, Contest
from kro.controllers.events import record_condition_changes
from kro.controllers.failures import Failure, FailureReporter
from kro.controllers.instance.binding import InstanceBinding
from kro.controllers.instance.known_instances import KnownInstances
from kro.controllers.instance.labels import instance_labels, labeller_body
from kro.controllers.instance.options import InstanceOptions as InstanceOptions  # noqa: PLC0414
from kro.controllers.instance.status import (
    AWAITING_PREFIX,
    FIELD_CONFLICT_HINT,
    PASS_FAILED_PREFIX,
    RESOURCE_ERROR_PREFIX,
    InstanceStatus,
    is_suspended,
    node_reasons,
    node_state_summary,
)
from kro.controllers.kind_waits import KindWaits
from kro.controllers.members import ClusterWaits, MemberWatches
from kro.controllers.metrics import (
    RESOLUTION_FAILED,
    RESOLUTION_NOT_AVAILABLE,
    RESOLUTION_UNKNOWN_STATE,
    CelMetrics,
    ConditionDurations,
    InstanceMetrics,
    RuntimeMetrics,
    gvr_string,
)
from kro.controllers.owner import CLUSTER_REASONS, OwnerReconciler
from kro.controllers.registry import RevisionRegistry, RevisionState
from kro.controllers.requeue import RequeueBackoff
from kro.controllers.settled import SettledPasses
from kro.dynamic import ObjectRef, ScalarWatch, WatchCoordinator
from kro.engine.applyset_ownership import ApplySetOwnership
from kro.engine.graph_pass import GraphPass
from kro.engine.ownership import TeardownStep
from kro.engine.places import MemberClusters, Places, WithMembers
from kro.engine.results import NodeReason, PassCounts, PassResult
from kro.graph.evaluate import InstanceEvaluation
from kro.graph.model import Graph
from kro.runtime.client import Client
from kro.runtime.errors import Conflict, KubeError, NotFound
from kro.runtime.events import EventRecorder
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result
from kro.runtime.status import StatusWriter

log = structlog.get_logger(__name__)


class ReconcileFailed(Exception):
    """The pass failed after its status was written and the failure was reported; the queue
    retries with backoff."""


def should_enqueue_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Parent updates that matter: a new generation or a flip of suspension (W-06), and the
    start of deletion (the API server bumps the generation then too; this does not rely on it)."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return (
        old_meta.get("generation") != new_meta.get("generation")
        or is_suspended(old) != is_suspended(new)
        or bool(old_meta.get("deletionTimestamp")) != bool(new_meta.get("deletionTimestamp"))
    )


def probably_settled(instance: Mapping[str, Any]) -> bool:
    """Whether an instance found by a (re)start can wait behind new work: kro already manages
    it (its finalizer is set) and it is not being deleted. Only metadata is cached, so a spec
    changed while kro was down is not told apart; it waits in the background lane too."""
    meta = instance.get("metadata") or {}
    return FINALIZER in (meta.get("finalizers") or []) and not meta.get("deletionTimestamp")


class InstanceReconciler(OwnerReconciler):
    """Reconciles the instances of one RGD; registered with the dynamic controller. The RGD
    instance kind's adapter of the owner reconcile (kro.controllers.owner)."""

    def __init__(
        self,
        *,
        rgd_name: str,
        rgd_uid: str,
        gvr: GVR,
        kind: str,
        client: Client,
        registry: RevisionRegistry,
        applier: Applier,
        watches: WatchCoordinator,
        options: InstanceOptions | None = None,
        metrics: InstanceMetrics | None = None,
        events: EventRecorder | None = None,
        runtime_metrics: RuntimeMetrics | None = None,
        cel_metrics: CelMetrics | None = None,
        condition_durations: ConditionDurations | None = None,
        warnings: EventRecorder | None = None,
        failures: FailureReporter | None = None,
        waits: RequeueBackoff | None = None,
        kind_waits: KindWaits | None = None,
        members: MemberClusters | None = None,
        member_watches: MemberWatches | None = None,
        own_cluster: str = "",
        cluster_waits: ClusterWaits | None = None,
    ) -> None:
        """`members`: the registry's member clusters (MultiCluster gate), where targets send
        children (M-10, M-11); None: every child lives with its instance. `own_cluster`: the
        member this kind's instances live in (hub and spokes, M-21); "" for the hub.
        `events`: the recorder of condition-change Events (None: gate off, no Events).
        `failures`, `waits`: the kind's FailureReporter and requeue backoff, shared by its
        reconcilers across revisions (default: this reconciler's own)."""
        self.kind_waits = kind_waits
        self.member_watches = member_watches
        self.cluster_waits = cluster_waits
        self.own_cluster = own_cluster
        self.places: Places | None = None
        if members is not None:
            per_cluster = member_watches.for_cluster if member_watches is not None else None
            self.places = WithMembers(client, watches, members, per_cluster, own=own_cluster)
        self.rgd_name = rgd_name
        self.rgd_uid = rgd_uid
        self.gvr = gvr
        self.client = client
        self.registry = registry
        self.applier = applier
        self.watches = watches
        self.options = options or InstanceOptions()
        self.metrics = metrics or InstanceMetrics()
        self.runtime_metrics = runtime_metrics or RuntimeMetrics()
        self.cel_metrics = cel_metrics or CelMetrics()
        self.condition_durations = condition_durations
        self.events = events
        self.warnings = warnings
        self.kind = kind
        self.failures = failures or FailureReporter(
            rgd=rgd_name,
            event="instance.failed",
            counter=self.metrics.errors,
            reasons=(),
        )
        self._gvr_label = gvr_string(gvr)
        self._settled = SettledPasses(watches, gvr, applier.memory)
        self._known = KnownInstances(watches, gvr, applier.memory)
        self.finalizer = FINALIZER
        self.noun = "instance"
        self.waits = waits or self.options.backoff()
        self._status = StatusWriter(
            client, field_manager=FIELD_MANAGER_INSTANCE_STATUS, method="apply"
        )

    async def reconcile(self, request: Request) -> Result:
        """One reconcile, counted and timed in the instance_* metrics (rows 31-33); a failure
        no phase reported itself (a read the API server refused, say) is reported here."""
        self.metrics.reconcile_total.inc(gvr=self._gvr_label)
        started = time.monotonic()
        with structlog.contextvars.bound_contextvars(
            rgd=self.rgd_name, namespace=request.namespace, name=request.name
        ):
            try:
                return await super().reconcile(request)
            except Exception as error:
                key = (request.namespace, request.name)
                self._settled.forget(key)
                self._known.forget(key)
                self.metrics.reconcile_errors.inc(gvr=self._gvr_label)
                # Reported already, gone, or a stale read the retry re-reads: nothing to act on.
                if not isinstance(error, ReconcileFailed | NotFound | Conflict):
                    reference = {
                        "apiVersion": f"{self.gvr.group}/{self.gvr.version}".lstrip("/"),
                        "kind": self.kind,
                        "metadata": {"name": request.name, "namespace": request.namespace},
                    }
                    failure = Failure(EVENT_RECONCILE_FAILED, f"reconcile failed: {error}")
                    self.failures.report(key, reference, failure)
                raise
            finally:
                duration = time.monotonic() - started
                self.metrics.reconcile_duration.observe(duration, gvr=self._gvr_label)

    async def read(self, ref: ObjectRef) -> dict[str, Any]:
        """kro's last write of the instance, the labeller's answer for a new one, or a read."""
        known = self._known.take(self.key(ref)) or await self._managed_at_once(ref)
        return known or await super().read(ref)

    # -- normal path -------------------------------------------------------------------------

    async def sync(self, instance: dict[str, Any], parent: ObjectRef) -> Result:
        status = InstanceStatus(instance)
        graph, failure = self._resolve_graph()
        if graph is None:
            status.set(CONDITION_GRAPH_RESOLVED, STATUS_FALSE, REASON_RESOLUTION_FAILED, failure)
            await self._write_status(instance, status.build(INSTANCE_STATE_ERROR, None))
            if "failed" in failure:  # the RGD's latest graph is broken: its owner must act
                self.failures.report(
                    self.key(parent), instance, Failure(REASON_RESOLUTION_FAILED, failure)
                )
                return Result()
            log.debug("instance.graph_unresolved", reason=failure)  # warming up, compiling
            return self.wait(parent, "graph_unresolved")
        status.set(
            CONDITION_GRAPH_RESOLVED,
            STATUS_TRUE,
            REASON_RESOLVED,
            "runtime graph created and all resources resolved",
        )
        instance = await self._ensure_managed(instance, status)
        if is_suspended(instance):
            status.set(
                CONDITION_RESOURCES_READY,
                STATUS_FALSE,
                REASON_RECONCILIATION_SUSPENDED,
                "reconciliation suspended via kro.run/reconcile annotation",
            )
            await self._write_status(instance, status.build(INSTANCE_STATE_ACTIVE, None))
            self.failures.clear(self.key(parent))
            self.settled(parent)
            return Result()
        started = time.monotonic()
        evaluation = InstanceEvaluation(
            graph, instance, max_collection_size=self.options.max_collection_size
        )
        self.runtime_metrics.creation_total.inc()
        self.runtime_metrics.creation_duration.observe(time.monotonic() - started)
        work = GraphPass(
            graph=graph,
            owner_obj=instance,
            binding=InstanceBinding(self.gvr, parent, graph.instance),
            client=self.client,
            ownership=self.ownership(),
            watches=self.watches,
            evaluation=evaluation,
            places=self.places,
        )
        try:
            return await self._run_pass(work, parent, status)
        finally:
            self.cel_metrics.record(evaluation.eval_durations_s)

    async def _run_pass(self, work: GraphPass, parent: ObjectRef, status: InstanceStatus) -> Result:
        try:
            error = await self.run_pass(work, parent)
        finally:
            self._count(work.result.counts)
        if error is not None:
            self._report_watches(parent, status)
            message = f"{PASS_FAILED_PREFIX}{error}"
            status.set(CONDITION_RESOURCES_READY, STATUS_FALSE, REASON_NOT_READY, message)
            await self._write_status(work.owner_obj, status.build(INSTANCE_STATE_ERROR, None))
            code = getattr(error, "status", None) if isinstance(error, KubeError) else None
            fields = {"resource_id": getattr(error, "resource_id", None), "code": code}
            failure = Failure(
                EVENT_RECONCILE_FAILED, message, {k: v for k, v in fields.items() if v}
            )
            self.failures.report(self.key(parent), work.owner_obj, failure)
            raise ReconcileFailed(str(error)) from error
        outcome = work.result
        watches_synced = self._report_watches(parent, status)
        if outcome.deleting is not None:  # a child is terminating: nothing was applied
            message = outcome.deleting.message
            status.set(CONDITION_RESOURCES_READY, STATUS_FALSE, REASON_RESOURCE_DELETING, message)
            await self._write_status(work.owner_obj, status.build(INSTANCE_STATE_IN_PROGRESS, None))
            return self.wait(parent, "child_deleting")
        # Deferred nodes waiting for their kind: the kind's CRD wakes the instance.
        retry = self.schema_waits(parent, work)
        return self.sooner(await self._finish(work, status, watches_synced), retry)

    def _report_watches(self, parent: ObjectRef, status: InstanceStatus) -> bool:
        """WatchesHealthy (V-14) from the watches the pass left in place; whether every
        watched kind delivers its changes. Not a dependent of Ready: the pass applied and read
        what it needed either way. When a refused kind is granted, its informer's first list
        enqueues the instance (kro.dynamic.watches), which reports the recovery."""
        health = self.watches.health(parent)
        status.put(watches_healthy(health.blocked, health.pending))
        return health.synced

    def _count(self, counts: PassCounts) -> None:
        """The runtime_* metrics of one pass (rows 3-12), from what the engine counted."""
        metrics = self.runtime_metrics
        for counter, amount in (
            (metrics.ignored_checks, counts.ignored_checks),
            (metrics.ignored, counts.ignored),
            (metrics.ready_checks, counts.ready_checks),
            (metrics.not_ready, counts.not_ready),
            (metrics.node_eval_total, counts.node_evals),
            (metrics.node_eval_errors, counts.node_eval_errors),
        ):
            if amount:
                counter.inc(amount)
        for duration in counts.node_eval_durations_s:
            metrics.node_eval_duration.observe(duration)
        for size in counts.collection_sizes:
            metrics.collection_size.observe(size)

    def program(self, ref: ObjectRef) -> Graph | None:
        """The latest revision's graph if Active; no metrics (a cheap check, not a resolve)."""
        entry = self.registry.latest(self.rgd_name)
        if entry is None or entry.state is not RevisionState.ACTIVE:
            return None
        return entry.graph

    def _resolve_graph(self) -> tuple[Graph | None, str]:
        """The latest revision if Active; otherwise why not (R-03, no fallback: N-07)."""
        entry = self.registry.latest(self.rgd_name)
        gvr = self._gvr_label
        if entry is None:
            self.metrics.resolution_failures.inc(gvr=gvr, reason=RESOLUTION_NOT_AVAILABLE)
            return None, "latest issued graph revision not available"
        if entry.state is RevisionState.PENDING:
            self.metrics.resolution_pending.inc(gvr=gvr)
            return None, f"latest issued graph revision {entry.revision} is pending"
        if entry.state is RevisionState.FAILED:
            self.metrics.resolution_failures.inc(gvr=gvr, reason=RESOLUTION_FAILED)
            return None, f"latest issued graph revision {entry.revision} failed"
        if entry.graph is None:
            self.metrics.resolution_failures.inc(gvr=gvr, reason=RESOLUTION_UNKNOWN_STATE)
            return None, f"latest issued graph revision {entry.revision} is in an unknown state"
        self.metrics.resolution_success.inc(gvr=gvr)
        return entry.graph, ""

    def _is_managed(self, metadata: Mapping[str, Any]) -> bool:
        """kro's finalizer and labels are on the instance (R-05 has nothing to write)."""
        current = metadata.get("labels") or {}
        return FINALIZER in (metadata.get("finalizers") or []) and all(
            current.get(k) == v for k, v in instance_labels(self.rgd_name, self.rgd_uid).items()
        )

    async def _label(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """The labeller apply of R-05 (`labeller_body`: guarded by the instance's uid);
        returns the server's answer, the whole instance."""
        body, started = labeller_body(
            self.gvr,
            self.kind,
            metadata,
            instance_labels(self.rgd_name, self.rgd_uid),
            tooling=self.applier.tooling,
            home=self.own_cluster,
        )
        updated = await self.client.apply(
            self.gvr,
            body,
            field_manager=FIELD_MANAGER_LABELLER,
            force=True,
            namespace=metadata.get("namespace") or None,
        )
        if started is not None:  # a new ApplySet: none of its members exists yet
            self.applier.members.started(started)
        return updated

    async def _managed_at_once(self, parent: ObjectRef) -> dict[str, Any] | None:
        """A new instance, labelled without reading it first: the labeller's answer is the
        whole instance, so the GET a pass starts with would be one request too many (an
        instance read costs kube-apiserver about a child's create). Only for an instance the
        cache shows unmanaged and not being deleted, while the latest revision is Active (R-03
        comes first); the cached uid guards the apply. None otherwise, or when the apply fails:
        the pass then reads and labels the instance as before, and reports what fails."""
        if self.program(parent) is None:
            return None
        _, cached = self.watches.cached_object(
            ScalarWatch("", self.gvr, parent.namespace, parent.name)
        )
        metadata = (cached or {}).get("metadata") or {}
        if (
            not metadata.get("uid")
            or metadata.get("deletionTimestamp")
            or self._is_managed(metadata)
        ):
            return None
        try:
            return await self._label(metadata)
        except KubeError as error:
            log.debug("instance.label_unread_failed", error=str(error))
            return None

    async def _ensure_managed(
        self, instance: dict[str, Any], status: InstanceStatus
    ) -> dict[str, Any]:
        """Labels + finalizer (+ empty ApplySet inventory) in one labeller apply (R-05)."""
        if not self._is_managed(instance.get("metadata") or {}):
            try:
                instance = await self._label(instance.get("metadata") or {})
            except (NotFound, Conflict):
                raise  # deleted (or replaced) meanwhile: nothing to report, the queue retries
            except KubeError as error:
                message = f"finalizer/labeling failed: {error}"
                status.set(
                    CONDITION_INSTANCE_MANAGED, STATUS_FALSE, REASON_MANAGEMENT_FAILED, message
                )
                await self._write_status(instance, status.build(INSTANCE_STATE_ERROR, None))
                failure = Failure(
                    REASON_MANAGEMENT_FAILED, message, {"code": getattr(error, "status", None)}
                )
                self.failures.report(object_key(instance), instance, failure)
                raise ReconcileFailed(message) from error
        status.set(
            CONDITION_INSTANCE_MANAGED,
            STATUS_TRUE,
            REASON_MANAGED,
            "instance is properly managed with finalizers and labels",
        )
        return instance

    async def _finish(
        self, work: GraphPass, status: InstanceStatus, watches_synced: bool
    ) -> Result:
        instance, outcome, evaluation = work.owner_obj, work.result, work.evaluation
        states = [
            outcome.nodes[n].state if n in outcome.nodes else INSTANCE_STATE_IN_PROGRESS
            for n in work.graph.topological_order
        ]
        node_state = node_state_summary(states, NODE_TERMINAL_STATES)
        found = {r.reason for r in outcome}
        if node_state == INSTANCE_STATE_ACTIVE:
            ready = (STATUS_TRUE, REASON_ALL_RESOURCES_READY, "all resources are created and ready")
        elif node_state == INSTANCE_STATE_ERROR:
            reason = next((r.value for r in CLUSTER_REASONS if r in found), REASON_NOT_READY)
            ready = (STATUS_FALSE, reason, RESOURCE_ERROR_PREFIX + node_reasons(outcome))
        else:
            pending = NodeReason.SCHEMA_PENDING in found
            reason = REASON_SCHEMA_PENDING if pending else REASON_NOT_READY
            ready = (STATUS_FALSE, reason, AWAITING_PREFIX + node_reasons(outcome))
        status.set(CONDITION_RESOURCES_READY, *ready)
        self._report_contests(instance, status, outcome.contests)
        self._report_apply_errors(instance, outcome)
        author = None
        if work.graph.conditions:
            author = evaluation.author_conditions(status.builtin_conditions())
        desired = status.build(node_state, evaluation.status_fields(), author)
        # A pass that cannot see every change it depends on is never taken as settled: the
        # caches could not tell that nothing changed, and the recovery must be written.
        settles = outcome.settles() and watches_synced
        written = await self._write_status(instance, desired)
        final = written if written is not None else instance
        log.debug(
            "instance.reconciled",
            state=node_state,
            mutated=outcome.mutated,
            pending=outcome.pending,
        )
        # Waiting for data needs no timer: everything a pass reads (the instance, children,
        # collections, external refs) is watched, so the change that unblocks a pending node
        # enqueues the instance. Upstream also requeues on pending data every interval; that
        # costs ~4 requests per instance per interval while Deployments roll out.
        if settles:
            # The next pass would change nothing unless something it reads changes: remember
            # what it read (or wrote) so the caches can confirm that at no cost.
            version = str((final.get("metadata") or {}).get("resourceVersion") or "")
            self._settled.record(object_key(instance), work.graph, version, work.reads)
        else:  # the next pass starts from it, if nobody writes the instance meanwhile
            self._known.keep(object_key(instance), final)
        parent = ObjectRef(self.gvr, *object_key(instance))
        if outcome.apply_errors or outcome.retry:
            reason = "apply_failed" if outcome.apply_errors else "prune_incomplete"
            return self.wait(parent, reason)
        self.settled(parent)
        if outcome.mutated:  # looked at again after the first delay: children may be on their way
            interval = self.options.requeue_interval_s
            return Result(requeue_after_s=interval) if interval > 0 else Result()
        if outcome.retry_after_s is not None:
            return Result(requeue_after_s=outcome.retry_after_s)
        return Result()

    def _report_apply_errors(self, instance: Mapping[str, Any], outcome: PassResult) -> None:
        """Children the API server refused (R-14: 422, 403, ...): reported; a clean pass clears
        the cause."""
        errors = {r.id: r.errors or (RuntimeError(r.message),) for r in outcome if r.failed}
        if not errors:
            self.failures.clear(object_key(instance))
            return
        parts = [f'resource "{node}": {e}' for node, found in errors.items() for e in found]
        codes = sorted({str(getattr(e, "status", "")) for f in errors.values() for e in f} - {""})
        fields = {"resource_id": ",".join(errors), "code": ",".join(codes)}
        failure = Failure(EVENT_RESOURCE_APPLY_FAILED, "apply failed: " + "; ".join(parts), fields)
        self.failures.report(object_key(instance), instance, failure)

    def _report_contests(
        self, instance: Mapping[str, Any], status: InstanceStatus, found: Sequence[Contest]
    ) -> None:
        """Fields another manager keeps rewriting: the FieldConflict condition, a Warning Event
        when kro yields, `instance_field_conflicts_total{outcome: reapplied|yielded}`."""
        status.set_field_conflict([c for c in found if c.yielded])
        for contest in found:
            if not contest.fresh:
                continue
            outcome = "yielded" if contest.yielded else "reapplied"
            self.metrics.field_conflicts.inc(
                gvr=self._gvr_label, manager=contest.manager, outcome=outcome
            )
            log.warning(
                "instance.field_contested",
                resource_id=contest.resource_id,
                field=contest.path,
                manager=contest.manager,
                rounds=contest.rounds,
                yielded=contest.yielded,
            )
            if contest.yielded and self.warnings is not None:
                message = (
                    f'stopped applying field {contest.path} of resource "{contest.resource_id}": '
                    f'field manager "{contest.manager}" changed it back {contest.rounds} times. '
                    + FIELD_CONFLICT_HINT
                )
                self.warnings.record(instance, "Warning", REASON_FIELD_YIELDED, message)

    # -- deletion ----------------------------------------------------------------------------

    def ownership(self, obj: dict[str, Any] | None = None) -> ApplySetOwnership:
        """How an instance keeps its children: as its ApplySet (kro.engine.ownership); a
        teardown deletes them wave by wave from its inventory (§1.L)."""
        return ApplySetOwnership(
            applier=self.applier, client=self.client, gvr=self.gvr, places=self.places
        )

    async def tearing_down(
        self, instance: dict[str, Any], parent: ObjectRef, step: TeardownStep
    ) -> Result:
        """A wave is being deleted, or the teardown is blocked: the user sees which (D-06: why
        the finalizer stays, not only in the controller's log)."""
        if not step.blocked:
            self.failures.clear(self.key(parent))
        status = InstanceStatus(instance)
        message = f"deletion blocked: {step.blocked}" if step.blocked else "deleting resources"
        status.set(CONDITION_RESOURCES_READY, STATUS_UNKNOWN, REASON_UNDER_DELETION, message)
        await self._write_status(instance, status.build(INSTANCE_STATE_DELETING, None))
        if step.blocked:
            blocked = Failure(EVENT_DELETION_BLOCKED, message)
            self.failures.report(self.key(parent), instance, blocked)
            if not step.transient:  # an inventory we cannot trust: wait for a fix
                return self.wait(parent, "deletion_blocked")
            raise ReconcileFailed(message)  # a list or delete failed (Forbidden...): backoff
        if not self.waits.enabled:  # no timed requeues asked for, but a wave must be followed
            return Result(requeue_after_s=1.0)
        return self.wait(parent, "deletion_in_progress")

    # -- status write ------------------------------------------------------------------------

    async def _write_status(
        self, instance: Mapping[str, Any], desired: dict[str, Any]
    ) -> Mapping[str, Any] | None:
        """The whole status by server-side apply through `/status` (V-04: a field kro no
        longer produces goes with the apply), only when it differs; one retry on conflict. The
        body carries the instance's uid and resourceVersion, preconditions of the apply as of
        an update: a status computed from a stale read is never written over a newer spec.

        Returns the server's answer to a write of the pass's own instance (None if nothing was
        written, or only after a conflict: the pass read a stale instance). The state and
        condition series follow what the status says; a written change is `_report`ed."""
        key = object_key(instance)
        self.metrics.states.set(key, str(desired.get("state") or ""), self.rgd_name)
        if self.condition_durations is not None:
            self.condition_durations.update(self._gvr_label, *key, desired.get("conditions") or [])
        current: Mapping[str, Any] = instance
        for attempt in (1, 2):
            try:
                written = await self._status.write(self.gvr, current, desired)
                if written is None:
                    return None
                self._report(instance, desired)
                # After a conflict the pass's input was stale: nothing to vouch for.
                return written if attempt == 1 else None
            except Conflict:
                if attempt == 2:
                    raise
                meta = current.get("metadata") or {}
                namespace = meta.get("namespace") or None
                current = await self.client.get(self.gvr, meta["name"], namespace=namespace)
            except NotFound:
                return None
        return None

    async def forget(self, parent: ObjectRef) -> None:
        """The instance is gone (or no longer ours): drop its watches and metric series."""
        await super().forget(parent)
        self._known.forget(self.key(parent))
        self.failures.forget(self.key(parent))
        self.metrics.states.forget(self.key(parent), self.rgd_name)
        if self.condition_durations is not None:
            self.condition_durations.evict(self._gvr_label, parent.namespace, parent.name)

    def _report(self, instance: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
        """`instance_state_transitions_total` when `state` moved, and (gate
        InstanceConditionEvents) one Event per condition whose status moved."""
        previous = instance.get("status") or {}
        old_state, new_state = str(previous.get("state") or ""), str(desired.get("state") or "")
        if old_state != new_state:
            self.metrics.state_transitions.inc(
                gvr=self._gvr_label, from_state=old_state, to_state=new_state
            )
        if self.events is not None:
            record_condition_changes(
                self.events,
                instance,
                previous.get("conditions") or [],
                desired.get("conditions") or [],
            )


def object_key(instance: Mapping[str, Any]) -> tuple[str, str]:
    meta = instance.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
