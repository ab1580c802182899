"""kro.cli.explain_cluster: read an owner and everything it depends on, then explain it.

One path for every owner kind (`survey`): the engine's dry pass over the owner's graph, then
the Warning Events about the owner and what the pass read. What differs between an RGD
instance (here) and a Graph (`explain_graph`) is data handed to it: how the object is found,
its graph, the refusals its controller recorded, and the report the findings fill in.

An instance's graph is the one kro runs (`explain_source`). A deleting instance is explained
from its teardown's own plan (`explain_dryrun`) instead, as kro deletes without the graph.

An instance also names the `--shards=auto` replica that reconciles it, computed from the
member Leases with the replicas' own functions (kro.runtime.sharding), so it is the answer they
reach; only liveness is judged differently, from what a Lease says of itself, as a one-shot
reader has no clock of its own to judge it by (docs/explain.md says when the two differ).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from kro.api.objects import metadata as _meta
from kro.cli.explain_cause import (
    condition_reports,
    generation_of,
    root_cause,
    summarize_deletion,
)
from kro.cli.explain_dryrun import DryRun, ReadingClient, dry_run, planned_deletion
from kro.cli.explain_format import SecretMask
from kro.cli.explain_places import ClusterAccess
from kro.cli.explain_report import (
    EventReport,
    InstanceReport,
    NodeReport,
    NodeStatus,
    ShardReport,
)
from kro.cli.explain_source import (
    ExplainError,
    LoadedGraph,
    find_rgd_name,
    forbidden_note,
    load_graph,
    read_owner,
)
from kro.controllers.instance.status import recorded_apply_errors
from kro.engine.results import object_id
from kro.graph.model import Graph
from kro.runtime.client import Client
from kro.runtime.discovery import ResourceInfo
from kro.runtime.errors import KubeError
from kro.runtime.events import CORE_EVENTS
from kro.runtime.gvk import GVR
from kro.runtime.leaderelection import LEASES
from kro.runtime.sharding import (
    GROUP_LABEL,
    VIEW_ANNOTATION,
    assign,
    contains,
    describe,
    fnv1a64,
    view_id,
)

MAX_EVENTS: Final = 10
PREFERRED_GROUP: Final = "kro.run"
KRO_REPORTER_PREFIX: Final = "kro/"


@dataclass(frozen=True, slots=True)
class Target:
    """What the command line names: `KIND/NAME` (KIND may be `kind.group`)."""

    kind: str
    name: str
    namespace: str


async def resolve_kind(client: Client, text: str) -> ResourceInfo:
    """The served resource for a kind, plural, singular or short name, optionally `.group`."""
    wanted, _, group = text.partition(".")
    wanted = wanted.lower()
    matches = [
        info
        for info in await client.mapper.resources()
        if wanted in {info.gvk.kind.lower(), info.gvr.resource, info.singular, *info.short_names}
        and (not group or info.gvk.group == group)
        and "/" not in info.gvr.resource
    ]
    if not matches:
        raise ExplainError(
            f'the server has no resource type "{text}" (try the kind as `kubectl api-resources` '
            "lists it, e.g. webapp or webapps.kro.run)"
        )
    groups = sorted({m.gvk.group for m in matches})
    if len(groups) > 1:
        if PREFERRED_GROUP not in groups:
            options = ", ".join(f"{wanted}.{g}" for g in groups)
            raise ExplainError(f'"{text}" is ambiguous: name the group, one of {options}')
        matches = [m for m in matches if m.gvk.group == PREFERRED_GROUP]
    preferred = await client.mapper.preferred_version(matches[0].gvk.group)
    return next((m for m in matches if m.gvk.version == preferred), matches[0])


def is_kro_event(event: Mapping[str, Any]) -> bool:
    """kro's own Events only repeat a condition change, which the Conditions section shows."""
    reporter = event.get("reportingComponent") or (event.get("source") or {}).get("component")
    return str(reporter or "").startswith(KRO_REPORTER_PREFIX)


async def read_events(
    client: Client, namespace: str, uids: Mapping[str, str]
) -> tuple[tuple[EventReport, ...], str]:
    """Warning Events about the given objects (newest first), or a note why there are none."""
    try:
        items, _ = await client.list_all(CORE_EVENTS, namespace=namespace or "default")
    except KubeError as error:
        return (), forbidden_note("Events", error)
    warnings = [
        e
        for e in items
        if e.get("type") == "Warning"
        and (e.get("involvedObject") or {}).get("uid") in uids
        and not is_kro_event(e)
    ]
    warnings.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return tuple(
        EventReport(
            object=uids[str((e.get("involvedObject") or {}).get("uid"))],
            reason=str(e.get("reason") or ""),
            message=str(e.get("message") or ""),
            count=int(e.get("count") or 1),
        )
        for e in reversed(warnings[-MAX_EVENTS:])
    ), ""


def unseen_notes(nodes: Sequence[NodeReport], access: ClusterAccess | None) -> list[str]:
    """Why nodes in member clusters explain could not reach are unknown, once (M-07)."""
    if not any(n.clusters and n.status is NodeStatus.UNKNOWN for n in nodes):
        return []
    namespace = (access or ClusterAccess()).namespace
    return [
        "explain reaches a member cluster with the credentials of its registry Secret, read as "
        f"you in namespace {namespace} (--cluster-secrets-namespace); a node in a cluster you "
        "cannot read or reach from here is unknown, not in error"
    ]


async def survey(
    client: Client,
    owner: Mapping[str, Any],
    gvr: GVR,
    mask: SecretMask,
    *,
    graph: Graph | None,
    recorded: Mapping[str, str],
    notes: Sequence[str] = (),
    access: ClusterAccess | None = None,
) -> DryRun:
    """The dry run over `graph` (None: nothing to run), then the Warning Events about the
    owner and what the run read, and the notes."""
    mask.add(owner)
    ident = object_id(owner)
    uids = {str(_meta(owner).get("uid") or ""): str(ident)}
    dry = DryRun()
    if graph is not None:
        reader = ReadingClient(client, owner, mask)
        dry = await dry_run(graph, owner, gvr, reader, recorded, access=access)
        uids.update(reader.uids)
    events, note = await read_events(client, ident.namespace, uids)
    notes = (*notes, *([note] if note else []), *unseen_notes(dry.nodes, access))
    return replace(dry, events=events, notes=notes)


async def explain_instance(
    client: Client, target: Target, mask: SecretMask, access: ClusterAccess | None = None
) -> InstanceReport:
    """Everything `kro explain KIND/NAME` prints; raises ExplainError when it cannot."""
    info = await resolve_kind(client, target.kind)
    namespace = target.namespace if info.namespaced else None
    instance = await read_owner(client, info.gvr, info.gvk.kind, target.name, namespace)
    ident = object_id(instance)
    rgd_name, notes = await find_rgd_name(client, instance, info)
    deletion = None
    loaded = LoadedGraph()
    if _meta(instance).get("deletionTimestamp"):
        planned = await planned_deletion(client, instance, info.gvr, access)
        deletion = summarize_deletion(instance, planned)
    elif rgd_name:
        loaded = await load_graph(client, rgd_name)
        notes += loaded.notes
    else:
        notes.append("no ResourceGraphDefinition found for this kind: is it an instance of one?")
    graph = loaded.graph
    recorded = recorded_apply_errors(instance, graph.topological_order) if graph else {}
    found = await survey(
        client, instance, info.gvr, mask, graph=graph, recorded=recorded, notes=notes, access=access
    )
    return InstanceReport(
        root_cause=root_cause(
            instance, found.nodes, deletion=deletion, source_problem=loaded.problem
        ),
        api_version=ident.api_version,
        kind=ident.kind,
        namespace=ident.namespace,
        name=ident.name,
        state=str((instance.get("status") or {}).get("state") or ""),
        generation=generation_of(instance),
        source=loaded.source,
        nodes=found.nodes,
        deletion=deletion,
        conditions=condition_reports(instance),
        events=found.events,
        notes=found.notes,
        shards=await read_shard_owners(client, ident.namespace),
        would_write=found.would_write,
    )


def is_live(lease: Mapping[str, Any], now: datetime) -> bool:
    """Held (a holder identity) and renewed within its own lease duration before `now`."""
    spec = lease.get("spec") or {}
    try:
        renewed = datetime.fromisoformat(str(spec.get("renewTime")).replace("Z", "+00:00"))
    except ValueError:
        return False
    if not spec.get("holderIdentity"):
        return False
    renewed = renewed if renewed.tzinfo else renewed.replace(tzinfo=UTC)
    return (now - renewed).total_seconds() < float(spec.get("leaseDurationSeconds") or 0)


def shard_owners(
    namespace: str, leases: Iterable[Mapping[str, Any]], now: datetime
) -> tuple[ShardReport, ...]:
    """Per shard group (Lease namespace, group label), who owns `namespace`'s hash."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for lease in leases:
        meta = _meta(lease)
        group = str((meta.get("labels") or {}).get(GROUP_LABEL) or "")
        if group:
            groups[(str(meta.get("namespace") or ""), group)].append(lease)
    return tuple(_owner(namespace, key, members, now) for key, members in sorted(groups.items()))


def _owner(
    namespace: str, key: tuple[str, str], leases: list[Mapping[str, Any]], now: datetime
) -> ShardReport:
    lease_namespace, group = key
    digest = fnv1a64(namespace)
    live = {str(_meta(lease).get("name")): lease for lease in leases if is_live(lease, now)}
    expired = sorted({str(_meta(lease).get("name")) for lease in leases} - live.keys())
    report = ShardReport(
        group=group,
        lease_namespace=lease_namespace,
        namespace=namespace,
        namespace_hash=f"0x{digest:016x}",
        members=tuple(sorted(live)),
        expired=tuple(expired),
    )
    if not live:
        return report
    current = view_id(live)
    owner_lease, owned = next(
        (name, owned) for name, owned in assign(live).items() if contains((owned,), digest)
    )
    acknowledged = all(
        (_meta(lease).get("annotations") or {}).get(VIEW_ANNOTATION) == current
        for lease in live.values()
    )
    return replace(
        report,
        owner=str((live[owner_lease].get("spec") or {}).get("holderIdentity") or ""),
        owner_lease=owner_lease,
        owner_range=describe((owned,)),
        handover=not acknowledged,
    )


async def read_shard_owners(
    client: Client, namespace: str, *, now: datetime | None = None
) -> tuple[ShardReport, ...]:
    """The member Leases of every shard group in the cluster, and who owns `namespace`;
    nothing when there are none or they cannot be read."""
    try:
        leases, _ = await client.list_all(LEASES, label_selector=GROUP_LABEL)
    except KubeError:
        return ()
    return shard_owners(namespace, leases, now or datetime.now(UTC))
