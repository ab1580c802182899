"""kro.applyset.members: find an ApplySet's live members from its inventory, and delete one.

Both pruning (R-13) and deletion (D-03) discover members the same way — LIST with
`applyset.kubernetes.io/part-of=<id>` for every recorded group-kind, in the parent's home
namespace plus `additional-namespaces` (cluster-scoped kinds cluster-wide) — and delete them the
same way: with a UID precondition, so an object deleted and re-created under the same name by
someone else in the meantime is never hit. Lists ask for metadata only: labels, annotations,
UID and deletionTimestamp are all either needs.

A recorded group-kind the server no longer serves (its CRD was removed) cannot have members:
it is skipped after one forced discovery refresh, so a stale cache cannot hide live members.

Neighbours: `inventory` (what to list), `prune` and `deletion` (what to delete, in which order).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from kro.api.names import LABEL_APPLYSET_PART_OF
from kro.applyset._tasks import run_all
from kro.applyset.identity import GroupKind, ObjectRef, Parent
from kro.applyset.inventory import Inventory
from kro.runtime.client import Client
from kro.runtime.discovery import ResourceInfo
from kro.runtime.errors import Conflict, KubeError, NoKindMatch, NotFound
from kro.runtime.gvk import GVK

__all__ = ["DeleteOutcome", "Failure", "Member", "delete_member", "list_members"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Member:
    """One live member, reduced to what ordering, deleting and releasing need; `obj` is the
    whole object when the list asked for bodies (`list_members(..., bodies=True)`), else None.
    `resource_version` is the listed one: a release is preconditioned on it (V-35)."""

    ref: ObjectRef
    gvk: GVK
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    terminating: bool
    obj: Mapping[str, Any] | None = None
    resource_version: str = ""
    finalizers: tuple[str, ...] = ()

    @classmethod
    def from_metadata(
        cls, obj: Mapping[str, Any], info: ResourceInfo, *, body: bool = False
    ) -> Member:
        meta = obj.get("metadata") or {}
        ref = ObjectRef(
            info.gvr,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
        )
        return cls(
            ref,
            info.gvk,
            dict(meta.get("labels") or {}),
            dict(meta.get("annotations") or {}),
            bool(meta.get("deletionTimestamp")),
            obj if body else None,
            str(meta.get("resourceVersion") or ""),
            tuple(str(f) for f in meta.get("finalizers") or ()),
        )


@dataclass(frozen=True, slots=True)
class Failure:
    """A member whose delete (or release: `action` says which) failed for a reason other than
    a conflict or absence."""

    ref: ObjectRef
    error: KubeError
    action: str = ""
    """"" for a delete; what was attempted otherwise (`release orphan`), to name it."""

    @property
    def message(self) -> str:
        """The error, prefixed with the action and the object when it was not a delete."""
        return f"{self.action} {self.ref}: {self.error}" if self.action else str(self.error)


class DeleteOutcome(enum.Enum):
    DELETED = "deleted"
    """The DELETE was accepted; the object may still be terminating (finalizers)."""
    GONE = "gone"
    """It was already gone."""
    CONFLICT = "conflict"
    """The name now belongs to another object (UID precondition failed): look again later."""


async def resolve_group_kind(client: Client, gk: GroupKind) -> ResourceInfo | None:
    """The served resource for `gk` (preferred version first), or None if not served."""
    for attempt in range(2):
        try:
            return await _lookup(client, gk)
        except NoKindMatch:
            if attempt:
                log.debug("applyset.group_kind_not_served", group_kind=str(gk))
                return None
            client.mapper.invalidate()
    raise AssertionError("unreachable")


async def _lookup(client: Client, gk: GroupKind) -> ResourceInfo:
    mapper = client.mapper
    try:
        version = await mapper.preferred_version(gk.group)
        return await mapper.resource_for(GVK(gk.group, version, gk.kind))
    except NoKindMatch:
        for info in await mapper.resources():
            if info.gvk.group == gk.group and info.gvk.kind == gk.kind:
                return info
        raise


async def _list(
    client: Client, info: ResourceInfo, namespace: str | None, selector: str, bodies: bool
) -> list[Member]:
    items, _ = await client.list_all(
        info.gvr, namespace=namespace, label_selector=selector, metadata_only=not bodies
    )
    return [Member.from_metadata(item, info, body=bodies) for item in items]


async def list_members(
    client: Client, parent: Parent, inventory: Inventory, *, bodies: bool = False
) -> list[Member]:
    """Every live object labelled part-of this ApplySet, across the inventory, sorted by
    (group, kind, namespace, name) so callers act deterministically. List errors propagate:
    a partial view must not be mistaken for "nothing left". `bodies`: whole objects, for a
    caller that reads the members as well (metadata only otherwise)."""
    selector = f"{LABEL_APPLYSET_PART_OF}={inventory.applyset_id}"
    namespaces = inventory.namespaces(parent)
    infos = [await resolve_group_kind(client, gk) for gk in sorted(inventory.group_kinds)]
    pages = await run_all(
        (f"applyset.list:{info.gvr}:{ns or ''}", _list(client, info, ns, selector, bodies))
        for info in infos
        if info is not None
        for ns in (namespaces if info.namespaced else [None])
    )
    members = {m.ref.uid or str(m.ref): m for page in pages for m in page}
    return sorted(
        members.values(),
        key=lambda m: (m.gvk.group, m.gvk.kind, m.ref.namespace, m.ref.name),
    )


async def delete_member(client: Client, member: Member) -> DeleteOutcome | Failure:
    """DELETE with a UID precondition; API errors other than NotFound/Conflict come back as a
    Failure so one bad member does not hide the outcome of the others."""
    ref = member.ref
    preconditions = {"uid": ref.uid} if ref.uid else None
    try:
        await client.delete(ref.gvr, ref.name, namespace=ref.namespace, preconditions=preconditions)
    except NotFound:
        return DeleteOutcome.GONE
    except Conflict:
        return DeleteOutcome.CONFLICT
    except KubeError as err:
        return Failure(ref, err)
    log.debug("applyset.member_deleted", gvr=str(ref.gvr), namespace=ref.namespace, name=ref.name)
    return DeleteOutcome.DELETED
