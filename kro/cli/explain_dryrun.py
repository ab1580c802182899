"""kro.cli.explain_dryrun: every node of an owner as kro's engine sees it, without a write.

Explain runs the controller's own pass (kro.engine.graph_pass) as the caller, asked to
diagnose, over the controller's own ownership wrapped in the recording one (kro.engine.
recording, which notes what would be written): docs/architecture.md describes the run. This
module only words the engine's results for a user (`NodeReport`); it decides nothing itself,
so explain and the controller cannot drift apart. What only the controller saw, the API
server's refusal of an apply, is handed in as `recorded`: a dry run cannot send the apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from kro.api.names import REASON_SCHEMA_PENDING
from kro.api.objects import metadata as _meta
from kro.applyset import Applier, ApplierOptions
from kro.cli.explain_cause import LiveMembers
from kro.cli.explain_format import SecretMask
from kro.cli.explain_places import CallerClusters, ClusterAccess
from kro.cli.explain_report import EventReport, NodeReport, NodeStatus
from kro.controllers.graph.binding import GraphBinding
from kro.controllers.graph.inventory import GRAPHS, StatusInventory
from kro.controllers.instance.binding import InstanceBinding
from kro.dynamic import ObjectRef
from kro.engine import GraphPass, NodeReason, NodeResult, NoWatches
from kro.engine.applyset_ownership import ApplySetOwnership
from kro.engine.owner import OwnerBinding
from kro.engine.ownership import Ownership
from kro.engine.places import Places
from kro.engine.recording import RecordingOwnership
from kro.engine.results import object_id
from kro.graph.evaluate import InstanceEvaluation
from kro.graph.model import Graph, Node
from kro.graph.targets import node_cluster
from kro.runtime.client import Client
from kro.runtime.discovery import RESTMapper
from kro.runtime.errors import Forbidden
from kro.runtime.gvk import GVR

NOT_RUNNING = "kro recorded no error (is the kro controller running?)"
_CLUSTER_REASONS = frozenset(
    {NodeReason.CLUSTER_NOT_FOUND, NodeReason.CLUSTER_FORBIDDEN, NodeReason.CLUSTER_UNREACHABLE}
)


@dataclass(frozen=True, slots=True)
class DryRun:
    """The engine's dry run in a user's words: every node, and what a pass would write; and
    once `explain_cluster.survey` read them, the Warning Events and what to note."""

    nodes: tuple[NodeReport, ...] = ()
    would_write: tuple[str, ...] = ()
    events: tuple[EventReport, ...] = ()
    notes: tuple[str, ...] = ()


class ReadingClient:
    """The caller's client for the dry run's reads; it remembers what they returned (Secret
    values for the mask, uids to match Events) and cannot write."""

    def __init__(self, client: Client, owner: Mapping[str, Any], mask: SecretMask) -> None:
        self._client = client
        self._namespace = str(_meta(owner).get("namespace") or "") or None
        self.mask = mask
        self.uids: dict[str, str] = {}  # uid -> "Kind ns/name", for matching Events

    @property
    def mapper(self) -> RESTMapper:
        """Discovery, for nodes whose kind is looked up when rendered (a computed or a
        deferred kind): reading it writes nothing."""
        return self._client.mapper

    def _seen(self, obj: Mapping[str, Any]) -> None:
        self.mask.add(obj)
        if uid := str(_meta(obj).get("uid") or ""):
            self.uids[uid] = str(object_id(obj))

    async def get(self, gvr: GVR, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        obj = await self._client.get(gvr, name, namespace=namespace)
        self._seen(obj)
        return obj

    async def list_all(
        self, gvr: GVR, *, namespace: str | None = None, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        """A LIST; one refused cluster-wide (the caller may read only its own namespace) is
        asked again in the instance's namespace, where a collection's items usually are."""
        try:
            items, version = await self._client.list_all(
                gvr, namespace=namespace, label_selector=label_selector
            )
        except Forbidden:
            if namespace is not None or self._namespace is None:
                raise
            items, version = await self._client.list_all(
                gvr, namespace=self._namespace, label_selector=label_selector
            )
        for item in items:
            self._seen(item)
        return items, version


async def dry_run(
    graph: Graph,
    owner_obj: Mapping[str, Any],
    gvr: GVR,
    reader: ReadingClient,
    recorded: Mapping[str, str],
    *,
    access: ClusterAccess | None = None,
) -> DryRun:
    """One report per node, in topological order, and what the pass would write, for an owner
    of resource `gvr`, judged by the ownership its controller keeps: a `Graph`'s status
    inventory, an RGD instance's ApplySet. `access`: where the members' Secrets are (M-07)."""
    access = access or ClusterAccess()
    owner = dict(owner_obj)
    ident = object_id(owner)
    ref = ObjectRef(gvr, ident.namespace, ident.name)
    client = cast(Client, reader)  # a dry run only reads: get and list_all
    if gvr == GRAPHS:
        binding: OwnerBinding = GraphBinding(GRAPHS, ref, graph)
        ownership: Ownership = StatusInventory.of(owner, graph, kro_client=client, client=client)
    else:
        binding = InstanceBinding(gvr, ref, graph.instance)
        ownership = _applyset(client, gvr)
    recording = RecordingOwnership(ownership, recorded)
    evaluation = InstanceEvaluation(graph, owner, max_collection_size=graph.max_collection_size)
    async with CallerClusters(
        client, access, lambda member: cast(Client, ReadingClient(member, owner, reader.mask))
    ) as places:
        result = await GraphPass(
            graph=graph,
            owner_obj=owner,
            binding=binding,
            client=client,
            ownership=recording,
            watches=NoWatches(),
            evaluation=evaluation,
            diagnose=True,
            recorded=recorded,
            places=places,
        ).run()
    # Only a graph with a target names clusters: one without reads as it always did.
    targeted = any(node_cluster(node, "") != "" for node in graph.nodes.values())
    nodes = [
        report(graph.node(node_id), result.nodes[node_id], places if targeted else None)
        for node_id in graph.topological_order
        if node_id in result.nodes
    ]
    return DryRun(tuple(nodes), tuple(recording.writes))


def report(node: Node, found: NodeResult, places: CallerClusters | None = None) -> NodeReport:
    """The engine's result for `node`, in a user's words; with `places`, naming its cluster
    (a node in a cluster the caller could not see is unknown, not in error)."""
    status, reason, message = _worded(node, found)
    clusters = _clusters(node, found, places.access) if places is not None else ()
    if found.reason in _CLUSTER_REASONS and places and places.unseen.keys() & {*clusters}:
        status, reason, message = NodeStatus.UNKNOWN, found.message, ""
    return NodeReport(
        id=node.id,
        type=node.type.value,
        api_version=node.gvk.api_version,
        kind=node.gvk.kind,
        wave=node.apply_order,
        dependencies=node.dependencies,
        status=status,
        objects=found.objects,
        reason=reason,
        expression=found.expression,
        field_path=found.field_path,
        waiting_on=found.waiting_on,
        missing=found.missing,
        message=message,
        clusters=clusters,
    )


def _clusters(node: Node, found: NodeResult, access: ClusterAccess) -> tuple[str, ...]:
    """Where the node's objects live: as the pass placed them, or, for a node that did not
    render, where its literal target sends it (nothing when it is computed)."""
    if node.type.is_value:
        return ()
    if found.clusters:
        return tuple(access.name_of(c) for c in found.clusters)
    cluster = "" if found.objects else node_cluster(node, access.local_name)
    return () if cluster is None else (access.name_of(cluster),)


def _worded(  # noqa: C901, PLR0911 - one case per NodeReason
    node: Node, found: NodeResult
) -> tuple[NodeStatus, str, str]:
    """(status, reason, message) of a report: one case per NodeReason."""
    match found.reason:
        case NodeReason.READY:
            ready = bool(node.ready_when) or node.type.is_external
            return (NodeStatus.READY if ready else NodeStatus.APPLIED), "", ""
        case NodeReason.NOT_READY:
            return NodeStatus.NOT_READY, found.message, ""
        case NodeReason.WAITING | NodeReason.NOT_FOUND:
            return NodeStatus.WAITING, found.message, ""
        case NodeReason.SCHEMA_PENDING:  # a deferred node: DeferredSchemaResolution
            return NodeStatus.WAITING, f"{REASON_SCHEMA_PENDING}: {found.message}", ""
        case NodeReason.EXCLUDED:
            return NodeStatus.EXCLUDED, found.message, ""
        case NodeReason.NOT_CREATED:
            return NodeStatus.MISSING, f"{found.message}; {NOT_RUNNING}", ""
        case NodeReason.DELETING:
            what = f"{found.objects[0]}" if found.objects else "it"
            reason = f"{what} is being deleted; kro waits for it to go before it re-creates it"
            return NodeStatus.DELETING, reason, ""
        case NodeReason.EVALUATION_FAILED:
            return NodeStatus.ERROR, "an expression failed", found.message
        case NodeReason.APPLY_FAILED:
            reason = "the last apply failed" if found.exists else "the API server refused it"
            return NodeStatus.ERROR, reason, found.message
        case NodeReason.CLUSTER_UNREACHABLE:
            return NodeStatus.ERROR, "its target cluster does not answer", found.message
        case NodeReason.CLUSTER_NOT_FOUND | NodeReason.CLUSTER_FORBIDDEN:
            return NodeStatus.ERROR, "its target cluster cannot be used", found.message
    return NodeStatus.UNKNOWN, found.message, ""  # READ_FAILED: the caller could not read it


def _applyset(client: Client, gvr: GVR, places: Places | None = None) -> ApplySetOwnership:
    """An instance's ApplySet ownership, for a dry pass or a teardown's plan: never applies."""
    applier = Applier(client, ApplierOptions(tooling="kro explain"))
    return ApplySetOwnership(applier=applier, client=client, gvr=gvr, places=places)


async def planned_deletion(
    client: Client,
    instance: Mapping[str, Any],
    gvr: GVR,
    access: ClusterAccess | None = None,
) -> LiveMembers:
    """The members the controller's next teardown step of `instance` would act on, as that
    step plans it (reads only), in the instance's cluster and in each member cluster its
    ApplySet records (M-16), read there as the caller."""
    async with CallerClusters(client, access or ClusterAccess(), lambda member: member) as places:
        step = await RecordingOwnership(_applyset(client, gvr, places)).teardown(dict(instance))
    if step.blocked and not step.transient:
        return LiveMembers(inventory_error=step.blocked)
    if step.blocked:
        return LiveMembers(errors=(f"cannot list the members: {step.blocked}",))
    return LiveMembers(step.held)
