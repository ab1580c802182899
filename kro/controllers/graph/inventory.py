"""kro.controllers.graph.inventory: a Graph's record of what it applied, in its own status.

A `Graph`'s ownership (kro.engine.ownership). Its objects carry no ApplySet labels and no
ownerReferences (V-61): the only record is `status.managedResources` (V-57), which must never
hold less than the cluster does. So it is written ahead (what it held, plus this batch without
UIDs), and each entry gains its UID once applied; after a crash in between, an entry without a
UID is deleted only when the live object carries this Graph's field manager (proof this Graph
applied it), else forgotten.

Template objects are applied unforced as the Graph's one field manager (V-62): another Graph's
fields are a `FieldManagerConflict`, anyone else's are drift, taken back forced. Prune deletes
by recorded UID what this pass did not apply, except what unresolved nodes hold (V-63). A
`patch` node's fields are contributions (V-46, V-58), recorded ahead in `status.contributions`
with the node's own field manager; releasing one applies only the target's identity under that
manager, and the server drops exactly its fields. Everything runs as the Graph's impersonated
ServiceAccount; status writes as kro.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Final, TypeVar

import structlog

from kro.api.graph import (
    FIELD_MANAGER_PATCH_PREFIX,
    FIELD_MANAGER_TEMPLATE_PREFIX,
    GRAPH_GROUP,
    GRAPH_PLURAL,
    GRAPH_VERSION,
    MANAGED_RESOURCES_CAP,
    graph_hash,
    patch_field_manager,
    template_field_manager,
)
from kro.api.names import ANNOTATION_ABANDON_CLUSTER, ANNOTATION_NODE_PATH
from kro.api.objects import metadata as _meta
from kro.applyset import AppliedCache, AppliedResource, ApplySetError, Desired
from kro.applyset.cache import already_applied, digest
from kro.engine.ownership import (
    Held,
    Listed,
    PruneOutcome,
    PruneScope,
    TeardownStep,
    abandoned_clusters,
)
from kro.engine.places import Places
from kro.engine.results import ObjectId
from kro.graph.graph_kind import patch_endpoint
from kro.graph.model import Graph, NodeType
from kro.runtime.client import Client
from kro.runtime.errors import Conflict, KubeError, NotFound
from kro.runtime.gvk import GVK, GVR
from kro.runtime.memory import ObjectMemory
from kro.runtime.status import StatusWriter

__all__ = [
    "GRAPHS",
    "Contribution",
    "Entry",
    "FieldManagerConflict",
    "StatusInventory",
    "contributions_of",
    "entries_of",
]

log = structlog.get_logger(__name__)

GRAPHS: Final = GVR(GRAPH_GROUP, GRAPH_VERSION, GRAPH_PLURAL)
_MANAGER: Final = re.compile(r'conflict with "([^"]+)"')


Identity = tuple[str, str, str, str, str]
"""(cluster, group, kind, namespace, name) of a recorded object."""


class FieldManagerConflict(ApplySetError):
    """A field of the object is held by another Graph's template manager (V-62)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One `status.managedResources` item."""

    node_id: str
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""
    cluster: str = ""
    """The member cluster the object lives in (M-11); "" for the Graph's own."""

    @property
    def identity(self) -> Identity:
        """(cluster, group, kind, namespace, name): an apiVersion bump is no prune."""
        group = self.api_version.rpartition("/")[0]
        return (self.cluster, group, self.kind, self.namespace, self.name)

    def as_status(self) -> dict[str, str]:
        return _as_status(self)

    @classmethod
    def of(cls, node_id: str, desired: Desired, uid: str = "") -> Entry:
        """The entry of an object as rendered (`desired`), once applied with `uid`."""
        obj = desired.obj
        meta = _meta(obj)
        return cls(
            node_id=node_id,
            api_version=str(obj.get("apiVersion") or ""),
            kind=str(obj.get("kind") or ""),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=uid,
            cluster=desired.cluster,
        )


def entries_of(graph: Mapping[str, Any]) -> list[Entry]:
    """`status.managedResources` as recorded."""
    return _from_status(Entry, graph, "managedResources")


@dataclass(frozen=True, slots=True)
class Contribution:
    """One `status.contributions` item: fields a patch node holds on a target (V-58)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    subresource: str
    field_manager: str
    cluster: str = ""
    """The member cluster the target lives in (M-11); "" for the Graph's own."""

    def as_status(self) -> dict[str, str]:
        return _as_status(self)

    def identity_body(self) -> dict[str, Any]:
        """What releasing it applies: the target's identity, no field at all."""
        metadata = {"name": self.name}
        if self.namespace:
            metadata["namespace"] = self.namespace
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata}


def contributions_of(graph: Mapping[str, Any]) -> list[Contribution]:
    """`status.contributions` as recorded."""
    return _from_status(Contribution, graph, "contributions")


_Item = TypeVar("_Item", Entry, Contribution)
Recorded = Entry | Contribution
_KEYS: Final = {"node_id": "nodeID", "api_version": "apiVersion", "field_manager": "fieldManager"}
"""The status key of each field not named as in the status."""
_OPTIONAL: Final = frozenset({"namespace", "uid", "subresource", "cluster"})
"""Left out when empty: cluster-scoped, a UID not known yet, the main endpoint, own cluster."""


def _as_status(item: Recorded) -> dict[str, str]:
    values = {f.name: str(getattr(item, f.name)) for f in fields(item)}
    return {_KEYS.get(k, k): v for k, v in values.items() if v or k not in _OPTIONAL}


def _from_status(cls: type[_Item], graph: Mapping[str, Any], field: str) -> list[_Item]:
    items = (graph.get("status") or {}).get(field) or ()
    names = [f.name for f in fields(cls)]
    return [
        cls(**{n: str(raw.get(_KEYS.get(n, n)) or "") for n in names})
        for raw in items
        if isinstance(raw, Mapping)
    ]


def _union(recorded: Sequence[Entry], more: Sequence[Entry]) -> list[Entry]:
    """`recorded` then what `more` adds; per identity a set UID beats an empty one and a newer
    (later) one an older one."""
    out: dict[Identity, Entry] = {e.identity: e for e in recorded}
    for entry in more:
        known = out.get(entry.identity)
        if known is None or entry.uid:
            out[entry.identity] = entry if entry.uid or known is None else known
        elif known.node_id != entry.node_id:
            out[entry.identity] = replace(known, node_id=entry.node_id)
    return list(out.values())[:MANAGED_RESOURCES_CAP]


class StatusInventory:
    """`Ownership` of one Graph for one pass or one teardown step (kro.engine.ownership)."""

    def __init__(
        self,
        *,
        kro_client: Client,
        client: Client,
        graph: Mapping[str, Any],
        field_manager: str,
        concurrency: int = 1,
        patches: Mapping[str, str] | None = None,
        skip_unchanged: bool = False,
        memory: ObjectMemory | None = None,
        status: StatusWriter | None = None,
        places: Places | None = None,
    ) -> None:
        """`places`: the member clusters a node's target may name (M-11); None: every object
        lives with the Graph. `memory`: the process's skip memory, which `skip_unchanged` lets
        save reads and applies. `status`: the controller's status writer (kro's identity)."""
        self._status = status if status is not None else StatusWriter(kro_client)
        self._cache = AppliedCache(
            memory=memory if memory is not None else ObjectMemory(), fact="graph-applied"
        )
        self._skip_unchanged = skip_unchanged and self._cache.memory.enabled
        self._client = client
        self._places = places
        self._manager = field_manager
        self._uid = str(_meta(graph).get("uid") or "")
        self._patches = dict(patches or {})  # patch node id -> endpoint ("status" or "")
        self._limit = asyncio.Semaphore(max(concurrency, 1))
        self.entries: list[Entry] = entries_of(graph)
        """What the Graph's status records now, objects and contributions (written ahead, then
        settled)."""
        self.contributions: list[Contribution] = contributions_of(graph)
        self._contributed: list[Contribution] = []
        self.release_errors: list[str] = []
        self._applied: dict[Identity, Entry] = {}
        self.reached_cluster = False
        """Some apply of this pass was answered by the server (V-56)."""
        self.prune_errors: list[str] = []

    @classmethod
    def of(
        cls,
        graph_obj: Mapping[str, Any],
        program: Graph | None,
        *,
        kro_client: Client,
        client: Client,
        concurrency: int = 1,
        skip_unchanged: bool = False,
        memory: ObjectMemory | None = None,
        status: StatusWriter | None = None,
        places: Places | None = None,
    ) -> StatusInventory:
        """The ownership of `graph_obj`, whose compiled `program` says which nodes are
        patches (None for a teardown, which compiles nothing: contributions come from the
        status)."""
        nodes = program.nodes.values() if program is not None else ()
        return cls(
            kro_client=kro_client,
            client=client,
            graph=graph_obj,
            field_manager=template_field_manager(str(_meta(graph_obj).get("uid") or "")),
            concurrency=concurrency,
            patches={n.id: patch_endpoint(n.template) for n in nodes if n.type is NodeType.PATCH},
            skip_unchanged=skip_unchanged,
            memory=memory,
            status=status,
            places=places,
        )

    def _client_in(self, cluster: str) -> Client:
        """The client for an object in `cluster` (raises ClusterUnavailable)."""
        if not cluster or self._places is None:
            return self._client
        return self._places.client(cluster)

    # -- the skip memory -------------------------------------------------------------------

    @property
    def remembers(self) -> bool:
        return self._skip_unchanged

    def vouches_for(self, live: Mapping[str, Any]) -> bool:
        meta = _meta(live)
        uid, version = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
        return bool(version) and self._cache.applied_version(uid) == version

    def unchanged(self, owner_obj: Mapping[str, Any], item: Desired) -> bool:
        live = item.observed
        return live is not None and already_applied(live, item.obj, *self._applied_as(item))

    async def begin(self, owner_obj: dict[str, Any]) -> Listed:
        return {}  # the record names each object; the pass reads them itself

    # -- apply -----------------------------------------------------------------------------

    async def apply(
        self, owner_obj: dict[str, Any], batch: Sequence[Desired]
    ) -> tuple[dict[str, Any], Sequence[AppliedResource]]:
        owned = [d for d in batch if _patch_node(d) not in self._patches]
        contributed = [self._contribution(d) for d in batch if _patch_node(d) in self._patches]
        ahead = _union(self.entries, [Entry.of(_node_of(d), d) for d in owned])
        ahead_contributions = _distinct([*self.contributions, *contributed])
        owner_obj = await self._record(owner_obj, ahead, ahead_contributions)
        results = await asyncio.gather(*(self._apply_as(d) for d in batch))
        done = []
        for desired, result in zip(batch, results, strict=True):
            if _patch_node(desired) in self._patches:
                if result.error is None:
                    self._contributed.append(self._contribution(desired))
                continue
            if result.error is None and result.obj is not None:
                # Named as rendered: an apply proven unneeded answers with the object as the
                # pass read it, maybe a metadata-only copy from a cache (PartialObjectMetadata).
                entry = Entry.of(_node_of(desired), desired, result.uid)
                self._applied[entry.identity] = entry
                done.append(entry)
        self.entries = _union(self.entries, done)
        return owner_obj, results

    def _unchanged(
        self, desired: Desired, manager: str, subresource: str = ""
    ) -> AppliedResource | None:
        """The live object as this pass read it, when it provably holds what an apply of
        `desired` by `manager` would send (kro.applyset.cache, the proof RGD children and
        `kro explain` use): the apply would change nothing, so it is not sent."""
        live = desired.observed
        if not self._skip_unchanged or live is None:
            return None
        remembered = not subresource and self._cache.is_current(live, digest(desired.obj))
        if not remembered and not already_applied(live, desired.obj, manager, subresource):
            return None
        if not subresource and manager == self._manager:
            self._cache.remember(live, digest(desired.obj))  # e.g. after a restart: proven now
        self.reached_cluster = True  # the identity that applied it is the one applying now
        return AppliedResource(desired.resource_id, dict(live), changed=False)

    def _contribution(self, desired: Desired) -> Contribution:
        node = _patch_node(desired)
        return Contribution(
            api_version=str(desired.obj.get("apiVersion") or ""),
            kind=str(desired.obj.get("kind") or ""),
            namespace=desired.namespace,
            name=desired.name,
            subresource=self._patches[node],
            field_manager=patch_field_manager(self._uid, node),
            cluster=desired.cluster,
        )

    def _applied_as(self, desired: Desired) -> tuple[str, str]:
        """The field manager and endpoint of `desired`: a patch node's own (V-58), else the
        Graph's template manager."""
        if _patch_node(desired) not in self._patches:
            return self._manager, ""
        contribution = self._contribution(desired)
        return contribution.field_manager, contribution.subresource

    def _holders(self, desired: Desired, conflict: Conflict) -> str:
        """Who, of the managers `conflict` names, holds fields an apply of `desired` may not
        take back, worded for a `FieldManagerConflict` ("" for none, V-62): of a template
        object, another Graph's template manager; of a patch, anyone but this Graph's own."""
        causes = conflict.details.get("causes") or ()
        text = " ".join([str(conflict), *(str(c.get("message") or "") for c in causes)])
        managers = set(_MANAGER.findall(text))
        if _patch_node(desired) in self._patches:
            ours = f"{FIELD_MANAGER_PATCH_PREFIX}{graph_hash(self._uid)}"
            return ", ".join(sorted(m for m in managers if not m.startswith(ours)))
        held = sorted(
            m
            for m in managers
            if m.startswith(FIELD_MANAGER_TEMPLATE_PREFIX)
            and m != self._manager
            and not m.startswith(self._manager + ".")  # OQ-6: our own older manager
        )
        return f"another Graph ({', '.join(held)})" if held else ""

    async def _apply_as(self, desired: Desired) -> AppliedResource:
        """Apply `desired` as its manager, unforced (through a subresource: forced, a status
        belongs to its writer); on a conflict, fields its `_holders` hold make it a
        `FieldManagerConflict`, anyone else's are drift, taken back by a forced apply."""
        manager, subresource = self._applied_as(desired)
        unchanged = self._unchanged(desired, manager, subresource)
        if unchanged is not None:
            return unchanged
        async with self._limit:
            try:
                obj = await self._send(desired, manager, subresource, force=bool(subresource))
            except Conflict as error:
                held = self._holders(desired, error)
                if held:
                    where = f"{desired.namespace}/{desired.name}".lstrip("/")
                    message = f"{desired.gvk.kind} {where}: fields are managed by {held}"
                    return AppliedResource(
                        desired.resource_id, None, error=FieldManagerConflict(message)
                    )
                try:  # drift by someone else: take the fields back
                    obj = await self._send(desired, manager, "", force=True)
                except KubeError as forced:
                    return AppliedResource(desired.resource_id, None, error=forced)
            except KubeError as error:
                return AppliedResource(desired.resource_id, None, error=error)
        self.reached_cluster = True
        if manager == self._manager:
            self._cache.remember(obj, digest(desired.obj))
        before = _meta(desired.observed).get("resourceVersion") if desired.observed else None
        return AppliedResource(
            desired.resource_id, obj, changed=before != _meta(obj).get("resourceVersion")
        )

    async def release(self, contribution: Contribution) -> None:
        """Drop exactly the fields `contribution`'s manager holds; a gone target is done."""
        client = self._client_in(contribution.cluster)
        try:
            await client.apply(
                await _gvr_of(client, contribution),
                contribution.identity_body(),
                field_manager=contribution.field_manager,
                force=True,
                namespace=contribution.namespace or None,
                subresource=contribution.subresource or None,
            )
        except NotFound:
            return

    async def _send(
        self, desired: Desired, manager: str, subresource: str, *, force: bool
    ) -> dict[str, Any]:
        return await self._client_in(desired.cluster).apply(
            desired.gvr,
            desired.obj,
            field_manager=manager,
            force=force,
            namespace=desired.namespace or None,
            subresource=subresource or None,
        )

    # -- prune -----------------------------------------------------------------------------

    async def prune(
        self, owner_obj: dict[str, Any], scope: PruneScope
    ) -> tuple[dict[str, Any], PruneOutcome]:
        """On every pass that did not fail (V-63): delete what the record holds and this pass
        did not apply, release what was recorded and not contributed now; what nodes the pass
        could not resolve hold stays, and what failed to delete or release stays recorded."""
        if scope.failed:
            return owner_obj, PruneOutcome()
        kept_managers = {patch_field_manager(self._uid, n) for n in scope.pending}
        stale = [
            e
            for e in self.entries
            if e.identity not in self._applied and e.node_id not in scope.pending
        ]
        retired = [
            c
            for c in self.contributions
            if c not in self._contributed and c.field_manager not in kept_managers
        ]
        done, failed = await self._remove([*reversed(stale), *retired])
        for item, error in failed:
            errors = self.release_errors if isinstance(item, Contribution) else self.prune_errors
            errors.append(f"{_entry_name(item)}: {error}")
        kept = {item for item, _ in failed}
        gone = {e.identity for e in stale if e not in kept}
        settled = [e for e in self.entries if e.identity not in gone]
        contributions = _distinct(
            [*(c for c in self.contributions if c not in retired or c in kept), *self._contributed]
        )
        owner_obj = await self._record(owner_obj, settled, contributions)
        return owner_obj, PruneOutcome(deleted=any(isinstance(i, Entry) for i in done))

    # -- teardown --------------------------------------------------------------------------

    async def teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        return await self._teardown(owner_obj, act=True)

    async def plan_teardown(self, owner_obj: dict[str, Any]) -> TeardownStep:
        return await self._teardown(owner_obj, act=False)

    async def _teardown(self, owner_obj: dict[str, Any], *, act: bool) -> TeardownStep:
        """Everything recorded at once, in reverse order (a Graph records no waves): DELETE
        each object proven this Graph's, by its UID, and release every contribution, except
        in the clusters given up on (M-16: left in place). What failed blocks the step (a retry
        may fix it) and keeps the finalizer. `act=False`: the step planned from the record
        alone, nothing sent."""
        abandoned = abandoned_clusters(owner_obj)
        left: dict[str, list[str]] = {}
        items: list[Recorded] = []
        recorded: list[Recorded] = [*reversed(self.entries), *self.contributions]
        for item in recorded:
            if item.cluster in abandoned:
                left.setdefault(item.cluster, []).append(_entry_name(item))
            else:
                items.append(item)
        done, failed = await self._remove(items) if act else (items, [])
        plan = tuple(
            f"{'release' if isinstance(i, Contribution) else 'delete'} {_entry_name(i)}"
            for i in done
        )
        if failed:  # in a member: held until back, or abandoned (M-16)
            blocked = "; ".join(_teardown_error(item, error) for item, error in failed)
            return TeardownStep(False, blocked=blocked, transient=True, plan=plan)
        gone = tuple(f'cluster "{c}": {", ".join(names)}' for c, names in sorted(left.items()))
        held = tuple(
            Held(ObjectId(e.api_version, e.kind, e.namespace, e.name), e.node_id, 0, False)
            for e in items
            if isinstance(e, Entry) and not act
        )
        wave = 0 if held else None
        return TeardownStep(act or not plan, wave=wave, plan=plan, held=held, abandoned=gone)

    async def _remove(
        self, items: Sequence[Recorded]
    ) -> tuple[list[Recorded], list[tuple[Recorded, KubeError]]]:
        """DELETE each entry, release each contribution, in this order: what was deleted (an
        entry never proven this Graph's is not) or released, and what failed, with why."""
        done: list[Recorded] = []
        failed: list[tuple[Recorded, KubeError]] = []
        for item in items:
            try:
                if isinstance(item, Contribution):
                    await self.release(item)
                elif not await self.delete(item):
                    continue
                done.append(item)
            except KubeError as error:
                failed.append((item, error))
        return done, failed

    async def delete(self, entry: Entry) -> bool:
        """DELETE the recorded object, preconditioned on its UID (gone or replaced meanwhile
        counts as done); False when nothing of this Graph's is there. An entry written ahead
        without a UID is proven by the live object (see the module), else forgotten."""
        client = self._client_in(entry.cluster)
        gvr = await _gvr_of(client, entry)
        namespace = entry.namespace or None
        uid = entry.uid
        if not uid:
            try:
                live = await client.get(gvr, entry.name, namespace=namespace)
            except NotFound:
                return False
            managers = {m.get("manager") for m in _meta(live).get("managedFields") or ()}
            uid = str(_meta(live).get("uid") or "") if self._manager in managers else ""
            if not uid:
                return False
        try:
            await client.delete(
                gvr,
                entry.name,
                namespace=namespace,
                preconditions={"uid": uid},
                propagation_policy="Background",
            )
        except (NotFound, Conflict):
            return True
        log.info(
            "graph.object_deleted", kind=entry.kind, namespace=entry.namespace, name=entry.name
        )
        return True

    # -- status ----------------------------------------------------------------------------

    async def _record(
        self, owner_obj: dict[str, Any], entries: list[Entry], contributions: list[Contribution]
    ) -> dict[str, Any]:
        """Write `entries` and `contributions` to the Graph's status, when they changed."""
        if entries == self.entries and contributions == self.contributions:
            return owner_obj
        status = {
            **(owner_obj.get("status") or {}),
            "managedResources": [e.as_status() for e in entries],
            "contributions": [c.as_status() for c in contributions],
        }
        written = await self._status.write(GRAPHS, owner_obj, status)
        self.entries, self.contributions = entries, contributions
        return written if written is not None else owner_obj


def _entry_name(item: Recorded) -> str:
    """How status messages name a recorded object (the namespace part empty when cluster-wide)."""
    return f"{item.kind} {item.namespace}/{item.name}"


def _teardown_error(item: Recorded, error: KubeError) -> str:
    """A failed teardown delete or release; one in a member names the way to give up on it."""
    if isinstance(item, Contribution):
        return f"release {_entry_name(item)}: {error}"
    hint = (
        f" (annotate the Graph {ANNOTATION_ABANDON_CLUSTER}={item.cluster} to leave its "
        "objects there)"
        if item.cluster
        else ""
    )
    return f"{_entry_name(item)}: {error}{hint}"


def _node_of(desired: Desired) -> str:
    """The node a desired object was rendered for (its path, V-16)."""
    annotations = _meta(desired.obj).get("annotations") or {}
    return str(annotations.get(ANNOTATION_NODE_PATH) or desired.resource_id)


def _patch_node(desired: Desired) -> str:
    """The node of a batch item: node ids have no `-`, items are `<id>-<index>`."""
    return desired.resource_id.partition("-")[0]


def _distinct(contributions: Sequence[Contribution]) -> list[Contribution]:
    return list(dict.fromkeys(contributions))


async def _gvr_of(client: Client, entry: Recorded) -> GVR:
    group, _, version = entry.api_version.rpartition("/")
    info = await client.mapper.resource_for(GVK(group, version, entry.kind))
    return info.gvr
