"""kro.controllers.rgd: the ResourceGraphDefinition controller (reference §1.M).

Per reconcile: finalizer (P-02) → spec hash (P-03) → list and adopt GraphRevisions (P-04) →
decide (P-05): wait for terminating revisions or warm-up, issue a new revision when there is none
or the hash changed (after validating the graph, P-06), wait for compilation, or serve the latest
Active revision (P-07): ensure the CRD, register the instance controller with the dynamic
controller, garbage-collect old revisions (P-10). Conditions and state per P-08; every dependent
condition is listed from the first status write on, `Unknown` (`AwaitingReconciliation`) until a
pass sets it, as upstream (an RGD whose graph never builds shows all five). Serving also
runs kro's own pre-flight (kro.controllers.permissions): `PermissionsGranted=False` says which
permissions the graph needs that kro lacks and makes `Ready` False; `state` stays as P-08.
A generated kind kro may not list or watch is `ControllerReady=False` `FailedToStart` with the
API server's refusal as soon as it answers (V-15), retried every `progress_requeue_delay_s`.

An invalid RGD update never issues a revision, so the previous one keeps serving instances while
the RGD reports `GraphAccepted=False` and `Inactive` (N-07, N-30).

Deletion (P-11): the RGD goes at once and its CRD stays (unless `--allow-crd-deletion`), as
upstream; unlike upstream, a kind with instances left keeps a controller that marks them
(`InstanceManaged=False` `ResourceGraphDefinitionDeleted`) and still deletes them properly,
until the last one is gone (kro.controllers.instance.kinds). The RGD's metric series go with it.

Failures an RGD's author must act on (an invalid graph, a CRD that cannot be installed, missing
permissions, a controller that cannot start) are reported through one FailureReporter
(kro.controllers.failures): a warning line when the cause changes, a Warning Event on the RGD
(reported as `kro/resourcegraphdefinition-controller`), and `rgd_errors_total{rgd, reason}`,
whose series start at 0 the first time an RGD is reconciled. Each status write also tells
`rgds_by_state` the RGD's state.

Finalizer writes carry the resourceVersion: a JSON merge patch replaces the whole list, so
without it a finalizer someone else added meanwhile could be lost. A Conflict re-reads through
the queue.

With `--shards=auto` every replica runs this controller and only the leader writes
(kro.controllers.leadership). A replica that does not lead takes the *follower path*
(`_follow`): it reads the RGD and its GraphRevisions, serves the latest revision exactly when
the leader would (no terminating revision, the latest one matches the spec and is Active in this
replica's registry) and only once the cluster's CRD is what the leader makes it, and releases
the kinds of a deleted RGD. It sends no write for RGDs, GraphRevisions or CRDs and reports no
failure (the leader's status, Events and error counters do), so `rgds_by_state` and
`rgd_errors_total` come from the leader only.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from kro.api.conditions import (
    aggregate_ready,
    conditions_of,
    first_of_each_type,
    initialise_missing,
    is_condition_true,
    now_rfc3339,
    ordered_conditions,
    set_condition,
)
from kro.api.names import (
    ALLOW_BREAKING_CHANGES_VALUE,
    ANNOTATION_ALLOW_BREAKING_CHANGES,
    CONDITION_CONTROLLER_READY,
    CONDITION_GRAPH_ACCEPTED,
    CONDITION_GRAPH_REVISIONS_RESOLVED,
    CONDITION_KIND_READY,
    CONDITION_PERMISSIONS_GRANTED,
    CONDITION_READY,
    EVENT_CRD_INSTALL_FAILED,
    EVENT_RECONCILE_FAILED,
    FINALIZER,
    KRO_DOMAIN,
    LABEL_GRAPH_REVISION_HASH,
    LABEL_KRO_VERSION,
    LABEL_OWNED,
    LABEL_RGD_ID,
    LABEL_RGD_NAME,
    LOCAL_CLUSTER_NAME_DEFAULT,
    OWNED_VALUE,
    REASON_FAILED,
    REASON_FAILED_TO_START,
    REASON_INVALID_RESOURCE_GRAPH,
    REASON_MISSING_PERMISSIONS,
    REASON_READY,
    REASON_RESOLVED,
    REASON_RUNNING,
    REASON_VALID,
    REASON_WAITING_FOR_GRAPH_REVISION_COMPILATION,
    REASON_WAITING_FOR_GRAPH_REVISION_SETTLEMENT,
    REASON_WAITING_FOR_GRAPH_REVISION_WARMUP,
    RGD_DEPENDENT_CONDITIONS,
    RGD_PLURAL,
    RGD_STATE_ACTIVE,
    RGD_STATE_INACTIVE,
    STATUS_FALSE,
    STATUS_TRUE,
    STATUS_UNKNOWN,
    V1ALPHA1,
)
from kro.api.objects import metadata as _meta
from kro.applyset import Applier
from kro.controllers.crd import (
    CRDError,
    crd_is_current,
    delete_crd_if_owned,
    ensure_crd,
)
from kro.controllers.events import RecorderPool
from kro.controllers.failures import Failure, FailureReporter
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.instance.kinds import InstanceControllers, Kind
from kro.controllers.instance.labels import KRO_VERSION
from kro.controllers.instance.options import InstanceOptions
from kro.controllers.kind_waits import KindWaits
from kro.controllers.leadership import NotLeader, WriteGate
from kro.controllers.members import ClusterWaits, RegistryMembers
from kro.controllers.metrics import (
    ISSUE_NO_REVISION,
    ISSUE_SPEC_CHANGED,
    MISS_LATEST_NOT_WARMED,
    MISS_RUNTIME_ENTRY_MISSING,
    RESULT_FAILED,
    RESULT_ISSUE,
    RESULT_SERVE,
    RESULT_WAIT,
    RGD_FAILURES,
    WAIT_COMPILING,
    WAIT_SETTLING,
    WAIT_WARMING_UP,
    CelMetrics,
    ConditionDurations,
    InstanceMetrics,
    RGDMetrics,
    RuntimeMetrics,
)
from kro.controllers.permissions import PermissionChecker, ready_dependents, report_permissions
from kro.controllers.registry import RevisionRegistry, RevisionState
from kro.controllers.revisions import collect_revisions, list_revisions, revision_manifest
from kro.controllers.spokes import Spokes, distributed
from kro.dynamic import DynamicController, WatchForbidden
from kro.engine.ownership import FINALIZER_ATTEMPTS
from kro.graph.errors import GraphError
from kro.graph.hashing import spec_hash
from kro.graph.model import Graph
from kro.graph.options import BuildOptions
from kro.graph.resolver import ClusterSchemas, SchemaResolver
from kro.runtime.client import Client
from kro.runtime.errors import Conflict, KubeError, NotFound
from kro.runtime.finalizers import remove_finalizer
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result
from kro.runtime.status import StatusWriter

log = structlog.get_logger(__name__)

RGDS = GVR(KRO_DOMAIN, V1ALPHA1, RGD_PLURAL)
RGD_RECORDER = "kro/resourcegraphdefinition-controller"
"""The reporting controller of the RGDs' Warning Events."""


@dataclass(frozen=True, kw_only=True)
class RGDOptions:
    """The RGD controller's flags (§1.S) and what it hands to instance controllers."""

    allow_crd_deletion: bool = False
    max_graph_revisions: int = 5
    progress_requeue_delay_s: float = 3.0
    conservative_crd_comparison: bool = False
    """The `ConservativeCRDComparison` gate: more CRD schema changes count as breaking (V-11)."""
    build: BuildOptions = field(default_factory=BuildOptions)
    instance: InstanceOptions = field(default_factory=InstanceOptions)


class RGDReconciler:
    """Reconciles ResourceGraphDefinitions; owns the registration of instance controllers."""

    def __init__(
        self,
        *,
        client: Client,
        registry: RevisionRegistry,
        resolver: SchemaResolver,
        dynamic: DynamicController,
        applier: Applier,
        options: RGDOptions | None = None,
        metrics: RGDMetrics | None = None,
        instance_metrics: InstanceMetrics | None = None,
        runtime_metrics: RuntimeMetrics | None = None,
        cel_metrics: CelMetrics | None = None,
        condition_durations: ConditionDurations | None = None,
        recorders: RecorderPool | None = None,
        enqueue_rgd: Callable[[str], None] | None = None,
        permissions: PermissionChecker | None = None,
        writes: WriteGate | None = None,
        kind_waits: KindWaits | None = None,
        members: RegistryMembers | None = None,
        clusters: ClusterSchemas | None = None,
        spokes: Spokes | None = None,
        cluster_waits: ClusterWaits | None = None,
    ) -> None:
        """`members`: the registry's member clusters (MultiCluster), where targets send an
        instance's children. `enqueue_rgd(name)` brings an RGD back to this reconciler's
        queue; the kind of a deleted RGD calls it when one of its instances is gone.
        `permissions` runs the pre-flight of each served graph (default: access reviews
        through `client`). `writes`: whether this replica may write RGDs, GraphRevisions
        and CRDs (default: always).
        `kind_waits`: the owners waiting for a kind (DeferredSchemaResolution), handed to the
        instance reconcilers."""
        self.writes = writes or WriteGate()
        self.permissions = permissions or PermissionChecker(client)
        self.client = client
        self._status = StatusWriter(client, method="update")  # preconditioned on the read
        self.registry = registry
        self.resolver = resolver
        self.clusters = clusters
        self.spokes = spokes
        self.hub = members.hub if members is not None else LOCAL_CLUSTER_NAME_DEFAULT
        """The hub's cluster name: targets naming it stay here (the pre-flight counts them)."""
        """Hub and spokes (`--enable-multicluster`): the members that serve each kind too."""
        """Member clusters' schemas (MultiCluster): literal targets typed there (M-12)."""
        self.dynamic = dynamic
        self.applier = applier
        self.options = options or RGDOptions()
        self.metrics = metrics or RGDMetrics()
        self.instance_metrics = instance_metrics or InstanceMetrics()
        self.runtime_metrics = runtime_metrics or RuntimeMetrics()
        self.cel_metrics = cel_metrics or CelMetrics()
        self.condition_durations = condition_durations
        self.recorders = recorders
        self._failures: dict[str, FailureReporter] = {}
        # RGDs whose current reconcile reported a failure already (the queue never runs two
        # reconciles of one RGD at once), so that the error it raises is not reported twice.
        self._reported: set[str] = set()
        self.kinds = InstanceControllers(
            client=client,
            registry=registry,
            applier=applier,
            dynamic=dynamic,
            options=self.options.instance,
            metrics=self.instance_metrics,
            runtime_metrics=self.runtime_metrics,
            cel_metrics=self.cel_metrics,
            condition_durations=condition_durations,
            recorders=recorders,
            enqueue_rgd=enqueue_rgd,
            kind_waits=kind_waits,
            members=members,
            cluster_waits=cluster_waits,
        )

    def _wait(self, reason: str) -> Result:
        self.metrics.revision_wait.inc(reason=reason)
        self.metrics.revision_resolution.inc(result=RESULT_WAIT)
        return Result(requeue_after_s=self.options.progress_requeue_delay_s)

    async def reconcile(self, request: Request) -> Result:
        with structlog.contextvars.bound_contextvars(rgd=request.name):
            if not self.writes.allowed():
                return await self._follow(request.name)
            try:
                rgd = await self.client.get(RGDS, request.name)
            except NotFound:  # gone (maybe without us seeing its deletion): let go of it
                await self.kinds.release(request.name)
                self._forget(request.name)
                return Result()
            if _meta(rgd).get("deletionTimestamp"):
                return await self._delete(rgd)
            try:
                rgd = await self._ensure_finalizer(rgd)
            except Conflict:
                log.info("rgd.finalizer_conflict")
                return Result(requeue=True)  # re-read on the next attempt
            await self.kinds.settle(request.name)
            self.failures(request.name)  # its error series exist from its first reconcile
            status = copy.deepcopy(rgd.get("status") or {})
            self._reported.discard(request.name)
            try:
                result = await self._resolve(rgd, status)
            except Exception as error:
                # A Conflict is a stale read, which the retry re-reads: nothing to act on. Nor
                # is leadership lost midway: the retry takes the follower path.
                if request.name not in self._reported and not isinstance(
                    error, Conflict | NotLeader
                ):
                    self._report(rgd, Failure(EVENT_RECONCILE_FAILED, f"reconcile failed: {error}"))
                raise
            finally:
                self._reported.discard(request.name)
                if self.writes.allowed():  # no longer leading: the status is the leader's
                    await self._write_status(rgd, status)
            return result

    # -- following (not the leader) ----------------------------------------------------------

    async def _follow(self, name: str) -> Result:
        """The follower path (module docstring): the leader's decisions, applied to this
        replica's registrations only. Never writes an RGD, a GraphRevision or a CRD."""
        try:
            rgd = await self.client.get(RGDS, name)
        except NotFound:
            await self.kinds.release(name)
            self._forget(name)
            return Result()
        if _meta(rgd).get("deletionTimestamp"):
            # The leader deletes the CRD (if allowed) and removes the finalizer; the instances
            # of this replica's share are drained here as there.
            await self.kinds.release(name)
            if self.spokes is not None:  # this replica's members drain theirs (M-23)
                await self.spokes.release(name, None)
            self._forget(name)
            return Result()
        await self.kinds.settle(name)
        revisions = await list_revisions(self.client, rgd, adopt=False)
        if not revisions.live and not revisions.terminating:
            self.registry.drop(name)
        latest = revisions.latest
        if revisions.terminating or latest is None:
            return self._follow_wait()
        number = int(latest["spec"]["revision"])
        labels = _meta(latest).get("labels") or {}
        if labels.get(LABEL_GRAPH_REVISION_HASH) != spec_hash(rgd.get("spec") or {}):
            return Result()  # the leader issues a new revision (or the update is invalid)
        entry = self.registry.get(name, number)
        if entry is None or entry.state is RevisionState.PENDING:
            return self._follow_wait()  # our GraphRevision controller notifies us when done
        if entry.state is RevisionState.FAILED or entry.graph is None:
            return Result()  # as the leader: nothing new to serve
        crd = self._desired_crd(rgd, entry.graph)
        if not await crd_is_current(
            self.client,
            crd,
            rgd_name=name,
            conservative=self.options.conservative_crd_comparison,
        ):
            return self._follow_wait()  # the leader applies it (CRD events bring us back too)
        kind = await self._register(rgd, entry.graph, number)
        if (
            self.spokes is not None
            and distributed(rgd)
            and not await self.spokes.follow(rgd, crd, kind, number)
        ):
            return self._follow_wait()  # M-23: a member's CRD is the leader's to apply
        return Result()

    def _follow_wait(self) -> Result:
        return Result(requeue_after_s=self.options.progress_requeue_delay_s)

    # -- failures ----------------------------------------------------------------------------

    def failures(self, name: str) -> FailureReporter:
        """The RGD's FailureReporter; the first call creates its error series at 0."""
        reporter = self._failures.get(name)
        if reporter is None:
            reporter = self._failures[name] = FailureReporter(
                rgd=name,
                event="rgd.failed",
                counter=self.metrics.errors,
                reasons=RGD_FAILURES,
                recorder=self.recorders.recorder(RGD_RECORDER) if self.recorders else None,
            )
            reporter.initialise()
        return reporter

    def _report(self, rgd: Mapping[str, Any], failure: Failure) -> None:
        name = str(_meta(rgd)["name"])
        self._reported.add(name)
        self.failures(name).report(name, rgd, failure)

    def _forget(self, name: str) -> None:
        """The RGD is gone: its series and its last failure go too."""
        self._failures.pop(name, None)
        self.metrics.forget(name)

    # -- revisions ---------------------------------------------------------------------------

    async def _resolve(self, rgd: dict[str, Any], status: dict[str, Any]) -> Result:
        name = str(_meta(rgd)["name"])
        generation = _meta(rgd).get("generation")
        wanted_hash = spec_hash(rgd.get("spec") or {})
        self.writes.check("graphrevision adoption")
        revisions = await list_revisions(self.client, rgd)
        if not revisions.live and not revisions.terminating:
            self.registry.drop(name)
        latest = revisions.latest
        now = now_rfc3339()

        def cond(kind: str, value: str, reason: str, message: str = "") -> None:
            set_condition(
                status,
                kind,
                value,
                now=now,
                reason=reason,
                message=message,
                observed_generation=generation,
            )

        if revisions.terminating:
            cond(
                CONDITION_GRAPH_REVISIONS_RESOLVED,
                STATUS_UNKNOWN,
                REASON_WAITING_FOR_GRAPH_REVISION_SETTLEMENT,
                "waiting for terminating graph revisions to settle",
            )
            return self._wait(WAIT_SETTLING)
        latest_number = int(latest["spec"]["revision"]) if latest else 0
        if latest is not None and self.registry.get(name, latest_number) is None:
            cond(
                CONDITION_GRAPH_REVISIONS_RESOLVED,
                STATUS_UNKNOWN,
                REASON_WAITING_FOR_GRAPH_REVISION_WARMUP,
                f"waiting for graph revision {latest_number} to warm up",
            )
            self.metrics.registry_miss.inc(reason=MISS_LATEST_NOT_WARMED)
            return self._wait(WAIT_WARMING_UP)
        latest_hash = str(
            ((latest or {}).get("metadata") or {})
            .get("labels", {})
            .get(LABEL_GRAPH_REVISION_HASH, "")
        )
        entry = self.registry.get(name, latest_number) if latest is not None else None
        if latest is None or latest_hash != wanted_hash:
            if entry is not None:
                # The revision serving now is evaluated at this generation too, so that an
                # update that fails validation leaves no condition stamped with an old one.
                self._revision_condition(entry.state, entry.graph, latest_number, cond)
            self.metrics.revision_resolution.inc(result=RESULT_ISSUE)
            reason = ISSUE_NO_REVISION if latest is None else ISSUE_SPEC_CHANGED
            return await self._issue(rgd, status, wanted_hash, latest_number, cond, reason=reason)
        assert entry is not None
        self._revision_condition(entry.state, entry.graph, latest_number, cond)
        if entry.state is RevisionState.PENDING:
            return self._wait(WAIT_COMPILING)
        if entry.state is RevisionState.ACTIVE and entry.graph is None:
            self.metrics.registry_miss.inc(reason=MISS_RUNTIME_ENTRY_MISSING)
        if entry.state is RevisionState.FAILED or entry.graph is None:
            self.metrics.revision_resolution.inc(result=RESULT_FAILED)
            message = entry.error or f"latest graph revision {latest_number} failed compilation"
            cond(CONDITION_GRAPH_ACCEPTED, STATUS_FALSE, REASON_INVALID_RESOURCE_GRAPH, message)
            self._report(rgd, Failure(REASON_INVALID_RESOURCE_GRAPH, message))
            return Result()
        cond(
            CONDITION_GRAPH_ACCEPTED,
            STATUS_TRUE,
            REASON_VALID,
            "resource graph and schema are valid",
        )
        self.metrics.revision_resolution.inc(result=RESULT_SERVE)
        return await self._serve(rgd, status, entry.graph, latest_number, cond)

    @staticmethod
    def _revision_condition(
        state: RevisionState, graph: Graph | None, number: int, cond: Any
    ) -> None:
        """GraphRevisionsResolved for the latest revision, from its registry state (P-05)."""
        if state is RevisionState.PENDING:
            cond(
                CONDITION_GRAPH_REVISIONS_RESOLVED,
                STATUS_UNKNOWN,
                REASON_WAITING_FOR_GRAPH_REVISION_COMPILATION,
                f"waiting for graph revision {number} to compile",
            )
        elif state is RevisionState.FAILED or graph is None:
            message = f"latest graph revision {number} failed compilation"
            cond(CONDITION_GRAPH_REVISIONS_RESOLVED, STATUS_FALSE, REASON_FAILED, message)
        else:
            cond(
                CONDITION_GRAPH_REVISIONS_RESOLVED,
                STATUS_TRUE,
                REASON_RESOLVED,
                f"revision {number} compiled and active",
            )

    async def _issue(
        self,
        rgd: dict[str, Any],
        status: dict[str, Any],
        wanted_hash: str,
        latest_number: int,
        cond: Any,
        *,
        reason: str,
    ) -> Result:
        """Validate the spec; on success create the next GraphRevision (P-06)."""
        name = str(_meta(rgd)["name"])
        started = time.monotonic()
        self.metrics.build_total.inc(name=name)
        try:
            from kro.graph.builder import build_graph_async  # the compiler: with the first RGD

            await build_graph_async(
                rgd, self.resolver, options=self.options.build, clusters=self.clusters
            )
        except GraphError as error:
            self.metrics.build_errors.inc(name=name)
            self.metrics.build_duration.observe(time.monotonic() - started, name=name)
            cond(CONDITION_GRAPH_ACCEPTED, STATUS_FALSE, REASON_INVALID_RESOURCE_GRAPH, str(error))
            status.pop("topologicalOrder", None)
            status.pop("resources", None)
            self._report(rgd, Failure(REASON_INVALID_RESOURCE_GRAPH, str(error)))
            # Retried with backoff, as upstream returns the error: a kind the graph needs may
            # appear later (a CRD installed after the RGD, or RGD chaining).
            return Result(requeue=True)
        self.metrics.build_duration.observe(time.monotonic() - started, name=name)
        number = max(int(status.get("lastIssuedRevision") or 0), latest_number) + 1
        revision = revision_manifest(rgd, number, wanted_hash)
        self.writes.check("graphrevision creation")
        await self.client.create(GRAPH_REVISIONS, revision)
        self.metrics.revision_issue.inc(reason=reason)
        status["lastIssuedRevision"] = number
        cond(
            CONDITION_GRAPH_ACCEPTED,
            STATUS_TRUE,
            REASON_VALID,
            "resource graph and schema are valid",
        )
        cond(
            CONDITION_GRAPH_REVISIONS_RESOLVED,
            STATUS_UNKNOWN,
            REASON_WAITING_FOR_GRAPH_REVISION_COMPILATION,
            f"graph revision {number} issued and awaiting compilation",
        )
        log.info("rgd.revision_issued", revision=number, hash=wanted_hash)
        return Result(requeue_after_s=self.options.progress_requeue_delay_s)

    # -- serving -----------------------------------------------------------------------------

    async def _serve(
        self, rgd: dict[str, Any], status: dict[str, Any], graph: Graph, number: int, cond: Any
    ) -> Result:
        name = str(_meta(rgd)["name"])
        # Pre-flight: PermissionsGranted; while something is missing, look again later.
        recheck_s = await report_permissions(self.permissions, graph, status, cond, self.hub)
        crd = self._desired_crd(rgd, graph)
        allow = (_meta(rgd).get("annotations") or {}).get(
            ANNOTATION_ALLOW_BREAKING_CHANGES
        ) == ALLOW_BREAKING_CHANGES_VALUE
        try:
            self.writes.check("crd apply")
            await ensure_crd(
                self.client,
                crd,
                rgd_name=name,
                allow_breaking=allow,
                conservative=self.options.conservative_crd_comparison,
            )
        except (CRDError, KubeError) as error:
            cond(CONDITION_KIND_READY, STATUS_FALSE, REASON_FAILED, str(error))
            fields: dict[str, Any] = {"crd": str(crd["metadata"].get("name") or "")}
            if getattr(error, "status", None):
                fields["code"] = getattr(error, "status", None)
            self._report(rgd, Failure(EVENT_CRD_INSTALL_FAILED, str(error), fields))
            return Result(requeue_after_s=self.options.progress_requeue_delay_s)
        cond(
            CONDITION_KIND_READY,
            STATUS_TRUE,
            REASON_READY,
            f"kind {graph.instance.kind} has been accepted and ready",
        )
        try:
            kind = await self._register(rgd, graph, number)
        except WatchForbidden as error:
            # Reported at the API server's first refusal (V-15), and retried at a steady pace
            # rather than with the failure backoff: granting the permission is what ends it,
            # and the RGD should go Active within one delay of that, however long it took.
            cond(CONDITION_CONTROLLER_READY, STATUS_FALSE, REASON_FAILED_TO_START, str(error))
            self._report(rgd, Failure(REASON_FAILED_TO_START, str(error)))
            return Result(requeue_after_s=self.options.progress_requeue_delay_s)
        except Exception as error:
            cond(CONDITION_CONTROLLER_READY, STATUS_FALSE, REASON_FAILED_TO_START, str(error))
            self._report(rgd, Failure(REASON_FAILED_TO_START, str(error)))
            raise
        cond(CONDITION_CONTROLLER_READY, STATUS_TRUE, REASON_RUNNING, "controller is running")
        if self.spokes is not None:  # M-20..M-22: the hub serves whatever the members do
            status["clusters"] = (
                await self.spokes.serve(rgd, crd, kind, number, allow_breaking=allow)
                if distributed(rgd)
                else []
            )
        self._report_permissions(rgd, status)
        status["topologicalOrder"] = list(graph.topological_order)
        status["resources"] = graph.resources_status()
        self.writes.check("graphrevision collection")
        await collect_revisions(
            self.client,
            name,
            current=number,
            keep=self.options.max_graph_revisions,
            metrics=self.metrics,
        )
        return Result(requeue_after_s=recheck_s)

    @staticmethod
    def _desired_crd(rgd: Mapping[str, Any], graph: Graph) -> dict[str, Any]:
        """The CRD the graph generates, labelled as kro's and this RGD's (P-09)."""
        crd = copy.deepcopy(dict(graph.instance.crd))
        labels = crd.setdefault("metadata", {}).setdefault("labels", {})
        labels.update(
            {
                LABEL_OWNED: OWNED_VALUE,
                LABEL_KRO_VERSION: KRO_VERSION,
                LABEL_RGD_ID: str(_meta(rgd).get("uid")),
                LABEL_RGD_NAME: str(_meta(rgd)["name"]),
            }
        )
        return crd

    def _report_permissions(self, rgd: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """Serving: missing permissions are the one failure left to report; else recovered."""
        name = str(_meta(rgd)["name"])
        for condition in conditions_of(status):
            if (
                condition.get("type") == CONDITION_PERMISSIONS_GRANTED
                and condition.get("status") == STATUS_FALSE
            ):
                message = str(condition.get("message") or "")
                self._report(rgd, Failure(REASON_MISSING_PERMISSIONS, message))
                return
        self.failures(name).clear(name)

    async def _register(self, rgd: Mapping[str, Any], graph: Graph, number: int) -> Kind:
        """Register (or re-register on a new revision) the instance controller (P-07, R-19)."""
        gvr = GVR(graph.instance.group, graph.instance.version, graph.instance.plural)
        crd_name = str(graph.instance.crd["metadata"]["name"])
        kind = Kind(
            gvr, graph.instance.kind, crd_name, str(_meta(rgd)["name"]), str(_meta(rgd)["uid"])
        )
        await self.kinds.serve(kind, number)
        return kind

    # -- deletion, finalizer, status ---------------------------------------------------------

    async def _delete(self, rgd: dict[str, Any]) -> Result:
        """Delete the CRD only when allowed and owned, hand the instances to a draining
        reconciler, drop the RGD's series and its finalizer (P-11; see the module)."""
        name = str(_meta(rgd)["name"])
        started = time.monotonic()
        crd_name: str | None = None
        if self.options.allow_crd_deletion:
            entry = self.registry.latest(name)
            if entry is not None and entry.graph is not None:
                crd_name = str(entry.graph.instance.crd["metadata"]["name"])
                self.writes.check("crd deletion")
                await delete_crd_if_owned(self.client, crd_name, rgd_name=name)
        await self.kinds.release(name)
        if self.spokes is not None:  # M-20: member CRDs only under --allow-crd-deletion
            await self.spokes.release(name, crd_name)
        self._forget(name)
        self.writes.check("rgd finalizer")
        await remove_finalizer(self.client, RGDS, rgd, FINALIZER, attempts=FINALIZER_ATTEMPTS)
        self.metrics.deletions.inc(name=name)
        self.metrics.deletion_duration.observe(time.monotonic() - started, name=name)
        log.info("rgd.deleted")
        return Result()

    async def _ensure_finalizer(self, rgd: dict[str, Any]) -> dict[str, Any]:
        """Add kro's finalizer; the resourceVersion makes a concurrent write a Conflict."""
        finalizers = list(_meta(rgd).get("finalizers") or [])
        if FINALIZER in finalizers:
            return rgd
        self.writes.check("rgd finalizer")
        patch = {
            "metadata": {
                "resourceVersion": _meta(rgd).get("resourceVersion"),
                "finalizers": [*finalizers, FINALIZER],
            }
        }
        return await self.client.patch(RGDS, str(_meta(rgd)["name"]), patch, patch_type="merge")

    async def _write_status(self, rgd: Mapping[str, Any], status: dict[str, Any]) -> None:
        """Placeholders for the dependents nobody set yet (T-07), root Ready + state (P-08),
        then write only when different."""
        generation = _meta(rgd).get("generation")
        initialise_missing(
            status,
            RGD_DEPENDENT_CONDITIONS,
            created=str(_meta(rgd).get("creationTimestamp") or now_rfc3339()),
            observed_generation=generation,
        )
        conditions = status.get("conditions") or []
        root = aggregate_ready(conditions, ready_dependents(status), generation=generation)
        set_condition(
            status,
            CONDITION_READY,
            str(root["status"]),
            now=now_rfc3339(),
            reason=str(root.get("reason", "")),
            message=str(root.get("message", "")),
            observed_generation=generation,
        )
        status["conditions"] = ordered_conditions(
            first_of_each_type(conditions_of(status)),
            dependents=RGD_DEPENDENT_CONDITIONS,
            awaiting_first=True,
        )
        active = all(
            is_condition_true(status, c)
            for c in (CONDITION_GRAPH_ACCEPTED, CONDITION_KIND_READY, CONDITION_CONTROLLER_READY)
        )
        status["state"] = RGD_STATE_ACTIVE if active else RGD_STATE_INACTIVE
        self.metrics.states.set(str(_meta(rgd)["name"]), status["state"])
        if not active:
            status.pop("topologicalOrder", None) if not is_condition_true(
                status, CONDITION_GRAPH_ACCEPTED
            ) else None
        if not self._status.changed(rgd, status):
            return
        self.writes.check("rgd status")
        try:
            await self._status.write(RGDS, rgd, status)
        except NotFound:
            return
        previous = str((rgd.get("status") or {}).get("state") or "")
        log.info("rgd.status_updated", state=status["state"], previous=previous)
        if previous and previous != status["state"]:
            self.metrics.state_transitions.inc(
                name=str(_meta(rgd)["name"]), **{"from": previous, "to": status["state"]}
            )
