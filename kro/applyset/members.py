"""kro.applyset.members: find an ApplySet's live members from its inventory, delete or release
them, and run such batches of calls concurrently (`run_all`).

Both pruning (R-13) and deletion (D-03) discover members the same way — LIST with
`applyset.kubernetes.io/part-of=<id>` for every recorded group-kind, in the parent's home
namespace plus `additional-namespaces` (cluster-scoped kinds cluster-wide) — and delete them the
same way: with a UID precondition, so an object deleted and re-created under the same name by
someone else in the meantime is never hit. Lists ask for metadata only (labels, annotations,
UID and deletionTimestamp are all either needs) unless the caller reads the bodies too.

A recorded group-kind the server no longer serves (its CRD was removed) cannot have members:
it is skipped after one forced discovery refresh, so a stale cache cannot hide live members.

Release (deletionPolicy, V-33..V-35, docs/compatibility.md): a member whose live object says
`internal.kro.run/deletion-policy: Orphaned` (exactly that: the object decides, not the RGD, so
a changed policy takes effect once an apply records it) is released wherever kro would delete
it, by deletion and by prune. Releasing removes kro's claim (`release_patch`; with the part-of
label gone no list of the ApplySet finds it again) and nothing else: ownerReferences stay, so
one pointing at the owner still lets the garbage collector delete the object. The merge patch
carries the listed resourceVersion: a member changed since it was listed is a conflict, looked
at again on the next pass; one already gone is released; one without kro's keys is not written.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import structlog

from kro.api.names import (
    ANNOTATION_DELETION_POLICY,
    DELETION_POLICY_ORPHANED,
    FIELD_MANAGER_APPLYSET,
    LABEL_APPLYSET_PART_OF,
    LABEL_MANAGED_BY,
    MANAGED_BY_VALUE,
    RESERVED_LABEL_PREFIXES,
)
from kro.applyset.inventory import GroupKind, Inventory, Parent
from kro.runtime.client import Client
from kro.runtime.discovery import ResourceInfo
from kro.runtime.errors import Conflict, KubeError, NoKindMatch, NotFound
from kro.runtime.gvk import GVK
from kro.runtime.objectref import ObjectRef

__all__ = [
    "ON_DELETION",
    "ON_PRUNE",
    "Failure",
    "Member",
    "Outcome",
    "Settled",
    "delete_member",
    "is_orphaned",
    "list_members",
    "release_member",
    "release_patch",
    "run_all",
    "settle",
]

log = structlog.get_logger(__name__)

T = TypeVar("T")


async def run_all(
    calls: Iterable[tuple[str, Coroutine[Any, Any, T]]], *, limit: int | None = None
) -> list[T]:
    """Run named coroutines concurrently, at most `limit` at a time; results in input order.

    Unlike a TaskGroup, one failure does not cancel the others: a cancelled SSA or DELETE may
    or may not have reached the server, which would make per-resource results lie. Every task
    is awaited (cancelling the caller cancels them all), then the first failure is raised as
    itself; calls that report per-resource errors catch them inside.
    """
    named = list(calls)
    gate = asyncio.Semaphore(limit if limit is not None and limit > 0 else max(len(named), 1))

    async def bounded(coro: Coroutine[Any, Any, T]) -> T:
        async with gate:
            return await coro

    tasks = [asyncio.create_task(bounded(coro), name=name) for name, coro in named]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return cast("list[T]", results)


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
        return cls(
            ObjectRef.of(info.gvr, obj),
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


class Outcome(enum.Enum):
    """What one delete or release of a member did."""

    DELETED = "deleted"
    """The DELETE was accepted; the object may still be terminating (finalizers)."""
    RELEASED = "released"
    """kro's keys were removed; the object stays (see the module docstring)."""
    UNCLAIMED = "unclaimed"
    """Nothing of kro's was on it: no write."""
    GONE = "gone"
    """It was already gone."""
    CONFLICT = "conflict"
    """It changed since it was listed (the name now belongs to another object, or a release's
    resourceVersion precondition failed): look again on the next pass."""


@dataclass(frozen=True, slots=True)
class Settled:
    """What `settle` did. done: deleted or released (members already gone or without any of
    kro's keys need nothing and are not listed). conflicts and failures: still claimed."""

    done: tuple[ObjectRef, ...] = ()
    conflicts: tuple[ObjectRef, ...] = ()
    failures: tuple[Failure, ...] = ()


async def settle(
    members: Sequence[Member],
    act: Callable[[Member], Coroutine[Any, Any, Outcome | Failure]],
    task: str,
) -> Settled:
    """`act` (a delete or a release) on every member concurrently, the outcomes summed up."""
    outcomes = await run_all((f"applyset.{task}:{m.ref}", act(m)) for m in members)
    pairs = list(zip(members, outcomes, strict=True))
    return Settled(
        done=tuple(m.ref for m, o in pairs if o in (Outcome.DELETED, Outcome.RELEASED)),
        conflicts=tuple(m.ref for m, o in pairs if o is Outcome.CONFLICT),
        failures=tuple(o for o in outcomes if isinstance(o, Failure)),
    )


async def resolve_group_kind(client: Client, gk: GroupKind) -> ResourceInfo | None:
    """The served resource for `gk` (preferred version first, else any served version), or
    None if not served even after one forced discovery refresh."""
    mapper = client.mapper
    for attempt in range(2):
        try:
            version = await mapper.preferred_version(gk.group)
            return await mapper.resource_for(GVK(gk.group, version, gk.kind))
        except NoKindMatch:
            for info in await mapper.resources():
                if info.gvk.group == gk.group and info.gvk.kind == gk.kind:
                    return info
            if not attempt:
                mapper.invalidate()
    log.debug("applyset.group_kind_not_served", group_kind=str(gk))
    return None


async def list_members(
    client: Client, parent: Parent, inventory: Inventory, *, bodies: bool = False
) -> list[Member]:
    """Every live object labelled part-of this ApplySet, across the inventory, sorted by
    (group, kind, namespace, name) so callers act deterministically. List errors propagate:
    a partial view must not be mistaken for "nothing left". `bodies`: whole objects, for a
    caller that reads the members as well (metadata only otherwise)."""
    selector = f"{LABEL_APPLYSET_PART_OF}={inventory.applyset_id}"

    async def page(info: ResourceInfo, namespace: str | None) -> list[Member]:
        items, _ = await client.list_all(
            info.gvr, namespace=namespace, label_selector=selector, metadata_only=not bodies
        )
        return [Member.from_metadata(item, info, body=bodies) for item in items]

    namespaces = inventory.namespaces(parent)
    infos = [await resolve_group_kind(client, gk) for gk in sorted(inventory.group_kinds)]
    pages = await run_all(
        (f"applyset.list:{info.gvr}:{ns or ''}", page(info, ns))
        for info in infos
        if info is not None
        for ns in (namespaces if info.namespaced else [None])
    )
    members = {m.ref.uid or str(m.ref): m for page in pages for m in page}
    return sorted(
        members.values(),
        key=lambda m: (m.gvk.group, m.gvk.kind, m.ref.namespace, m.ref.name),
    )


async def delete_member(client: Client, member: Member) -> Outcome | Failure:
    """DELETE with a UID precondition; API errors other than NotFound/Conflict come back as a
    Failure so one bad member does not hide the outcome of the others."""
    ref = member.ref
    preconditions = {"uid": ref.uid} if ref.uid else None
    try:
        await client.delete(ref.gvr, ref.name, namespace=ref.namespace, preconditions=preconditions)
    except NotFound:
        return Outcome.GONE
    except Conflict:
        return Outcome.CONFLICT
    except KubeError as err:
        return Failure(ref, err)
    log.debug("applyset.member_deleted", gvr=str(ref.gvr), namespace=ref.namespace, name=ref.name)
    return Outcome.DELETED


ON_PRUNE = "release orphan"
ON_DELETION = "release orphaned resource"
"""How a failed release is named (`Failure.action`) by prune and by an owner's deletion."""


def is_orphaned(member: Member) -> bool:
    """Whether the live member asks to be released rather than deleted (V-33)."""
    return member.annotations.get(ANNOTATION_DELETION_POLICY) == DELETION_POLICY_ORPHANED


def _kro_key(key: str) -> bool:
    return key.startswith(RESERVED_LABEL_PREFIXES)


def release_patch(member: Member) -> dict[str, object] | None:
    """The merge patch that releases `member`: the labels and annotations that state kro's
    claim on it, nulled (V-35; None: there are none). The resourceVersion in it makes the API
    server refuse the patch if the object changed since it was listed."""
    labels = [
        key
        for key, value in sorted(member.labels.items())
        if _kro_key(key)
        or key == LABEL_APPLYSET_PART_OF
        or (key == LABEL_MANAGED_BY and value == MANAGED_BY_VALUE)
    ]
    annotations = sorted(k for k in member.annotations if _kro_key(k))
    if not labels and not annotations:
        return None
    metadata: dict[str, object] = {
        "resourceVersion": member.resource_version,
        "labels": dict.fromkeys(labels),
        "annotations": dict.fromkeys(annotations),
    }
    return {"metadata": {key: value for key, value in metadata.items() if value}}


async def release_member(
    client: Client, member: Member, *, action: str = ON_PRUNE
) -> Outcome | Failure:
    """Release one member (see the module docstring); API errors other than NotFound and
    Conflict come back as a Failure named `action`, so the caller keeps its claim."""
    patch = release_patch(member)
    if patch is None:
        return Outcome.UNCLAIMED
    ref = member.ref
    try:
        await client.patch(
            ref.gvr,
            ref.name,
            patch,
            namespace=ref.namespace or None,
            patch_type="merge",
            field_manager=FIELD_MANAGER_APPLYSET,
        )
    except NotFound:
        return Outcome.GONE
    except Conflict:
        log.debug("applyset.release_conflict", gvr=str(ref.gvr), name=ref.name)
        return Outcome.CONFLICT
    except KubeError as err:
        return Failure(ref, err, action)
    log.info(
        "applyset.member_released",
        gvr=str(ref.gvr),
        namespace=ref.namespace,
        name=ref.name,
        uid=ref.uid,
    )
    return Outcome.RELEASED
