"""kro.controllers.graphrevision: compile GraphRevisions into the registry (reference §1.N).

A GraphRevision is an immutable snapshot of an RGD spec. This controller compiles each one with
the same builder the RGD controller validated it with and records the result in the in-memory
registry (Pending -> Active | Failed). After a restart the informer lists every revision again
and each is recompiled ("warm-up"), so the registry is rebuilt from the cluster (N-01, N-02).
On deletion the registry entry is evicted before the finalizer goes (N-03).

With `--shards=auto` every replica runs this controller but only the leader writes
(kro.controllers.leadership): a follower adds no finalizer and writes no status; it compiles a
revision once the leader's `GraphVerified` condition gives the verdict and records that verdict
(Active with its own compiled graph, or Failed with the leader's message), so that replicas never
disagree about which revision serves.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from kro.api.conditions import (
    conditions_of,
    get_condition,
    now_rfc3339,
    ordered_conditions,
    set_condition,
)
from kro.api.names import (
    CONDITION_GRAPH_VERIFIED,
    CONDITION_READY,
    FINALIZER,
    GRAPH_REVISION_PLURAL,
    INTERNAL_DOMAIN,
    LABEL_GRAPH_REVISION_HASH,
    REASON_INVALID_GRAPH,
    REASON_READY,
    REASON_VERIFIED,
    RGD_KIND,
    STATUS_FALSE,
    STATUS_TRUE,
    V1ALPHA1,
)
from kro.controllers.kind_waits import served_but_deferred
from kro.controllers.leadership import WriteGate
from kro.controllers.metrics import COMPILE_FAILED, COMPILE_SUCCESS, GraphRevisionMetrics
from kro.controllers.programs import ProgramCache
from kro.controllers.registry import RevisionRegistry, RevisionState
from kro.engine.ownership import FINALIZER_ATTEMPTS
from kro.graph.errors import GraphError
from kro.graph.model import Graph
from kro.graph.options import BuildOptions
from kro.graph.resolver import ClusterSchemas, SchemaResolver
from kro.runtime.client import Client
from kro.runtime.errors import KubeError, NotFound
from kro.runtime.finalizers import remove_finalizer
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result
from kro.runtime.status import StatusWriter

log = structlog.get_logger(__name__)

GRAPH_REVISIONS = GVR(INTERNAL_DOMAIN, V1ALPHA1, GRAPH_REVISION_PLURAL)


class GraphRevisionReconciler:
    """Compiles one GraphRevision per reconcile; tells the RGD controller when done."""

    def __init__(
        self,
        *,
        client: Client,
        registry: RevisionRegistry,
        resolver: SchemaResolver,
        options: BuildOptions,
        notify_rgd: Callable[[str], None],
        metrics: GraphRevisionMetrics | None = None,
        writes: WriteGate | None = None,
        programs: ProgramCache | None = None,
        clusters: ClusterSchemas | None = None,
    ) -> None:
        """`clusters`: member clusters' schemas (MultiCluster: M-12).
        `writes`: whether this replica may write GraphRevisions (default: always).
        `programs`: the process's one cache of compiled programs (default: its own)."""
        self.programs = programs if programs is not None else ProgramCache()
        self.client = client
        self._status = StatusWriter(client, method="update")  # preconditioned on the read
        self.registry = registry
        self.resolver = resolver
        self.clusters = clusters
        self.options = options
        self.notify_rgd = notify_rgd
        self.metrics = metrics or GraphRevisionMetrics()
        self.writes = writes or WriteGate()

    async def reconcile(self, request: Request) -> Result:
        try:
            revision = await self.client.get(GRAPH_REVISIONS, request.name)
        except NotFound:
            return Result()
        spec = revision.get("spec") or {}
        rgd_name = str((spec.get("snapshot") or {}).get("name") or "")
        number = int(spec.get("revision") or 0)
        spec_hash = str(
            ((revision.get("metadata") or {}).get("labels") or {}).get(
                LABEL_GRAPH_REVISION_HASH, ""
            )
        )
        with structlog.contextvars.bound_contextvars(rgd=rgd_name, revision=number):
            if (revision.get("metadata") or {}).get("deletionTimestamp"):
                if self.registry.get(rgd_name, number) is not None:
                    self.metrics.finalizer_evictions.inc()
                self.registry.evict(rgd_name, number)
                if self.writes.allowed():  # a follower leaves the finalizer to the leader
                    await remove_finalizer(
                        self.client,
                        GRAPH_REVISIONS,
                        revision,
                        FINALIZER,
                        attempts=FINALIZER_ATTEMPTS,
                    )
                self.notify_rgd(rgd_name)
                return Result()
            if not self.writes.allowed():
                return await self._follow(revision, rgd_name, number, spec_hash)
            revision = await self._ensure_finalizer(revision)
            known = self.registry.get(rgd_name, number)
            if known is not None and known.state is not RevisionState.PENDING:
                if _defers(known.graph):
                    return await self._recompile(revision, rgd_name, number, spec_hash, known.graph)
                return Result()
            self.registry.put_pending(rgd_name, number, spec_hash)
            await self._compile(revision, rgd_name, number, spec_hash)
            self.notify_rgd(rgd_name)
            return Result()

    async def _follow(
        self, revision: dict[str, Any], rgd_name: str, number: int, spec_hash: str
    ) -> Result:
        """Not the leader: take the leader's verdict, compile for our own registry, write
        nothing. Without a verdict yet, wait for the leader's status update (KroApp queues
        the revision again when it comes, and when this replica starts leading)."""
        known = self.registry.get(rgd_name, number)
        if known is not None and known.state is not RevisionState.PENDING:
            if _defers(known.graph):
                await self._follow_recompile(revision, rgd_name, number, spec_hash, known.graph)
            return Result()
        verdict: Mapping[str, Any] = (
            get_condition(revision.get("status"), CONDITION_GRAPH_VERIFIED) or {}
        )
        if verdict.get("status") == STATUS_FALSE:
            message = str(verdict.get("message") or "")
            self.registry.fail(rgd_name, number, spec_hash, message)
            log.info("graphrevision.failed_by_leader", error=message)
            self.notify_rgd(rgd_name)
            return Result()
        if verdict.get("status") != STATUS_TRUE:
            return Result()
        self.registry.put_pending(rgd_name, number, spec_hash)
        started = time.monotonic()
        try:
            graph = await self._build(revision, rgd_name, spec_hash)
        except GraphError as error:
            self._count(COMPILE_FAILED, started)
            # The leader compiled it: what we lack is probably a schema we have not seen yet
            # (a CRD created a moment ago). Stay Pending and retry with back-off.
            raise FollowerCompileError(
                f"graph revision {revision['metadata']['name']} is verified by the leader but "
                f"does not compile here (yet): {error}"
            ) from error
        self._count(COMPILE_SUCCESS, started)
        self.registry.activate(rgd_name, number, spec_hash, graph)
        log.info("graphrevision.active", nodes=len(graph.nodes), follower=True)
        self.notify_rgd(rgd_name)
        return Result()

    async def _recompile(
        self,
        revision: dict[str, Any],
        rgd_name: str,
        number: int,
        spec_hash: str,
        graph: Graph | None,
    ) -> Result:
        """An Active revision that deferred a kind (DeferredSchemaResolution), queued because a
        CRD of its group changed: compiled again (its program was dropped from the cache, so
        this compiles, typed where the kind is served now) and activated, or failed when the
        typed check fails, as any compile. Instances take the new graph on their next pass.
        A kind served whose schema was not published yet: compiled again after a backoff."""
        await self._compile(revision, rgd_name, number, spec_hash)
        entry = self.registry.get(rgd_name, number)
        if entry is not None and entry.graph is not graph:
            log.info("graphrevision.recompiled", deferred=_defers(entry.graph))
            self.notify_rgd(rgd_name)
        compiled = entry.graph if entry is not None else None
        if (
            compiled is not None
            and _defers(compiled)
            and await served_but_deferred(self.client.mapper, compiled)
        ):
            self.programs.forget(RGD_KIND, "", rgd_name)
            return Result(requeue=True)
        return Result()

    async def _follow_recompile(
        self,
        revision: dict[str, Any],
        rgd_name: str,
        number: int,
        spec_hash: str,
        graph: Graph | None,
    ) -> None:
        """The follower's `_recompile`: a compile that fails here keeps the revision as it
        was (the leader's verdict decides; it writes any failure to the revision's status)."""
        try:
            compiled = await self._build(revision, rgd_name, spec_hash)
        except GraphError as error:
            log.info("graphrevision.recompile_failed", error=str(error), follower=True)
            return
        if compiled is not graph:
            self.registry.activate(rgd_name, number, spec_hash, compiled)
            log.info("graphrevision.recompiled", deferred=_defers(compiled), follower=True)
            self.notify_rgd(rgd_name)

    async def _build(self, revision: dict[str, Any], rgd_name: str, spec_hash: str) -> Graph:
        """The revision's program, from the process's program cache (kro.controllers.programs):
        a revision compiled before, by this replica as a follower say, is not compiled again."""
        snapshot = (revision.get("spec") or {}).get("snapshot") or {}
        rgd = {"metadata": {"name": rgd_name}, "spec": snapshot.get("spec") or {}}
        from kro.graph.builder import build_graph_async  # the compiler: with the first RGD

        return await self.programs.program(
            RGD_KIND,
            "",
            rgd_name,
            spec_hash,
            lambda: build_graph_async(
                rgd, self.resolver, options=self.options, clusters=self.clusters
            ),
        )

    async def _ensure_finalizer(self, revision: dict[str, Any]) -> dict[str, Any]:
        finalizers = list((revision.get("metadata") or {}).get("finalizers") or [])
        if FINALIZER in finalizers:
            return revision
        self.writes.check("graphrevision finalizer")
        patch = {
            "metadata": {
                "finalizers": [*finalizers, FINALIZER],
                "resourceVersion": revision["metadata"]["resourceVersion"],
            }
        }
        return await self.client.patch(GRAPH_REVISIONS, revision["metadata"]["name"], patch)

    async def _compile(
        self, revision: dict[str, Any], rgd_name: str, number: int, spec_hash: str
    ) -> None:
        status: dict[str, Any] = copy.deepcopy(revision.get("status") or {})
        now = now_rfc3339()
        generation = (revision.get("metadata") or {}).get("generation")
        started = time.monotonic()
        try:
            graph = await self._build(revision, rgd_name, spec_hash)
        except GraphError as error:
            self._count(COMPILE_FAILED, started)
            message = f'failed to compile graph revision "{revision["metadata"]["name"]}": {error}'
            self.registry.fail(rgd_name, number, spec_hash, message)
            set_condition(
                status,
                CONDITION_GRAPH_VERIFIED,
                STATUS_FALSE,
                now=now,
                observed_generation=generation,
                reason=REASON_INVALID_GRAPH,
                message=message,
            )
            set_condition(
                status,
                CONDITION_READY,
                STATUS_FALSE,
                now=now,
                observed_generation=generation,
                reason=REASON_INVALID_GRAPH,
                message=message,
            )
            await self._write_status(revision, status)
            log.warning("graphrevision.compile_failed", error=str(error))
            return
        self._count(COMPILE_SUCCESS, started)
        set_condition(
            status,
            CONDITION_GRAPH_VERIFIED,
            STATUS_TRUE,
            now=now,
            reason=REASON_VERIFIED,
            message="graph revision compiled and verified",
        )
        set_condition(
            status,
            CONDITION_READY,
            STATUS_TRUE,
            now=now,
            reason=REASON_READY,
            observed_generation=generation,
        )
        status["topologicalOrder"] = list(graph.topological_order)
        status["resources"] = graph.resources_status()
        try:
            await self._write_status(revision, status)
        except KubeError:
            # Activate only what the cluster shows as verified (N-02): retried with backoff.
            self.metrics.activation_deferred.inc()
            raise
        self.registry.activate(rgd_name, number, spec_hash, graph)
        log.info("graphrevision.active", nodes=len(graph.nodes))

    def _count(self, result: str, started: float) -> None:
        self.metrics.compile_total.inc(result=result)
        self.metrics.compile_duration.observe(time.monotonic() - started, result=result)

    async def _write_status(self, revision: dict[str, Any], status: dict[str, Any]) -> None:
        status["conditions"] = ordered_conditions(conditions_of(status))
        if not self._status.changed(revision, status):
            return
        self.writes.check("graphrevision status")
        try:
            await self._status.write(GRAPH_REVISIONS, revision, status)
        except KubeError:
            self.metrics.status_update_errors.inc()
            raise


def _defers(graph: Graph | None) -> bool:
    """The graph has a node whose kind was not served when it compiled (kro.graph.deferred)."""
    return graph is not None and any(n.deferred for n in graph.nodes.values())


class FollowerCompileError(Exception):
    """A revision the leader verified does not compile on this replica (yet); retried."""
