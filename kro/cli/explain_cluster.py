"""kro.cli.explain_cluster: read an instance and everything it depends on, then explain it.

Only GET and LIST are issued — the `view` role's verbs — and whatever is refused is reported
as a note or as an `unknown` node instead of failing the command: a user who may read the
instance but not, say, the GraphRevisions still gets every answer the rest allows.

Reads, in order: discovery (the kind given on the command line), the instance, its RGD and the
graph kro runs (`explain_source`), then per node the live objects the instance's desired
objects name (GET, or a LIST by kro's labels for collections — the controller's own reads,
`kro.controllers.instance.resources`), and last the Warning Events about the instance and its
children. A deleting instance is explained from its ApplySet members (`explain_deletion`)
instead, as kro deletes without the graph. With sharded replicas, the member Leases say which
replica owns the instance (`explain_shard`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kro.api.objects import metadata as _meta
from kro.cli.explain_cause import condition_reports, recorded_errors, root_cause
from kro.cli.explain_deletion import read_members, summarize_deletion
from kro.cli.explain_mask import SecretMask
from kro.cli.explain_report import EventReport, InstanceReport, NodeReport
from kro.cli.explain_shard import read_shard_owners
from kro.cli.explain_source import LoadedGraph, find_rgd_name, forbidden_note, load_graph
from kro.cli.explain_walk import Observed, object_id, walk
from kro.controllers.instance.labels import collection_selector
from kro.graph.model import Node, NodeType
from kro.runtime.client import Client
from kro.runtime.discovery import ResourceInfo
from kro.runtime.errors import Forbidden, KubeError, NotFound
from kro.runtime.gvk import GVR

EVENTS: Final = GVR("", "v1", "events")
MAX_EVENTS: Final = 10
PREFERRED_GROUP: Final = "kro.run"
KRO_REPORTER_PREFIX: Final = "kro/"


class ExplainError(Exception):
    """Explain cannot say anything useful: the kind is unknown, the object does not exist or
    cannot be read. The message says which and what to try."""


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
        if wanted
        in {
            info.gvk.kind.lower(),
            info.gvr.resource,
            info.singular,
            *info.short_names,
        }
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


async def read_instance(client: Client, info: ResourceInfo, target: Target) -> dict[str, Any]:
    namespace = target.namespace if info.namespaced else None
    where = f' in namespace "{namespace}"' if namespace else ""
    try:
        return await client.get(info.gvr, target.name, namespace=namespace)
    except NotFound:
        raise ExplainError(f'{info.gvk.kind} "{target.name}" not found{where}') from None
    except Forbidden as error:
        raise ExplainError(
            f'cannot read {info.gvk.kind} "{target.name}"{where}: {error.message}'
        ) from None


class LiveReader:
    """The `Fetch` of the node walk: the controller's reads of one node, read-only."""

    def __init__(self, client: Client, instance: Mapping[str, Any], mask: SecretMask) -> None:
        self.client = client
        self.instance = instance
        self.mask = mask
        self.uids: dict[str, str] = {}  # uid -> "Kind ns/name", for matching Events

    def _seen(self, obj: Mapping[str, Any]) -> None:
        self.mask.add(obj)
        uid = str(_meta(obj).get("uid") or "")
        if uid:
            self.uids[uid] = str(object_id(obj))

    async def __call__(self, node: Node, desired: Sequence[Mapping[str, Any]]) -> Observed:
        gvr = GVR(node.gvk.group, node.gvk.version, node.resource)
        try:
            if node.type is NodeType.COLLECTION:
                return Observed(await self._collection(node, gvr, desired))
            if node.type is NodeType.EXTERNAL_COLLECTION:
                selector = dict(_meta(desired[0]).get("selector") or {})
                return Observed(await self._selected(gvr, desired[0], selector))
            identity = _meta(desired[0])
            namespace = str(identity.get("namespace") or "") or None
            live = await self.client.get(gvr, str(identity.get("name")), namespace=namespace)
        except NotFound:
            return Observed(None)
        except KubeError as error:
            return Observed(error=str(error))
        self._seen(live)
        return Observed(live)

    async def _collection(
        self, node: Node, gvr: GVR, desired: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        uid = str(_meta(self.instance).get("uid") or "")
        selector = collection_selector(uid, node.id)
        try:
            items, _ = await self.client.list_all(gvr, label_selector=selector)
        except Forbidden:  # no cluster-wide list: look where the items should be
            namespaces = sorted({str(_meta(d).get("namespace") or "") for d in desired})
            items = []
            for namespace in namespaces:
                found, _ = await self.client.list_all(
                    gvr, namespace=namespace or None, label_selector=selector
                )
                items += found
        for item in items:
            self._seen(item)
        by_identity = {(object_id(i).namespace, object_id(i).name): i for i in items}
        keys = [(object_id(d).namespace, object_id(d).name) for d in desired]
        return [by_identity[k] for k in keys if k in by_identity]

    async def _selected(
        self, gvr: GVR, desired: Mapping[str, Any], selector: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        labels = selector.get("matchLabels") or {}
        text = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or None
        namespace = str(_meta(desired).get("namespace") or "") or None
        items, _ = await self.client.list_all(gvr, namespace=namespace, label_selector=text)
        for item in items:
            self._seen(item)
        return items


def is_kro_event(event: Mapping[str, Any]) -> bool:
    """kro's own Events only repeat a condition change, which the Conditions section shows."""
    reporter = event.get("reportingComponent") or (event.get("source") or {}).get("component")
    return str(reporter or "").startswith(KRO_REPORTER_PREFIX)


async def read_events(
    client: Client, namespace: str, uids: Mapping[str, str]
) -> tuple[tuple[EventReport, ...], str]:
    """Warning Events about the given objects (newest first), or a note why there are none."""
    try:
        items, _ = await client.list_all(EVENTS, namespace=namespace or "default")
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
    reports = tuple(
        EventReport(
            object=uids[str((e.get("involvedObject") or {}).get("uid"))],
            reason=str(e.get("reason") or ""),
            message=str(e.get("message") or ""),
            count=int(e.get("count") or 1),
        )
        for e in reversed(warnings[-MAX_EVENTS:])
    )
    return reports, ""


async def explain_instance(client: Client, target: Target, mask: SecretMask) -> InstanceReport:
    """Everything `kro explain KIND/NAME` prints; raises ExplainError when it cannot."""
    info = await resolve_kind(client, target.kind)
    instance = await read_instance(client, info, target)
    mask.add(instance)
    ident = object_id(instance)
    rgd_name, notes = await find_rgd_name(client, instance, info)
    uids = {str(_meta(instance).get("uid") or ""): str(ident)}
    deletion = None
    nodes: list[NodeReport] = []
    loaded = LoadedGraph()
    if _meta(instance).get("deletionTimestamp"):
        deletion = summarize_deletion(instance, await read_members(client, instance, info.gvr))
    elif rgd_name:
        loaded = await load_graph(client, rgd_name)
        notes += loaded.notes
        if loaded.graph is not None:
            reader = LiveReader(client, instance, mask)
            recorded = recorded_errors(instance, loaded.graph.topological_order)
            nodes = await walk(loaded.graph, instance, reader, recorded)
            uids.update(reader.uids)
    else:
        notes.append("no ResourceGraphDefinition found for this kind: is it an instance of one?")
    events, note = await read_events(client, ident.namespace, uids)
    shards = await read_shard_owners(client, ident.namespace)
    notes += [note] if note else []
    status = instance.get("status") or {}
    generation = _meta(instance).get("generation")
    return InstanceReport(
        root_cause=root_cause(instance, nodes, deletion=deletion, source_problem=loaded.problem),
        api_version=ident.api_version,
        kind=ident.kind,
        namespace=ident.namespace,
        name=ident.name,
        state=str(status.get("state") or ""),
        generation=generation if isinstance(generation, int) else None,
        source=loaded.source,
        nodes=tuple(nodes),
        deletion=deletion,
        conditions=condition_reports(instance),
        events=events,
        notes=tuple(notes),
        shards=shards,
    )
