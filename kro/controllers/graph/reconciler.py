"""kro.controllers.graph.reconciler: the Graph controller (V-40..V-64, behind `GraphKind`).

The Graph kind's adapter of the owner reconcile (kro.controllers.owner); one reconcile:

1. Deleted: tear down from the status alone (an invalid spec still cleans up), as the identity
   that last applied (`status.appliedServiceAccount`), then drop the finalizer (V-64).
2. Refuse a Graph that would apply as kro itself (V-55): `Accepted=False`, not retried.
3. Compile, cached per spec; an error is `Accepted=False`/`InvalidGraph`.
4. Add the finalizer, run one engine pass as the Graph's ServiceAccount over its status
   inventory, write the conditions (`WatchesHealthy` is not a dependent of `Ready`) and
   `appliedServiceAccount`; come back as the verdict says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog

from kro.api.conditions import (
    Condition,
    aggregate_ready,
    now_rfc3339,
    ordered_conditions,
    set_condition,
    watches_healthy,
)
from kro.api.graph import (
    CONDITION_ACCEPTED,
    CONDITION_READY,
    CONDITION_RESOURCES_CONVERGED,
    CONDITION_WATCHES_HEALTHY,
    EVENT_NODE_ID_ENCODED,
    GRAPH_DEPENDENT_CONDITIONS,
    GRAPH_FINALIZER,
    GRAPH_KIND,
    REASON_COMPILED,
    REASON_DELETE_FAILED,
    REASON_INVALID_GRAPH,
    compiled_message,
    node_id_encoded_message,
    own_identity_refusal,
    service_account_username,
)
from kro.api.names import STATUS_FALSE, STATUS_TRUE
from kro.api.objects import metadata as _meta
from kro.applyset import Applier
from kro.controllers.graph.binding import GraphBinding
from kro.controllers.graph.conditions import Verdict, converged
from kro.controllers.graph.identity import ImpersonatedClients
from kro.controllers.graph.inventory import GRAPHS, StatusInventory
from kro.controllers.graph.places import GraphPlaces, readable_clusters
from kro.controllers.graph.watch_access import ANSWER_TTL_S, AccessAnswers, ApplierWatches
from kro.controllers.kind_waits import KindWaits, served_but_deferred
from kro.controllers.members import ClusterWaits, MemberWatches, RegistryMembers
from kro.controllers.owner import OwnerReconciler
from kro.controllers.programs import ProgramCache
from kro.controllers.requeue import RequeueBackoff
from kro.controllers.settled import SettledPasses
from kro.dynamic import ObjectRef, ScalarWatch
from kro.dynamic.watches import Versions, WatchCoordinator
from kro.engine import GraphPass
from kro.engine.ownership import TeardownStep
from kro.engine.places import Places, WithMembers
from kro.engine.watches import NoWatches
from kro.graph.errors import GraphError
from kro.graph.evaluate import InstanceEvaluation
from kro.graph.graph_kind import compile_graph_async
from kro.graph.hashing import spec_hash
from kro.graph.model import Graph
from kro.graph.options import BuildOptions
from kro.graph.resolver import ClusterSchemas, SchemaResolver
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.events import EventRecorder
from kro.runtime.finalizers import add_finalizer
from kro.runtime.reconcile import Result
from kro.runtime.status import StatusWriter

__all__ = ["GraphOptions", "GraphReconciler"]

log = structlog.get_logger(__name__)

BACKOFF_FIRST_S: Final = 1.0
BACKOFF_MAX_S: Final = 300.0
RETYPE_AFTER_S: Final = 1.0
"""How soon a Graph compiled with a deferred node whose kind is served now is compiled again
(typed: the kind's schema is published a moment after the kind is served)."""


@dataclass(frozen=True, slots=True)
class GraphOptions:
    """controller_username: kro's own ServiceAccount user, which no Graph may apply as."""

    controller_username: str
    apply_concurrency: int = 20
    max_collection_size: int = 1000
    cel_cost_limit: int = 0
    skip_unchanged: bool = True
    """`--skip-unchanged`: an object the pass read that provably holds what an apply would send
    is not applied again (only while the Graph applies as the identity that applied last)."""
    deferred_schema_resolution: bool = False
    """The DeferredSchemaResolution gate: a node whose literal kind is not served yet may
    compile deferred and wait for it (kro.graph.deferred)."""


class GraphReconciler(OwnerReconciler):
    def __init__(
        self,
        *,
        client: Client,
        resolver: SchemaResolver,
        watches: WatchCoordinator,
        applier: Applier,
        options: GraphOptions,
        events: EventRecorder | None = None,
        programs: ProgramCache | None = None,
        kind_waits: KindWaits | None = None,
        graph_versions: Callable[[ScalarWatch], Versions | None] | None = None,
        members: RegistryMembers | None = None,
        member_watches: MemberWatches | None = None,
        cluster_schemas: ClusterSchemas | None = None,
        cluster_waits: ClusterWaits | None = None,
    ) -> None:
        """`members`: the registry's member clusters (MultiCluster), which node targets may
        name as far as the Graph's ServiceAccount may read their Secrets (M-13). `programs`: the
        process's one cache of compiled programs. `graph_versions`: a Graph's resourceVersion as
        the cache whose events enqueue it shows it (None: no settled pass is skipped)."""
        self.kind_waits = kind_waits
        self.members = members
        self.member_watches = member_watches
        self.cluster_schemas = cluster_schemas
        self.cluster_waits = cluster_waits
        self.client = client
        self.gvr = GRAPHS
        self.finalizer = GRAPH_FINALIZER
        self.noun = "graph"
        self.warnings = events
        self.resolver = resolver
        self.watches = watches
        self.applier = applier  # its skip memory is the process's, shared with the Graphs
        self.options = options
        self.clients = ImpersonatedClients(client)
        self.programs = programs if programs is not None else ProgramCache()
        self.waits = RequeueBackoff(BACKOFF_FIRST_S, BACKOFF_MAX_S)
        self._answers = AccessAnswers()  # may a Graph's ServiceAccount watch a kind (V-54)
        memory = applier.memory if applier is not None else None  # None: in unit tests
        owners = graph_versions or (lambda _: None)
        self._settled = SettledPasses(watches, GRAPHS, memory, owners=owners)
        self.status = StatusWriter(client)
        """Every write of a Graph's status, its record's and its conditions', when it changed."""

    def program(self, ref: ObjectRef) -> Graph | None:
        return self.programs.current(GRAPH_KIND, ref.namespace, ref.name)

    async def sync(self, obj: dict[str, Any], ref: ObjectRef) -> Result:
        username = _service_account(obj)
        if username == self.options.controller_username:
            await self._refuse(obj, own_identity_refusal(username))
            return Result()
        try:
            graph = await self._compile(obj, username)
        except GraphError as error:
            await self._refuse(obj, str(error))
            return Result(requeue=True)
        self._warn_encoded_ids(obj, graph)
        if GRAPH_FINALIZER not in (_meta(obj).get("finalizers") or ()):
            obj = dict(await add_finalizer(self.client, GRAPHS, obj, GRAPH_FINALIZER))
        return await self._apply(obj, ref, graph, username)

    def _warn_encoded_ids(self, obj: Mapping[str, Any], graph: Graph) -> None:
        """V-61: a node whose objects carry a hashed `kro.run/node-id` is named in a Warning
        Event on every reconcile, so `kubectl describe graph` tells how to select them."""
        for message in filter(None, map(node_id_encoded_message, graph.nodes)):
            if self.warnings is not None:
                self.warnings.record(obj, "Warning", EVENT_NODE_ID_ENCODED, message)

    # -- compile ---------------------------------------------------------------------------

    async def _compile(self, obj: Mapping[str, Any], username: str = "") -> Graph:
        """The Graph's program, from the process's program cache (recompiled on a spec or a
        schema change, V-64: kro.controllers.programs); a node whose literal target is a
        member cluster its ServiceAccount (`username`) may reach is typed there (M-12, M-13)."""
        clusters = None
        if self.members is not None and self.cluster_schemas is not None:
            clusters = await readable_clusters(
                obj,
                self.cluster_schemas,
                self.resolver,
                self.clients.client_for(username),
                username=username,
                registry_namespace=self.members.namespace,
                answers=self._answers,
            )
        options = BuildOptions(
            max_collection_size=self.options.max_collection_size,
            cel_cost_limit=self.options.cel_cost_limit,
            deferred_schema_resolution=self.options.deferred_schema_resolution,
            multi_cluster=self.members is not None,
            cluster_secrets_namespace=self.members.namespace if self.members else "",
        )
        meta = _meta(obj)
        return await self.programs.program(
            GRAPH_KIND,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            spec_hash(obj.get("spec") or {}),
            lambda: compile_graph_async(obj, self.resolver, options=options, clusters=clusters),
        )

    # -- apply -----------------------------------------------------------------------------

    def _inventory(
        self,
        obj: Mapping[str, Any],
        username: str,
        graph: Graph | None = None,
        places: Places | None = None,
    ) -> StatusInventory:
        """How the Graph keeps what it applies (kro.engine.ownership), as `username` (the skip
        memory only while that applied last); without `graph` for a teardown (compiles nothing)."""
        applied_as = str((obj.get("status") or {}).get("appliedServiceAccount") or "")
        client = self.clients.client_for(username)
        if places is None and self.members is not None:  # a teardown reaches what it applied
            places = WithMembers(client, NoWatches(), self.members)
        return StatusInventory.of(
            obj,
            graph,
            kro_client=self.client,
            client=client,
            concurrency=self.options.apply_concurrency,
            skip_unchanged=self.options.skip_unchanged and username == applied_as,
            memory=self.applier.memory,
            status=self.status,
            places=places,
        )

    async def _apply(
        self, obj: dict[str, Any], ref: ObjectRef, graph: Graph, username: str
    ) -> Result:
        client = self.clients.client_for(username)
        watches = ApplierWatches(self.watches, client, username, self._answers)
        places = (
            GraphPlaces(
                client,
                watches,
                self.members,
                username=username,
                answers=self._answers,
                member_watches=self.member_watches.for_cluster if self.member_watches else None,
            )
            if self.members is not None
            else None
        )
        inventory = self._inventory(obj, username, graph, places)
        work = GraphPass(
            graph=graph,
            owner_obj=obj,
            binding=GraphBinding(GRAPHS, ref, graph),
            client=client,
            ownership=inventory,
            watches=watches,
            evaluation=InstanceEvaluation(
                graph, obj, max_collection_size=self.options.max_collection_size
            ),
            places=places,
        )
        error = await self.run_pass(work, ref)
        failure = "" if error is None else str(error)
        health = self.watches.health(ref)
        nodes = [work.result.nodes[n] for n in graph.topological_order if n in work.result.nodes]
        verdict = converged(
            nodes, inventory.prune_errors, inventory.release_errors, failure=failure
        )
        applied_as = username if inventory.reached_cluster and not failure else ""
        final = await self._report(
            work.owner_obj,
            accepted=(STATUS_TRUE, REASON_COMPILED, compiled_message(len(graph.nodes))),
            verdict=verdict,
            inventory=inventory,
            applied_as=applied_as,
            watches=watches_healthy(health.blocked, health.pending),
        )
        retry = self.schema_waits(ref, work)
        if any(n.deferred for n in graph.nodes.values()) and await served_but_deferred(
            self.client.mapper, graph
        ):  # compiled before its kind was published: typed on the next reconcile
            self.programs.forget(GRAPH_KIND, ref.namespace, ref.name)
            retry = min(retry or RETYPE_AFTER_S, RETYPE_AFTER_S)
        # Nothing pending, failed, pruned, waited for or unwatched: until something it read
        # changes, the next pass would do nothing (kro.controllers.settled).
        settles = verdict.ok and not failure and work.result.settles() and health.synced
        if settles and retry is None and not watches.skipped:
            version = str(_meta(final).get("resourceVersion") or "")
            self._settled.record(self.key(ref), graph, version, work.reads)
        return self.sooner(self._next(ref, verdict, watches.skipped), retry)

    def _next(self, ref: ObjectRef, verdict: Verdict, unwatched: bool = False) -> Result:
        """V-60: waiting backs off per Graph, 1 s doubling to 5 min; failures are retried by
        the rate limiter; a converged Graph waits for events, or, when a watch was skipped
        (V-54: no event would come), comes back in a minute to ask again."""
        if verdict.waiting:
            return self.wait(ref, verdict.reason)
        self.settled(ref)
        if verdict.ok and unwatched:
            return Result(requeue_after_s=ANSWER_TTL_S)
        return Result(requeue=not verdict.ok)

    # -- teardown --------------------------------------------------------------------------

    def ownership(self, obj: dict[str, Any]) -> StatusInventory:
        """From the status alone (the spec is not compiled), as the identity that applied
        last."""
        applied_as = str((obj.get("status") or {}).get("appliedServiceAccount") or "")
        return self._inventory(obj, applied_as or _service_account(obj))

    async def tearing_down(self, obj: dict[str, Any], ref: ObjectRef, step: TeardownStep) -> Result:
        """A Graph deletes everything in one step: what is left failed (V-64)."""
        await self._report(obj, verdict=Verdict(False, REASON_DELETE_FAILED, step.blocked))
        return Result(requeue=True)

    async def forget(self, ref: ObjectRef) -> None:
        await super().forget(ref)
        self.programs.forget(GRAPH_KIND, ref.namespace, ref.name)

    # -- status ----------------------------------------------------------------------------

    async def _refuse(self, obj: Mapping[str, Any], message: str) -> None:
        await self._report(obj, accepted=(STATUS_FALSE, REASON_INVALID_GRAPH, message))

    async def _report(
        self,
        obj: Mapping[str, Any],
        *,
        accepted: tuple[str, str, str] | None = None,
        verdict: Verdict | None = None,
        inventory: StatusInventory | None = None,
        applied_as: str = "",
        watches: Condition | None = None,
    ) -> Mapping[str, Any]:
        """Write what this reconcile found to the Graph's status (kro's own identity); the
        Graph as the server now holds it (as given when nothing needed writing)."""
        previous = (obj.get("status") or {}).get("conditions") or []
        status: dict[str, Any] = {**(obj.get("status") or {}), "conditions": list(previous)}
        generation = _meta(obj).get("generation")
        now = now_rfc3339()

        def put(kind: str, value: str, reason: str, message: str) -> None:
            set_condition(
                status,
                kind,
                value,
                now=now,
                reason=reason,
                message=message,
                observed_generation=generation if isinstance(generation, int) else None,
            )

        if accepted is not None:
            put(CONDITION_ACCEPTED, *accepted)
        if verdict is not None:
            ok = STATUS_TRUE if verdict.ok else STATUS_FALSE
            put(CONDITION_RESOURCES_CONVERGED, ok, verdict.reason, verdict.message)
        if watches is not None:  # reported, not a dependent of Ready (V-59)
            put(CONDITION_WATCHES_HEALTHY, *_fields(watches))
        put(
            CONDITION_READY,
            *_fields(aggregate_ready(status["conditions"], GRAPH_DEPENDENT_CONDITIONS)),
        )
        status["conditions"] = ordered_conditions(
            status["conditions"],
            dependents=(*GRAPH_DEPENDENT_CONDITIONS, CONDITION_WATCHES_HEALTHY),
        )
        if inventory is not None:
            status["managedResources"] = [e.as_status() for e in inventory.entries]
            status["contributions"] = [c.as_status() for c in inventory.contributions]
        if applied_as:
            status["appliedServiceAccount"] = applied_as
        try:
            written = await self.status.write(GRAPHS, obj, status)
        except NotFound:
            return obj
        return obj if written is None else written


def _service_account(graph: Mapping[str, Any]) -> str:
    """The user the Graph's spec names to apply as (V-53)."""
    name = str((graph.get("spec") or {}).get("serviceAccountName") or "")
    return service_account_username(str(_meta(graph).get("namespace") or ""), name)


def _fields(condition: Condition) -> tuple[str, str, str]:
    """A computed condition's status, reason and message, to set as the Graph's own."""
    status = str(condition.get("status") or STATUS_FALSE)
    return status, str(condition.get("reason") or ""), str(condition.get("message") or "")
