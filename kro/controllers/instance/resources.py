"""kro.controllers.instance.resources: one pass over an instance's nodes (R-08..R-14).

Walk the graph in topological order; per node decide includeWhen, render the desired objects,
read the live ones (GET for resources and named externalRefs, LIST for collections and selector
externalRefs) and register the watches that will bring us back when they change. Then apply
every rendered object in one ApplySet batch, record the results, and prune what is no longer
desired — but only when every node resolved and nothing failed (R-13).

Failure granularity follows upstream (N-36): a resolve or observe failure of any node aborts the
pass before anything is applied; an apply failure is per resource.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from kro.api.names import (
    NODE_STATE_ERROR,
    NODE_STATE_IN_PROGRESS,
    NODE_STATE_SKIPPED,
    NODE_STATE_SYNCED,
    NODE_STATE_WAITING_FOR_READINESS,
)
from kro.api.objects import metadata as _meta
from kro.applyset import (
    Applier,
    ApplyResult,
    Contest,
    Desired,
    Member,
    Parent,
    check_duplicates,
    combined,
    list_members,
    prune,
    read_inventory,
)
from kro.controllers.instance.labels import child_labels, collection_selector, decorate
from kro.controllers.metrics import RuntimeMetrics
from kro.dynamic import LabelSelector, ObjectRef, ScalarWatch, SelectorWatch, WatchCoordinator
from kro.dynamic.watches import WatchRequest
from kro.graph.evaluate import EvaluationError, InstanceEvaluation, Pending, Readiness
from kro.graph.model import Graph, Node, NodeType
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR

log = structlog.get_logger(__name__)


class ChildDeleting(Exception):
    """A live child is terminating; the pass stops and waits for it to go (R-08)."""

    def __init__(self, node_id: str, namespace: str, name: str) -> None:
        super().__init__(
            f'resource "{namespace}/{name}" for node "{node_id}" is currently being deleted; '
            "waiting for deletion to complete before continuing reconciliation"
        )
        self.node_id = node_id


@dataclass(slots=True)
class PassOutcome:
    """What one pass found and did."""

    states: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    pending: bool = False
    mutated: bool = False
    apply_errors: bool = False
    retry: bool = False  # something failed in a way only a later pass can fix (prune conflict)
    contests: list[Contest] = field(default_factory=list)  # fields another manager rewrites
    retry_after_s: float | None = None  # a contested field waits out a backoff
    errors: dict[str, list[BaseException]] = field(default_factory=dict)  # node -> apply errors
    pruned: bool = False  # the prune deleted something
    changed: set[str] = field(default_factory=set)  # nodes whose objects this pass's apply changed
    stale: set[str] = field(default_factory=set)  # nodes rendered from a dependency it then changed

    def settles(self, graph: Graph) -> bool:
        """Whether the next pass, with nothing changed meanwhile, would do nothing: nothing
        pending, failed or contested, nothing pruned, and no node rendered from what one of
        its dependencies was before this pass's apply changed it."""
        return not (
            self.pending
            or self.apply_errors
            or self.retry
            or self.contests
            or self.pruned
            or self.stale
        )


_GVRS: dict[tuple[str, str, str], GVR] = {}
"""One GVR object per kind, shared by every pass: the watch requests a settled pass leaves
behind (one per child) hold it, and a new GVR per pass would be one more object per child
(~0.5 MiB at 5,000 children). Bounded by the kinds RGDs use."""


def node_gvr(node: Node) -> GVR:
    key = (node.gvk.group, node.gvk.version, node.resource)
    gvr = _GVRS.get(key)
    if gvr is None:
        gvr = _GVRS.setdefault(key, GVR(*key))
    return gvr


def _identity(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = _meta(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _versions(items: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    return {_identity(i): str(_meta(i).get("resourceVersion") or "") for i in items}


class InstancePass:
    """The resources phase of one reconcile of one instance."""

    def __init__(
        self,
        *,
        graph: Graph,
        instance: dict[str, Any],
        instance_gvr: GVR,
        client: Client,
        applier: Applier,
        watches: WatchCoordinator,
        parent: ObjectRef,
        evaluation: InstanceEvaluation,
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        self.graph = graph
        self.instance = instance
        self.instance_gvr = instance_gvr
        self.client = client
        self.applier = applier
        self.watches = watches
        self.parent = parent
        self.evaluation = evaluation
        self.metrics = metrics or RuntimeMetrics()
        self.outcome = PassOutcome()
        self._batch: list[Desired] = []
        self._items: dict[str, list[str]] = {}  # node id -> resource ids of its desired objects
        self.reads: dict[WatchRequest, dict[tuple[str, str], str]] = {}
        """Per watch request, the versions this pass read, or wrote last (kro.controllers.
        instance.settled)."""
        self._requests: dict[str, WatchRequest] = {}  # node id -> the request it was read by
        self._members: list[Member] | None = None
        """The ApplySet's members with their bodies, when this pass listed them first
        (`_list_members`); they answer the children's reads and the prune."""
        self._listed: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}

    async def run(self) -> PassOutcome:
        """Resolve and observe every node, apply what rendered, record; then, in waves, the
        nodes that waited for data the apply has just produced; finally prune.

        Upstream renders every node once per pass, so a node that reads another's data (a
        ConfigMap copying one the same pass creates) waits for the next pass: a second trip
        through the queue, an instance read, a status write and a read of the dependency. Here
        the nodes left pending are resolved again against the objects the apply returned, as
        long as an apply makes progress: an RGD whose data all flows within one pass converges
        in one. Everything else is as upstream: a node still pending ends the pass
        IN_PROGRESS and no prune runs, and a node is never applied twice in one pass.
        """
        await self._list_members()
        waiting = list(self.graph.topological_order)
        results: list[ApplyResult] = []
        applied: list[Desired] = []  # every wave's batch so far
        resolved: dict[str, int] = {}  # node id -> the wave it was resolved in
        while True:  # at least once: a graph without resources still applies its inventory
            wave = len(results)
            self.outcome.pending = False
            self._batch = []
            for node_id in waiting:  # what an earlier wave said of them no longer holds
                self.outcome.states.pop(node_id, None)
                self.outcome.reasons.pop(node_id, None)
                await self._resolve(self.graph.node(node_id))
                if self.outcome.states.get(node_id) != NODE_STATE_IN_PROGRESS:
                    resolved[node_id] = wave
            if applied:  # R-11 across waves, as it would be within one batch
                check_duplicates([*applied, *self._batch])
            applied.extend(self._batch)
            result = await self.applier.apply(self.instance, self.instance_gvr, self._batch)
            self.instance = result.parent_obj
            results.append(result)
            changed = self._record(result)
            self.outcome.stale.update(
                d
                for n in changed
                for d in self.graph.dependents_of(n)
                if resolved.get(d, wave + 1) <= wave
            )
            waiting = [n for n in waiting if n not in resolved]
            if not self._batch or not self.outcome.pending or result.has_errors or not waiting:
                break
        await self._prune(combined(results))
        return self.outcome

    # -- resolve + observe -----------------------------------------------------------------

    async def _list_members(self) -> None:
        """List the ApplySet's members, bodies included, before anything else, when this
        process does not know them (kro.applyset.ledger): after a restart, or once the ledger
        let go of the ApplySet.

        The prune of this pass would list them anyway; listing first lets the same answer
        serve every child's read as well. A restarted controller then confirms a converged
        instance with one read of the instance and one list per child kind (the no-op proof,
        kro.applyset.noop, needs the bodies, which the metadata caches do not hold), where it
        would otherwise read each child and list for the prune afterwards: 2 requests per
        instance of five ConfigMaps instead of 7, without anything written on the instance to
        remember a converged pass by. A new instance's ApplySet is known to be empty and is
        not listed."""
        parent = Parent.from_object(self.instance, self.instance_gvr)
        if self.applier.members.knows(parent.id):
            return
        inventory = read_inventory(self.instance, parent)
        if inventory is None or not inventory.group_kinds:
            return
        self._members = await list_members(self.client, parent, inventory, bodies=True)
        self._listed = {
            (m.ref.gvr.group, m.ref.gvr.resource, m.ref.namespace, m.ref.name): m.obj
            for m in self._members
            if m.obj is not None
        }

    def _set(self, node_id: str, state: str, reason: str = "") -> None:
        self.outcome.states[node_id] = state
        if reason:
            self.outcome.reasons[node_id] = reason

    def _check_ignored(self, node: Node) -> bool | Pending:
        """includeWhen, counted as upstream's IsIgnored (rows 8, 9)."""
        self.metrics.ignored_checks.inc()
        ignored = self.evaluation.check_ignored(node.id)
        if ignored is True:
            self.metrics.ignored.inc()
        return ignored

    def _desired(self, node: Node) -> list[dict[str, Any]] | Pending:
        """Render the node, counted and timed as upstream's node resolution (rows 3-5, 12)."""
        self.metrics.node_eval_total.inc()
        started = time.monotonic()
        try:
            desired = self.evaluation.desired(node.id)
        except EvaluationError:
            self.metrics.node_eval_errors.inc()
            raise
        finally:
            self.metrics.node_eval_duration.observe(time.monotonic() - started)
        if node.type is NodeType.COLLECTION and not isinstance(desired, Pending):
            self.metrics.collection_size.observe(len(desired))
        return desired

    def _readiness(self, node_id: str) -> Readiness:
        """readyWhen, counted as upstream's readiness checks (rows 10, 11)."""
        self.metrics.ready_checks.inc()
        readiness = self.evaluation.readiness(node_id)
        if not readiness.ready:
            self.metrics.not_ready.inc()
        return readiness

    async def _resolve(self, node: Node) -> None:
        ignored = self._check_ignored(node)
        if isinstance(ignored, Pending):
            self.outcome.pending = True
            self._set(node.id, NODE_STATE_IN_PROGRESS, ignored.reason)
            return
        if ignored:
            self._set(node.id, NODE_STATE_SKIPPED)
            return
        desired = self._desired(node)
        if isinstance(desired, Pending):
            self.outcome.pending = True
            self._set(node.id, NODE_STATE_IN_PROGRESS, desired.reason)
            return
        observed = await self._observe(node, desired)
        self.evaluation.observe(node.id, observed)
        if node.type.is_external:
            readiness = self._readiness(node.id)
            self._set(
                node.id,
                NODE_STATE_SYNCED if readiness.ready else NODE_STATE_WAITING_FOR_READINESS,
                readiness.reason,
            )
            return
        self._queue(node, desired, observed)

    async def _observe(self, node: Node, desired: Sequence[Mapping[str, Any]]) -> Any:
        gvr = node_gvr(node)
        if node.type is NodeType.COLLECTION:
            uid = str(_meta(self.instance).get("uid") or "")
            text = collection_selector(uid, node.id)
            request: WatchRequest = SelectorWatch(node.id, gvr, None, LabelSelector.parse(text))
            await self.watches.watch(self.parent, request)
            items, _ = await self.client.list_all(gvr, label_selector=text)
            self.reads[request] = _versions(items)
            self._requests[node.id] = request
            by_identity = {_identity(i): i for i in items}
            for item in items:
                self._check_deleting(node, item)
            return [by_identity[_identity(d)] for d in desired if _identity(d) in by_identity]
        if node.type is NodeType.EXTERNAL_COLLECTION:
            metadata = _meta(desired[0])
            selector = LabelSelector.from_dict(metadata.get("selector") or {})
            namespace = str(metadata.get("namespace") or "") or None
            request = SelectorWatch(node.id, gvr, namespace, selector)
            await self.watches.watch(self.parent, request)
            items, _ = await self.client.list_all(
                gvr, namespace=namespace, label_selector=str(selector) or None
            )
            self.reads[request] = _versions(items)
            return items
        namespace, name = _identity(desired[0])
        request = ScalarWatch(node.id, gvr, namespace, name)
        self._requests[node.id] = request
        await self.watches.watch(self.parent, request)
        listed = None if node.type.is_external else self._listed.get(
            (gvr.group, gvr.resource, namespace, name)
        )
        known, live = (True, listed) if listed is not None else self._from_cache(node, request)
        if not known:
            try:
                live = await self.client.get(gvr, name, namespace=namespace or None)
            except NotFound:
                live = None
        if live is None:
            self.reads[request] = {}
            return None
        self.reads[request] = {(namespace, name): str(_meta(live).get("resourceVersion") or "")}
        if not node.type.is_external:
            self._check_deleting(node, live)
        return live

    def _from_cache(
        self, node: Node, request: ScalarWatch
    ) -> tuple[bool, Mapping[str, Any] | None]:
        """Whether the kind's informer cache answers this read without a GET, and its answer.

        The caches hold metadata only (kro.dynamic), so:
        - "no such object" is believed unless the instance's last successful pass already read
          it (and may have created it: then the cache may lag behind our own create, and the
          API server is asked);
        - an object is used when nothing in the graph reads it beyond `metadata`
          (Graph.metadata_only) and, for an object kro applies, the applier vouches that it is
          exactly what our last apply left (same uid and resourceVersion, no contested field),
          so the apply decision needs none of the rest.
        Anything else is a GET, as before: a pass on a new instance of five ConfigMaps
        makes ~1 read instead of ~9.
        """
        known, cached = self.watches.cached_object(request)
        if not known:
            return False, None
        if cached is None:
            # The last successful pass read it, and may have created it: the cache may lag.
            return node.type.is_external or not self.watches.declared(self.parent, request), None
        if node.id not in self.graph.metadata_only:
            return False, None
        if node.type.is_external or self.applier.vouches_for(cached):
            return True, cached
        return False, None

    @staticmethod
    def _check_deleting(node: Node, live: Mapping[str, Any]) -> None:
        if _meta(live).get("deletionTimestamp"):
            namespace, name = _identity(live)
            raise ChildDeleting(node.id, namespace, name)

    def _queue(self, node: Node, desired: Sequence[Mapping[str, Any]], observed: Any) -> None:
        labels = child_labels(self.instance, self.graph.instance, node.id)
        gvr = node_gvr(node)
        ids: list[str] = []
        if node.type is NodeType.COLLECTION:
            live = {_identity(o): o for o in observed or []}
            for index, obj in enumerate(desired):
                resource_id = f"{node.id}-{index}"
                self._batch.append(
                    Desired(
                        resource_id,
                        decorate(obj, labels, node.apply_order, index=index, size=len(desired)),
                        gvr,
                        node.namespaced,
                        observed=live.get(_identity(obj)),
                    )
                )
                ids.append(resource_id)
        else:
            self._batch.append(
                Desired(
                    node.id,
                    decorate(desired[0], labels, node.apply_order),
                    gvr,
                    node.namespaced,
                    observed=observed,
                )
            )
            ids.append(node.id)
        self._items[node.id] = ids

    # -- results + prune -------------------------------------------------------------------

    def _record(self, result: ApplyResult) -> set[str]:
        """R-14: per node, an apply error is ERROR; otherwise observe the applied objects.
        Returns the nodes whose objects this apply changed."""
        self.outcome.contests.extend(result.contests)
        waits = [w for w in (self.outcome.retry_after_s, result.retry_after_s) if w is not None]
        self.outcome.retry_after_s = min(waits) if waits else None
        changed: set[str] = set()
        batch = {r.resource_id for r in result.resources}
        for node_id, resource_ids in self._items.items():
            if not batch.issuperset(resource_ids):
                continue  # applied by an earlier wave (or nothing to apply)
            applied = [result.get(r) for r in resource_ids]
            errors = [a for a in applied if a is not None and a.error is not None]
            if any(a is not None and a.changed for a in applied):
                self.outcome.mutated = True
                self.outcome.changed.add(node_id)
                changed.add(node_id)
            if errors:
                self.outcome.apply_errors = True
                self.outcome.errors[node_id] = [e.error for e in errors if e.error is not None]
                message = "; ".join(str(e.error) for e in errors)
                self._set(node_id, NODE_STATE_ERROR, message)
                continue
            objects = [a.obj for a in applied if a is not None and a.obj is not None]
            request = self._requests.get(node_id)
            if request is not None:  # what a read would find now: the server's answers
                self.reads[request] = {**self.reads.get(request, {}), **_versions(objects)}
            node = self.graph.node(node_id)
            self.evaluation.observe(node_id, objects if node.type.is_list else objects[0])
            readiness = self._readiness(node_id)
            self._set(
                node_id,
                NODE_STATE_SYNCED if readiness.ready else NODE_STATE_WAITING_FOR_READINESS,
                readiness.reason,
            )
        return changed

    async def _prune(self, result: ApplyResult) -> None:
        positions = {n: i for i, n in enumerate(self.graph.topological_order)}
        self.applier.members.epoch(self.watches.shard_version)
        pruned = await prune(
            self.client,
            result,
            positions=positions,
            all_resolved=not self.outcome.pending,
            ledger=self.applier.members,
            members=self._members,
        )
        if pruned.changed:
            self.outcome.mutated = True
            self.outcome.pruned = True
        if pruned.inventory is not None:
            written = await self.applier.ensure_inventory(
                result.parent, self.instance, pruned.inventory
            )
            if written is not None:
                self.instance = written
        if pruned.conflicts or pruned.failures:
            self.outcome.retry = True  # come back: upstream requeues on prune conflicts
