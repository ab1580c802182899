"""kro.controllers.owner: the reconcile every owner kind takes, and what each kind fills in.

An owner is an object whose graph kro runs: an RGD instance, a `Graph`. Both take the same
steps (load; being deleted, one teardown step through its ownership, kro.engine.ownership; else
the kind's `sync`: program, marks, one engine pass, status; then a requeue with one backoff,
kro.controllers.requeue) and differ only in what they are: an instance follows its RGD's
revisions and is an ApplySet parent; a Graph compiles its own spec and applies as its
ServiceAccount.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import structlog

from kro.api.names import EVENT_CLUSTER_ABANDONED, EVENT_WAITING_FOR_CRD
from kro.api.objects import metadata as _meta
from kro.applyset import ApplySetError
from kro.controllers.kind_waits import KindWaits
from kro.controllers.members import ClusterWaits, MemberWatches
from kro.controllers.requeue import RequeueBackoff
from kro.controllers.settled import SettledPasses
from kro.dynamic import ObjectRef
from kro.dynamic.watches import WatchCoordinator
from kro.engine.graph_pass import GraphPass
from kro.engine.ownership import Ownership, TeardownStep, teardown_step
from kro.engine.results import NodeReason
from kro.graph.evaluate import EvaluationError
from kro.graph.model import Graph
from kro.runtime.client import Client
from kro.runtime.errors import KubeError, NotFound
from kro.runtime.events import EventRecorder
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Request, Result

__all__ = ["OwnerReconciler"]

log = structlog.get_logger(__name__)

PASS_ERRORS = (EvaluationError, ApplySetError, KubeError)
"""What ends a pass early: an expression, the owner's record, or the API server."""
CLUSTER_REASONS = (
    NodeReason.CLUSTER_FORBIDDEN,
    NodeReason.CLUSTER_NOT_FOUND,
    NodeReason.CLUSTER_UNREACHABLE,
)
"""M-12, M-13, M-06: a target naming no usable cluster is a condition's reason a user can act
on (register the cluster, grant its Secret, bring the member back), not a generic failure."""


class OwnerReconciler(ABC):
    """The steps of an owner's reconcile; the kind's adapter fills in the abstract ones."""

    gvr: GVR
    finalizer: str
    client: Client
    watches: WatchCoordinator
    waits: RequeueBackoff
    kind_waits: KindWaits | None = None
    """Owners whose deferred nodes wait for a kind (DeferredSchemaResolution): the kind's CRD
    wakes them. None: nothing wakes them but their backoff."""
    member_watches: MemberWatches | None = None
    """The kind's watches in member clusters (MultiCluster): ended and forgotten with the
    owner's own watches."""
    cluster_waits: ClusterWaits | None = None
    """Owners waiting for a target's cluster (MultiCluster): woken when it is Ready."""
    warnings: EventRecorder | None = None
    """Where the kind's Warning Events about an owner go (None: logged only)."""
    noun: str  # what the kind's log events start with: `instance.unchanged`
    _settled: SettledPasses

    async def reconcile(self, request: Request) -> Result:
        ref = ObjectRef(self.gvr, request.namespace, request.name)
        loaded = await self.load(ref)
        if isinstance(loaded, Result):  # settled: nothing to do
            return loaded
        if loaded is None:
            await self.forget(ref)
            return Result()
        if _meta(loaded).get("deletionTimestamp"):
            return await self.teardown(loaded, ref)
        return await self.sync(loaded, ref)

    # -- what a kind fills in ----------------------------------------------------------------

    @abstractmethod
    def program(self, ref: ObjectRef) -> Graph | None:
        """The owner's program as it now stands, if it has one (cheap: no compile)."""

    async def read(self, ref: ObjectRef) -> dict[str, Any]:
        """The owner as it now stands (raises NotFound when it is gone)."""
        return await self.client.get(self.gvr, ref.name, namespace=ref.namespace or None)

    @abstractmethod
    async def sync(self, obj: dict[str, Any], ref: ObjectRef) -> Result:
        """Program, marks, pass, status, requeue: an owner that is not being deleted."""

    @abstractmethod
    def ownership(self, obj: dict[str, Any]) -> Ownership:
        """What keeps the owner's objects; for its teardown, from the owner alone (its
        program may be gone or broken)."""

    @abstractmethod
    async def tearing_down(self, obj: dict[str, Any], ref: ObjectRef, step: TeardownStep) -> Result:
        """Report a teardown step that did not finish (still deleting, or blocked)."""

    async def forget(self, ref: ObjectRef) -> None:
        """The owner is gone (or no longer kro's): its watches and its backoff go with it."""
        self.waits.reset(self.key(ref))
        self._settled.forget(self.key(ref))
        if self.kind_waits is not None:
            self.kind_waits.forget(ref)
        await self.watches.forget(ref)
        if self.member_watches is not None:
            await self.member_watches.forget(ref)
        if self.cluster_waits is not None:
            self.cluster_waits.forget(ref)

    # -- the shared steps --------------------------------------------------------------------

    @staticmethod
    def key(ref: ObjectRef) -> tuple[str, str]:
        return (ref.namespace, ref.name)

    async def load(self, ref: ObjectRef) -> dict[str, Any] | Result | None:
        """The owner (None: gone); none of it (a Result to end here) while its last settled
        pass stands: nothing it read, itself included, changed since (kro.controllers.settled)."""
        key = self.key(ref)
        if self._settled.unchanged(key, self.program(ref)):
            log.debug(f"{self.noun}.unchanged", namespace=ref.namespace, name=ref.name)
            return Result()
        self._settled.forget(key)
        try:
            return await self.read(ref)
        except NotFound:
            return None

    async def teardown(self, obj: dict[str, Any], ref: ObjectRef) -> Result:
        """One teardown step; once nothing is left, the finalizer goes and the owner is
        forgotten."""
        if self.finalizer not in (_meta(obj).get("finalizers") or ()):
            await self.forget(ref)
            return Result()
        step = await teardown_step(self.ownership(obj), self.client, obj, self.gvr, self.finalizer)
        if step.abandoned:  # M-16: logged, and a Warning Event lists what was left in each
            log.warning("owner.clusters_abandoned", left=list(step.abandoned))
            if self.warnings is not None:
                message = "deletion gave up on unreachable clusters, their objects are left: "
                left = message + "; ".join(step.abandoned)
                self.warnings.record(obj, "Warning", EVENT_CLUSTER_ABANDONED, left)
        if step.done:
            await self.forget(ref)
            log.info("owner.deleted", resource=self.gvr.resource)
            return Result()
        return await self.tearing_down(obj, ref, step)

    async def run_pass(self, work: GraphPass, ref: ObjectRef) -> BaseException | None:
        """One engine pass; the watches it declared, in every cluster, are kept when it went
        through, rolled back when it failed (the error is returned for the kind to report);
        the clusters a finished pass could not use are remembered."""
        error: BaseException | None = None
        try:
            await work.run()
        except PASS_ERRORS as failed:
            error = failed
        await self.watches.done(ref, commit=error is None)
        if self.member_watches is not None:
            await self.member_watches.done(ref, commit=error is None)
        if self.cluster_waits is not None and error is None:
            self.cluster_waits.waiting(ref, work.result.unreachable)
        return error

    def schema_waits(self, ref: ObjectRef, work: GraphPass) -> float | None:
        """After a pass: the kinds its deferred nodes wait for (`SchemaPending`) are
        remembered so that their CRD wakes the owner (kro.controllers.kind_waits), each new
        one announced by one Warning Event; how soon to look again when a CRD event of the
        kind's group has just come (None: as the pass says)."""
        graph, obj = work.graph, work.owner_obj
        waiting: dict[tuple[str, str], str] = {}
        for found in work.result:
            if found.reason is NodeReason.SCHEMA_PENDING:
                gvk = graph.node(found.id).gvk
                waiting.setdefault((gvk.group, gvk.kind), found.id)
        if self.kind_waits is None:
            return None
        for kind in self.kind_waits.waiting(ref, waiting):
            node = graph.node(waiting[kind])
            log.info("owner.waiting_for_crd", node=node.id, kind=kind[1], group=kind[0])
            if self.warnings is not None:
                message = (
                    f'node "{node.id}" waits for kind {node.gvk.kind} of '
                    f"{node.gvk.api_version}: not served yet, waiting for its CRD"
                )
                self.warnings.record(obj, "Warning", EVENT_WAITING_FOR_CRD, message)
        return self.kind_waits.retry_after(waiting) if waiting else None

    @staticmethod
    def sooner(result: Result, delay_s: float | None) -> Result:
        """`result`, or a requeue after `delay_s` when that comes first."""
        after = result.requeue_after_s
        if delay_s is None or (after is not None and after <= delay_s):
            return result
        return Result(requeue_after_s=delay_s)

    def wait(self, ref: ObjectRef, reason: str) -> Result:
        """The owner waits on the cluster, or failed in a way a later pass may fix."""
        return self.waits.wait(self.key(ref), reason)

    def settled(self, ref: ObjectRef) -> None:
        """A clean pass: the next wait starts again from the first delay."""
        self.waits.reset(self.key(ref))
