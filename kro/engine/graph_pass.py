"""kro.engine.graph_pass: one pass of a compiled graph over one owning object.

In topological order, per node: includeWhen (a skip is contagious) → render → read the live
objects (GET by name, LIST by selector), declaring each read so that a change brings the owner
back → an external reference's readiness. What rendered is applied in one batch through the
owner's ownership (kro.engine.ownership, which the pass never tells apart), the answers are
observed and readiness decided; finally the ownership prunes as far as the pass allows.

Upstream renders every node once per pass, so a node reading data the same pass creates waits
for the next pass (another queue trip, owner read, status write). Here the nodes left pending
are resolved again against what the apply returned, in waves, while an apply makes progress; a
node is never applied twice in one pass, and a node still pending means no prune, as upstream.

Every node ends with one `NodeResult`. A diagnosing pass (`kro explain`, recording ownership,
as the caller) goes on past a failure so that every node gets its result.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import structlog

from kro.api.names import (
    ANNOTATION_ORIGINATING_CLUSTER,
    LABEL_HUB,
    NODE_STATE_DELETING,
    NODE_STATE_ERROR,
    NODE_STATE_IN_PROGRESS,
    NODE_STATE_SKIPPED,
    NODE_STATE_SYNCED,
    NODE_STATE_WAITING_FOR_READINESS,
)
from kro.api.objects import metadata as _meta
from kro.applyset import AppliedResource, Desired, check_duplicates
from kro.dynamic import LabelSelector, ScalarWatch, SelectorWatch
from kro.dynamic.watches import WatchRequest
from kro.engine.decorate import decorate
from kro.engine.diagnose import Diagnosis, Diagnostician
from kro.engine.owner import OwnerBinding
from kro.engine.ownership import Listed, Ownership, PruneScope
from kro.engine.places import ClusterUnavailable, OwnCluster, Places, take_target, unreachable
from kro.engine.results import NodeReason, NodeResult, PassResult, object_id
from kro.engine.watches import Watches
from kro.graph.evaluate import EvaluationError, InstanceEvaluation, Pending
from kro.graph.model import Graph, Node, NodeType
from kro.runtime.client import Client
from kro.runtime.errors import KubeError, NoKindMatch, NotFound
from kro.runtime.gvk import GVK as RuntimeGVK
from kro.runtime.gvk import GVR

__all__ = ["GraphPass", "node_gvr"]

log = structlog.get_logger(__name__)

_CLUSTER_REASONS: Final[Mapping[str, NodeReason]] = {
    reason.value: reason
    for reason in (
        NodeReason.CLUSTER_NOT_FOUND,
        NodeReason.CLUSTER_FORBIDDEN,
        NodeReason.CLUSTER_UNREACHABLE,
    )
}
"""A ClusterUnavailable's reason as the node's (anything else: ClusterNotFound, M-12)."""

_GVRS: dict[tuple[str, str, str], GVR] = {}
"""One GVR object per kind for every pass: the watch requests settled passes leave (one per
child) hold it (~0.5 MiB saved at 5,000 children)."""


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


class _Stop(Exception):
    """A controller pass stops at a terminating child (R-08): nothing is applied."""


class GraphPass:
    """One pass of `graph` over one owner (`owner_obj`, bound by `binding`, its objects kept by
    `ownership`).

    diagnose: say on what each waiting node waits (kro.engine.diagnose) and go on past a failure
        or a terminating child; only over the recording ownership, which writes nothing.
    recorded: with diagnose, per node, the controller's recorded refusal of its last apply.
    """

    def __init__(
        self,
        *,
        graph: Graph,
        owner_obj: dict[str, Any],
        binding: OwnerBinding,
        client: Client,
        ownership: Ownership,
        watches: Watches,
        evaluation: InstanceEvaluation,
        diagnose: bool = False,
        recorded: Mapping[str, str] | None = None,
        places: Places | None = None,
    ) -> None:
        self.graph = graph
        self.owner_obj = owner_obj
        self.binding = binding
        self.client = client
        self.ownership = ownership
        self.watches = watches
        self.places: Places = places or OwnCluster(client, watches)
        self.evaluation = evaluation
        self.recorded = recorded or {}
        self.result = PassResult()
        self._diagnostician = (
            Diagnostician(graph, evaluation, object_id(owner_obj)) if diagnose else None
        )
        self._batch: list[Desired] = []
        self._items: dict[str, list[str]] = {}  # node id -> resource ids of its desired objects
        self.reads: dict[WatchRequest, dict[tuple[str, str], str]] = {}
        """Per watch request, the versions this pass read, or wrote last (the skip memory)."""
        self._requests: dict[str, WatchRequest] = {}  # node id -> the request it was read by
        self._listed: Listed = {}
        """What the ownership listed up front (`Ownership.begin`): it answers reads."""
        self._rows: dict[str, dict[tuple[str, str, str], Mapping[str, Any]]] = {}
        """Per collection node, its live items by (cluster, namespace, name)."""
        self._clusters: dict[str, list[str]] = {}
        """Per node, the cluster of each rendered object ("" for the owner's own, M-11)."""
        self._kinds: dict[str, list[tuple[GVR, bool]]] = {}
        """Per node of a kind known only once rendered (V-48): each object's resource and
        scope, looked up in discovery."""

    async def run(self) -> PassResult:
        """Resolve, apply and record every node, in waves while an apply feeds waiting nodes;
        then prune. Raises (unless diagnosing) EvaluationError, ApplySetError or KubeError:
        nothing after it is applied; ReleaseFailed when prune could not release an orphan. A
        terminating child ends the pass before any apply (`PassResult.deleting`)."""
        self._listed = await self.ownership.begin(self.owner_obj)
        waiting = list(self.graph.topological_order)
        applied: list[Desired] = []  # every wave's batch so far
        resolved: dict[str, int] = {}  # node id -> the wave it was resolved in
        wave = 0
        try:
            while True:  # at least once: a graph without resources still applies its inventory
                self._batch = []
                for node_id in waiting:  # what an earlier wave said of them no longer holds
                    self.result.nodes.pop(node_id, None)
                    await self._resolve(self.graph.node(node_id))
                    found = self.result.nodes.get(node_id)  # none yet: queued for the apply
                    if found is None or found.state != NODE_STATE_IN_PROGRESS:
                        resolved[node_id] = wave
                if applied:  # R-11 across waves, as it would be within one batch
                    check_duplicates([*applied, *self._batch])
                applied.extend(self._batch)
                self.owner_obj, resources = await self.ownership.apply(self.owner_obj, self._batch)
                changed = self._record(resources)
                self.result.stale.update(
                    d
                    for n in changed
                    for d in self.graph.dependents_of(n)
                    if resolved.get(d, wave + 1) <= wave
                )
                waiting = [n for n in waiting if n not in resolved]
                failed = any(r.error is not None for r in resources)
                # Nothing changed: the waiting nodes would meet the data they just met.
                if not changed or not self.result.pending or failed or not waiting:
                    break
                wave += 1
        except _Stop:
            return self.result
        await self._prune()
        return self.result

    async def _prune(self) -> None:
        """Hand the ownership what it needs to prune safely; it decides how far it may go."""
        nodes = self.result.nodes.values()
        scope = PruneScope(
            failed=self.result.failure is not None
            or any(r.state == NODE_STATE_ERROR for r in nodes),
            pending=frozenset(r.id for r in nodes if r.state == NODE_STATE_IN_PROGRESS),
            positions={n: i for i, n in enumerate(self.graph.topological_order)},
            shard_version=self.watches.shard_version,
        )
        self.owner_obj, outcome = await self.ownership.prune(self.owner_obj, scope)
        if outcome.deleted:
            self.result.mutated = True
            self.result.pruned = True
        if outcome.retry:
            self.result.retry = True

    # -- resolve + observe -----------------------------------------------------------------

    def _set(
        self,
        node: Node,
        state: str,
        reason: NodeReason,
        message: str = "",
        *,
        objects: Sequence[Mapping[str, Any]] = (),
        diagnosis: Diagnosis | None = None,
        errors: Sequence[BaseException] = (),
        exists: bool = False,
    ) -> NodeResult:
        told = diagnosis or Diagnosis(message)
        clusters = tuple(dict.fromkeys(self._clusters.get(node.id) or ()))
        found = NodeResult(
            id=node.id,
            state=state,
            reason=reason,
            message=told.message,
            objects=tuple(object_id(o) for o in objects),
            expression=told.expression,
            field_path=told.field_path,
            waiting_on=told.waiting_on,
            missing=told.missing,
            errors=tuple(errors),
            exists=exists,
            clusters=clusters if any(clusters) else (),
        )
        self.result.set(found)
        return found

    def _pending(self, node: Node, pending: Pending, *, include_when: bool) -> None:
        diagnosis = None
        if self._diagnostician is not None:
            diagnosis = self._diagnostician.waiting(node, pending.reason, include_when=include_when)
        self._set(
            node, NODE_STATE_IN_PROGRESS, NodeReason.WAITING, pending.reason, diagnosis=diagnosis
        )

    def _failed(self, node: Node, error: EvaluationError) -> None:
        """An expression failed: a controller pass stops (raises); a diagnosing one goes on."""
        self.result.counts.node_eval_errors += 1
        told = Diagnosis(str(error), error.expression or "", error.field_path or "")
        found = self._set(node, NODE_STATE_ERROR, NodeReason.EVALUATION_FAILED, diagnosis=told)
        self.result.failure = self.result.failure or found
        if self._diagnostician is None:
            raise error

    def _desired(self, node: Node) -> list[dict[str, Any]] | Pending:
        """Render the node, counted and timed as upstream's node resolution (rows 3-5, 12)."""
        counts = self.result.counts
        counts.node_evals += 1
        started = time.monotonic()
        try:
            desired = self.evaluation.desired(node.id)
        finally:
            counts.node_eval_durations_s.append(time.monotonic() - started)
        if node.type is NodeType.COLLECTION and not isinstance(desired, Pending):
            counts.collection_sizes.append(len(desired))
        return desired

    async def _resolve(self, node: Node) -> None:  # noqa: PLR0911 - one return per outcome
        self.result.counts.ignored_checks += 1  # includeWhen, as upstream's IsIgnored (rows 8, 9)
        try:
            ignored = self.evaluation.check_ignored(node.id)
        except EvaluationError as error:
            return self._failed(node, error)
        if isinstance(ignored, Pending):
            return self._pending(node, ignored, include_when=True)
        if ignored:
            self.result.counts.ignored += 1
            diagnosis = self._diagnostician.excluded(node) if self._diagnostician else None
            self._set(node, NODE_STATE_SKIPPED, NodeReason.EXCLUDED, diagnosis=diagnosis)
            return None
        try:
            desired = self._desired(node)
        except EvaluationError as error:
            return self._failed(node, error)
        if isinstance(desired, Pending):
            return self._pending(node, desired, include_when=False)
        if not await self._placed(node, desired):
            return None
        return await self._rendered_node(node, desired)

    async def _placed(self, node: Node, desired: Sequence[dict[str, Any]]) -> bool:
        """Take each rendered object's target off it (M-11); whether every target names a
        usable cluster (M-12/M-13; if not, the node's error keeps the prune away)."""
        own = self.places.own
        clusters = self._clusters[node.id] = [take_target(obj, own) for obj in desired]
        try:
            for cluster in dict.fromkeys(c for c in clusters if c):
                await self.places.admit(cluster)
                self.result.remote = True
        except ClusterUnavailable as error:
            self._unavailable(node, desired, error)
            return False
        return True

    def _unavailable(
        self, node: Node, desired: Sequence[Mapping[str, Any]], error: ClusterUnavailable
    ) -> None:
        reason = _CLUSTER_REASONS.get(error.reason, NodeReason.CLUSTER_NOT_FOUND)
        self._set(node, NODE_STATE_ERROR, reason, str(error), objects=desired)
        self.result.retry = True  # a cluster joins or recovers without an edit of the owner
        self.result.unreachable.add(error.cluster)

    def _lost(
        self, node: Node, applied: Sequence[AppliedResource | None]
    ) -> ClusterUnavailable | None:
        """The first apply of `node` its member did not answer, as `ClusterUnreachable`."""
        for index, resource in enumerate(applied):
            error = resource.error if resource is not None else None
            if isinstance(error, KubeError):
                lost = unreachable(
                    getattr(error, "cluster", None) or self._cluster(node, index), error
                )
                if lost is not None:
                    return lost
        return None

    def _cluster(self, node: Node, index: int = 0) -> str:
        clusters = self._clusters.get(node.id) or ()
        return clusters[index] if index < len(clusters) else ""

    async def _rendered_node(  # noqa: PLR0911 - one return per kind of node
        self, node: Node, desired: list[dict[str, Any]]
    ) -> None:
        """Read what a rendered node stands for; queue what kro applies for the batch."""
        if node.type.is_value:  # V-45: computed here, nothing to read or write
            self._observed_applied(node, [], desired)
            return None
        if node.dynamic_type and not await self._look_up_kinds(node, desired):
            return None
        if node.type is NodeType.PATCH:
            await self._patch_targets(node, desired)
            return None
        try:
            observed = await self._observe(node, desired)
        except KubeError as error:
            lost = unreachable(getattr(error, "cluster", None) or self._cluster(node), error)
            if lost is not None:  # M-06: the member did not answer; say which, and wait for it
                self._unavailable(node, desired, lost)
                return None
            if self._diagnostician is None:
                raise
            return self._unreadable(node, desired, error)
        if observed is _DELETING:
            return None
        self.evaluation.observe(node.id, observed)
        if node.type.is_external:
            items = observed if node.type.is_list else [observed]
            self._decide(node, desired, None if observed is None else items)
            return None
        if self._held_by_another_engine(node, desired, observed):
            return None
        self._queue(node, desired, observed)
        return None

    def _held_by_another_engine(
        self, node: Node, desired: Sequence[Mapping[str, Any]], observed: Any
    ) -> bool:
        """V-18: an object another engine manages is not taken over: the node waits."""
        prefixes = self.binding.foreign_managers
        if not prefixes or observed is None:
            return False
        for item in observed if isinstance(observed, list) else [observed]:
            managers = [str(m.get("manager") or "") for m in _meta(item).get("managedFields") or ()]
            held = sorted(m for m in managers if m.startswith(prefixes))
            if held:
                namespace, name = _identity(item)
                where = f"{namespace}/{name}" if namespace else name
                message = (
                    f"{item.get('kind')} {where} is managed by {held[0]}; kro will not take it over"
                )
                self._set(
                    node,
                    NODE_STATE_WAITING_FOR_READINESS,
                    NodeReason.NOT_READY,
                    message,
                    objects=desired,
                    exists=True,
                )
                return True
        return False

    def _unreadable(
        self, node: Node, desired: Sequence[Mapping[str, Any]], error: KubeError
    ) -> None:
        """Diagnosing, the caller may not read the node's objects: a recorded refusal is an
        error; anything else cannot be checked."""
        refused = self.recorded.get(node.id, "")
        if refused:
            self._set(node, NODE_STATE_ERROR, NodeReason.APPLY_FAILED, refused, objects=desired)
            return
        message = f"cannot read the live object: {error}"
        self._set(node, NODE_STATE_IN_PROGRESS, NodeReason.READ_FAILED, message, objects=desired)

    def _decide(
        self,
        node: Node,
        objects: Sequence[Mapping[str, Any]],
        items: Sequence[Mapping[str, Any]] | None,
    ) -> None:
        """readyWhen over the observed `items` (None: an external reference not found),
        counted as upstream's readiness checks (rows 10, 11): Synced, or waiting."""
        counts = self.result.counts
        counts.ready_checks += 1
        try:
            readiness = self.evaluation.readiness(node.id)
        except EvaluationError as error:
            return self._failed(node, error)
        if readiness.ready:
            self._set(node, NODE_STATE_SYNCED, NodeReason.READY, objects=objects, exists=True)
            return None
        counts.not_ready += 1
        reason, diagnosis = NodeReason.NOT_READY, None
        if items is None:
            reason = NodeReason.NOT_FOUND
            if self._diagnostician is not None:
                missing = f"the external reference {object_id(objects[0])} does not exist"
                diagnosis = Diagnosis(missing)
        elif self._diagnostician is not None:
            diagnosis = self._diagnostician.not_ready(node, items, readiness.reason)
        self._set(
            node,
            NODE_STATE_WAITING_FOR_READINESS,
            reason,
            readiness.reason,
            objects=objects,
            diagnosis=diagnosis,
            exists=bool(items),
        )
        return None

    async def _look_up_kinds(self, node: Node, desired: list[dict[str, Any]]) -> bool:
        """V-48: each rendered object's resource; a kind not served yet makes the node wait
        (`SchemaPending` when deferred). A cluster-scoped object loses its default namespace."""
        kinds: list[tuple[GVR, bool]] = []
        for index, obj in enumerate(desired):
            gvk = RuntimeGVK.from_object(obj)
            try:
                info = await self.places.client(self._cluster(node, index)).mapper.resource_for(gvk)
            except NoKindMatch:
                message = f"kind {obj.get('kind')} of {obj.get('apiVersion')} is not served"
                reason = NodeReason.WAITING
                if node.deferred:  # DeferredSchemaResolution: waits for its CRD, never pruned
                    message = f"{message} yet (waiting for its CRD)"
                    reason = NodeReason.SCHEMA_PENDING
                self._set(node, NODE_STATE_IN_PROGRESS, reason, message)
                return False
            metadata = obj.get("metadata")
            if not info.namespaced and isinstance(metadata, dict):
                metadata.pop("namespace", None)
            kinds.append((info.gvr, info.namespaced))
        self._kinds[node.id] = kinds
        return True

    def _gvr(self, node: Node, index: int = 0) -> GVR:
        return self._kinds[node.id][index][0] if node.dynamic_type else node_gvr(node)

    def _namespaced(self, node: Node, index: int = 0) -> bool:
        return self._kinds[node.id][index][1] if node.dynamic_type else node.namespaced

    async def _patch_targets(self, node: Node, desired: Sequence[Mapping[str, Any]]) -> None:
        """V-46: a patch's targets must exist (not terminating); until then the node waits."""
        live: list[Mapping[str, Any]] = []
        for index, target in enumerate(desired):
            found = await self._read_row(node, index, target)
            if found is None or _meta(found).get("deletionTimestamp"):
                state = "not found" if found is None else "being deleted"
                message = f"patch target {object_id(target)} {state}"
                self._set(
                    node,
                    NODE_STATE_WAITING_FOR_READINESS,
                    NodeReason.NOT_FOUND,
                    message,
                    objects=desired,
                )
                return
            live.append(found)
        self._queue(node, desired, live)

    async def _observe(self, node: Node, desired: Sequence[Mapping[str, Any]]) -> Any:
        if node.type is NodeType.COLLECTION and node.dynamic_type:
            return await self._read_each(node, desired)  # each row its own kind, maybe none
        if node.type is NodeType.COLLECTION:
            return await self._observe_collection(node, desired)
        if node.type is NodeType.EXTERNAL_COLLECTION:
            return await self._observe_selected(node, desired)
        live = await self._read_row(node, 0, desired[0], answered=True)  # one object, by name
        if live is not None and not node.type.is_external and self._deleting(node, desired, [live]):
            return _DELETING
        return live

    async def _observe_selected(self, node: Node, desired: Sequence[Mapping[str, Any]]) -> Any:
        """An external reference by selector: every object it selects."""
        metadata = _meta(desired[0])
        selector = LabelSelector.from_dict(metadata.get("selector") or {})
        namespace = str(metadata.get("namespace") or "") or None
        request = SelectorWatch(node.id, self._gvr(node), namespace, selector)
        return await self._list(self._cluster(node), request, namespace, str(selector) or None)

    async def _list(
        self, cluster: str, request: SelectorWatch, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        """LIST (and watch) what `request` selects in `cluster` (in `namespace`, or all)."""
        await self.places.watches(cluster).watch(self.binding.ref, request)
        items, _ = await self.places.client(cluster).list_all(
            request.gvr, namespace=namespace, label_selector=selector
        )
        if not cluster:  # a member's reads are not the settled check's (PassResult.remote)
            self.reads[request] = _versions(items)
        return items

    async def _observe_collection(self, node: Node, desired: Sequence[Mapping[str, Any]]) -> Any:
        """A collection's existing items, listed by its selector in each of its clusters."""
        text = self.binding.collection_selector(self.owner_obj, node.id)
        request = SelectorWatch(node.id, self._gvr(node), None, LabelSelector.parse(text))
        by_identity: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        items: list[Mapping[str, Any]] = []
        for cluster, rows in self._by_cluster(node, desired).items():
            found = await self._list(cluster, request, self._one_namespace(rows), text)
            if not cluster:
                self._requests[node.id] = request
            by_identity.update({(cluster, *_identity(i)): i for i in found})
            items.extend(found)
        self._rows[node.id] = by_identity
        if self._deleting(node, desired, items):
            return _DELETING
        keys = [(self._cluster(node, i), *_identity(d)) for i, d in enumerate(desired)]
        return [by_identity[key] for key in keys if key in by_identity]

    def _by_cluster(
        self, node: Node, desired: Sequence[Mapping[str, Any]]
    ) -> dict[str, list[Mapping[str, Any]]]:
        """The rendered objects of `node` by cluster; nothing rendered: the owner's cluster."""
        groups: dict[str, list[Mapping[str, Any]]] = {} if desired else {"": []}
        for index, obj in enumerate(desired):
            groups.setdefault(self._cluster(node, index), []).append(obj)
        return groups

    def _one_namespace(self, desired: Sequence[Mapping[str, Any]]) -> str | None:
        """The one namespace of all the items, for an owner that reads as a namespace's
        ServiceAccount (a `Graph`, V-61); None (cluster-wide) otherwise."""
        if not self.binding.reads_in_namespace:
            return None
        namespaces = {_identity(d)[0] for d in desired}
        return namespaces.pop() if len(namespaces) == 1 and "" not in namespaces else None

    async def _read_each(self, node: Node, desired: Sequence[Mapping[str, Any]]) -> Any:
        """The items of a collection whose rows may differ in kind, read one by one."""
        items: list[Mapping[str, Any]] = []
        rows: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for index, obj in enumerate(desired):
            found = await self._read_row(node, index, obj)
            if found is not None:
                items.append(found)
                rows[(self._cluster(node, index), *_identity(found))] = found
        self._rows[node.id] = rows
        if self._deleting(node, desired, items):
            return _DELETING
        return items

    async def _read_row(
        self, node: Node, index: int, obj: Mapping[str, Any], *, answered: bool = False
    ) -> Mapping[str, Any] | None:
        """GET (and watch) row `index` of `node`; None when absent. `answered`: the ownership's
        listing or a cache may answer instead, and the node's reads are this request's."""
        gvr = self._gvr(node, index)
        namespace, name = _identity(obj)
        request = ScalarWatch(node.id, gvr, namespace, name)
        remote = bool(self._cluster(node, index))
        if answered and not remote:
            self._requests[node.id] = request
        await self.places.watches(self._cluster(node, index)).watch(self.binding.ref, request)
        known, live = False, None
        if answered:
            listed = (
                None
                if node.type.is_external or remote
                else self._listed.get((gvr.group, gvr.resource, namespace, name))
            )
            known, live = (True, listed) if listed is not None else self._from_cache(node, request)
        if not known:
            try:
                live = await self.places.client(self._cluster(node, index)).get(
                    gvr, name, namespace=namespace or None
                )
            except NotFound:
                live = None
        if not remote:  # a member's reads are not the settled check's (PassResult.remote)
            self.reads[request] = _versions([live] if live is not None else [])
        return live

    def _from_cache(
        self, node: Node, request: ScalarWatch
    ) -> tuple[bool, Mapping[str, Any] | None]:
        """Whether the kind's metadata-only informer cache answers this read, and its answer:
        "no such object" unless the owner's last pass read it (the cache may lag behind our
        own create); an object when the graph reads only its `metadata` and, for an object kro
        applies, the ownership vouches it is what our last apply left. Anything else is a GET:
        a pass on a new owner of five ConfigMaps makes ~1 read instead of ~9."""
        if not self.ownership.remembers:
            return False, None  # --skip-unchanged=false, or a dry run
        watches = self.places.watches(self._cluster(node))
        known, cached = watches.cached_object(request)
        if not known:
            return False, None
        if cached is None:
            # The last successful pass read it, and may have created it: the cache may lag.
            declared = watches.declared(self.binding.ref, request)
            return node.type.is_external or not declared, None
        if node.id not in self.graph.metadata_only:
            return False, None
        if node.type.is_external or self.ownership.vouches_for(cached):
            return True, cached
        return False, None

    def _deleting(
        self, node: Node, desired: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]]
    ) -> bool:
        """A live child is terminating (R-08): a controller pass stops here and waits for it."""
        terminating = [i for i in items if _meta(i).get("deletionTimestamp")]
        if not terminating:
            return False
        namespace, name = _identity(terminating[0])
        message = (
            f'resource "{namespace}/{name}" for node "{node.id}" is currently being deleted; '
            "waiting for deletion to complete before continuing reconciliation"
        )
        found = self._set(node, NODE_STATE_DELETING, NodeReason.DELETING, message, objects=desired)
        self.result.deleting = self.result.deleting or found
        if self._diagnostician is None:
            raise _Stop
        return True

    def _queue(self, node: Node, desired: Sequence[Mapping[str, Any]], observed: Any) -> None:
        """Batch the node's objects, with kro's marks (a patch's contributed fields only)."""
        patch, collection = node.type is NodeType.PATCH, node.type is NodeType.COLLECTION
        labels = self.binding.child_labels(self.owner_obj, node.id)
        remote_labels = {**labels, LABEL_HUB: self.places.hub}  # M-14
        marks = self.binding.child_annotations(self.owner_obj, node.id)
        remote_marks = marks
        if self.places.own != self.places.hub:  # M-21: from an instance living in a member
            remote_marks = {**marks, ANNOTATION_ORIGINATING_CLUSTER: self.places.own}
        rows: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        if collection:
            rows = self._rows.pop(node.id, {}) or {("", *_identity(o)): o for o in observed or []}
        ids: list[str] = []
        for index, obj in enumerate(desired if patch or collection else desired[:1]):
            many = collection or (patch and bool(node.for_each))
            resource_id = f"{node.id}-{index}" if many else node.id
            cluster = self._cluster(node, index)
            live = observed[index] if patch else observed
            if collection:
                live = rows.get((cluster, *_identity(obj)))
            body = obj
            if not patch:
                body = decorate(
                    obj,
                    remote_labels if cluster else labels,
                    node.apply_order,
                    node_path=node.id,
                    index=index,
                    size=len(desired) if collection else None,
                    deletion_policy=node.deletion_policy,
                    annotations=remote_marks if cluster else marks,
                )
            gvr, namespaced = self._gvr(node, index), self._namespaced(node, index)
            self._batch.append(
                Desired(resource_id, body, gvr, namespaced, observed=live, cluster=cluster)
            )
            ids.append(resource_id)
        self._items[node.id] = ids

    # -- results + prune -------------------------------------------------------------------

    def _record(self, resources: Sequence[AppliedResource]) -> set[str]:
        """R-14: per node, an apply error is ERROR; otherwise observe the applied objects.
        Returns the nodes whose objects this apply changed."""
        self.result.contests.extend(c for r in resources for c in r.contests)
        waits = [r.retry_after_s for r in resources if r.retry_after_s is not None]
        if self.result.retry_after_s is not None:
            waits.append(self.result.retry_after_s)
        self.result.retry_after_s = min(waits) if waits else None
        changed: set[str] = set()
        by_id = {r.resource_id: r for r in resources}
        batch = set(by_id)
        for node_id, resource_ids in self._items.items():
            if not batch.issuperset(resource_ids):
                continue  # applied by an earlier wave (or nothing to apply)
            node = self.graph.node(node_id)
            applied = [by_id.get(r) for r in resource_ids]
            errors = [a.error for a in applied if a is not None and a.error is not None]
            if any(a is not None and a.changed for a in applied):
                self.result.mutated = True
                changed.add(node_id)
            ids = set(resource_ids)
            items = [d for d in self._batch if d.resource_id in ids]  # this wave's
            rendered = [d.obj for d in items]
            whole = bool(items) and all(d.observed is not None for d in items)
            lost = self._lost(node, applied) if errors else None
            if lost is not None:  # M-06: a member that did not answer the apply
                self._unavailable(node, rendered, lost)
                continue
            if errors:
                message = "; ".join(str(e) for e in errors)
                self._set(
                    node,
                    NODE_STATE_ERROR,
                    NodeReason.APPLY_FAILED,
                    message,
                    objects=rendered,
                    errors=errors,
                    exists=whole,
                )
                continue
            objects = [a.obj for a in applied if a is not None and a.obj is not None]
            if len(objects) < len(resource_ids):  # a dry run's create: dependents wait
                size = f" ({len(objects)} of {len(rendered)} items exist)"
                counted = size if node.type is NodeType.COLLECTION else ""
                message = f"not created yet{counted}"
                self._set(
                    node, NODE_STATE_IN_PROGRESS, NodeReason.NOT_CREATED, message, objects=rendered
                )
                continue
            request = self._requests.get(node_id)
            # what a read would find now: the server's answers
            if request is not None and not any(self._clusters.get(node_id) or ()):
                self.reads[request] = {**self.reads.get(request, {}), **_versions(objects)}
            self._observed_applied(node, rendered, objects)
        return changed

    def _observed_applied(
        self, node: Node, rendered: Sequence[Mapping[str, Any]], objects: list[Any]
    ) -> None:
        """Observe what the apply left (or, in a dry run, what exists) and decide readiness."""
        many = node.type.is_list or (node.type is NodeType.PATCH and bool(node.for_each))
        self.evaluation.observe(node.id, objects if many else objects[0])
        self._decide(node, rendered, objects)


_DELETING: Any = object()
"""`_observe`'s answer for a terminating child (the node's result is already set)."""
