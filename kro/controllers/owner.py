"""kro.controllers.owner: the reconcile every owner kind takes, and what each kind fills in.

An owner is an object whose graph kro runs: an RGD instance, a `Graph`. Each reconcile of one:

1. load it (`load`; gone: forget it);
2. being deleted: one teardown step through its ownership (kro.engine.teardown: delete and
   release in reverse order, then the finalizer), reported by the kind (`tearing_down`);
3. otherwise the kind's `sync`: its program (kro.controllers.programs, or an RGD's active
   revision), its finalizer and marks, one engine pass (`run_pass`), its conditions and status
   (kro.runtime.StatusWriter: only what changed is written);
4. come back as the outcome says, with one backoff for every kind
   (kro.controllers.requeue: `wait`, `progressed`, `settled`).

The kinds differ in what they are (an instance follows its RGD's revisions and is labelled as
an ApplySet parent; a Graph compiles its own spec and applies as its ServiceAccount), never in
these steps.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
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
from kro.engine.ownership import Ownership, TeardownStep
from kro.engine.results import NodeReason, PassResult
from kro.engine.teardown import teardown_step
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
"""M-12, M-13, M-06: a target that names no usable cluster; each kind's condition takes it as
its reason, which a user can act on (register the cluster, grant its Secret, bring the member
back), not a generic failure."""


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
    noun: str
    """What the kind's log events start with (`instance.unchanged`, `graph.unchanged`)."""
    _settled: SettledPasses
    """The owners' last settled passes (kro.controllers.settled)."""

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

    def abandoned(self, obj: Mapping[str, Any], left: Sequence[str]) -> None:
        """M-16: the teardown gave up on unreachable members (`left`: one line each): logged,
        and a Warning Event on the owner lists what was left in each."""
        log.warning("owner.clusters_abandoned", left=list(left))
        if self.warnings is not None:
            message = "deletion gave up on unreachable clusters, their objects are left: "
            self.warnings.record(obj, "Warning", EVENT_CLUSTER_ABANDONED, message + "; ".join(left))

    # -- the shared steps --------------------------------------------------------------------

    @staticmethod
    def key(ref: ObjectRef) -> tuple[str, str]:
        return (ref.namespace, ref.name)

    async def load(self, ref: ObjectRef) -> dict[str, Any] | Result | None:
        """The owner; None when it is gone; none of it (a Result to end here) when its last
        settled pass still stands: nothing it read, itself included, changed since (the caches
        say so by resourceVersion), so that pass's outcome stands and costs no request."""
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
        if step.abandoned:
            self.abandoned(obj, step.abandoned)
        if step.done:
            await self.forget(ref)
            log.info("owner.deleted", resource=self.gvr.resource)
            return Result()
        return await self.tearing_down(obj, ref, step)

    async def run_pass(self, work: GraphPass, ref: ObjectRef) -> BaseException | None:
        """One engine pass; the watches it declared are kept when it went through, rolled
        back when it failed (the error is returned for the kind to report)."""
        try:
            await work.run()
        except PASS_ERRORS as error:
            await self.end_cycle(ref, commit=False)
            return error
        await self.end_cycle(ref, commit=True, result=work.result)
        return None

    async def end_cycle(
        self, ref: ObjectRef, *, commit: bool, result: PassResult | None = None
    ) -> None:
        """Keep the watches a pass declared (commit), or the previous ones, in every cluster;
        remember the clusters a finished pass (`result`) could not use."""
        await self.watches.done(ref, commit=commit)
        if self.member_watches is not None:
            await self.member_watches.done(ref, commit=commit)
        if self.cluster_waits is not None and result is not None:
            self.cluster_waits.waiting(ref, result.unreachable)

    def schema_waits(
        self,
        ref: ObjectRef,
        obj: Mapping[str, Any],
        graph: Graph,
        result: PassResult,
    ) -> float | None:
        """After a pass: the kinds its deferred nodes wait for (`SchemaPending`) are
        remembered so that their CRD wakes the owner (kro.controllers.kind_waits), each new
        one announced by one Warning Event; how soon to look again when a CRD event of the
        kind's group has just come (None: as the pass says)."""
        waiting: dict[tuple[str, str], str] = {}
        for found in result:
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
        if delay_s is None:
            return result
        if result.requeue_after_s is not None and result.requeue_after_s <= delay_s:
            return result
        return Result(requeue_after_s=delay_s)

    def wait(self, ref: ObjectRef, reason: str) -> Result:
        """The owner waits on the cluster, or failed in a way a later pass may fix."""
        return self.waits.wait(self.key(ref), reason)

    def settled(self, ref: ObjectRef) -> None:
        """A clean pass: the next wait starts again from the first delay."""
        self.waits.reset(self.key(ref))
