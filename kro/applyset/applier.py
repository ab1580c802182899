"""kro.applyset.applier: apply one batch of desired objects as an ApplySet (R-11, R-12).

Order of a pass, and why:

1. Refuse the batch if two resource IDs name the same object (`DuplicateResources`): both
   would be force-applied by one manager and flip-flop forever.
2. Record the projected inventory — recorded union batch — on the parent *before* any child is
   written (field manager `kro.run/applyset-parent`, force). If we crashed after creating a
   child of a new kind, the parent already lists that kind, so prune and deletion find it.
3. Apply every child concurrently with server-side apply (field manager `kro.run/applyset`,
   force), adding `applyset.kubernetes.io/part-of=<id>`. A live object owned by another
   ApplySet is reported and left alone; one without the label is adopted (N-13).

Results are per resource: one failure does not stop the others (N-36), and the caller decides
(prune only after a clean pass, R-13). Steady state costs zero writes: an unchanged child is
not applied (kro.applyset.cache), nor a parent that already carries the projected inventory.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from typing import Any

import structlog

from kro.api.names import (
    FIELD_MANAGER_APPLYSET,
    FIELD_MANAGER_APPLYSET_PARENT,
    LABEL_APPLYSET_PART_OF,
)
from kro.api.objects import metadata as _meta
from kro.applyset.cache import AppliedCache, MemberLedger, already_applied, digest, uid_and_version
from kro.applyset.contest import Contest, FieldContests, Review, without_paths
from kro.applyset.errors import ApplySetError, DuplicateResources, OwnershipConflict
from kro.applyset.inventory import (
    GroupKind,
    Inventory,
    Parent,
    is_rendered,
    project,
    read_inventory,
    render,
)
from kro.applyset.members import run_all
from kro.runtime.client import Client
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVK, GVR
from kro.runtime.memory import ObjectMemory

__all__ = ["AppliedResource", "Applier", "ApplierOptions", "ApplyResult", "Desired"]

DEFAULT_APPLY_CONCURRENCY = 20

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Desired:
    """One object the caller wants to exist, exactly as it should be applied.

    resource_id: the ApplySet resource ID (node ID, or `<node>-<i>` for collection items);
        names the resource in results and conflict messages.
    obj: the full manifest — apiVersion, kind, metadata.name, metadata.namespace for namespaced
        kinds, labels/annotations already decorated (R-10). Not mutated.
    gvr, namespaced: from the caller's RESTMapper lookup of obj's kind.
    observed: the live object as the caller just read it (GET), or None when it does not exist.
        Used for the ownership check, "changed", and the skip proof; it must not be older than
        a GET made during this reconcile.
    cluster: the member cluster the object lives in (M-11); "" for the parent's own cluster.
    """

    resource_id: str
    obj: Mapping[str, Any]
    gvr: GVR
    namespaced: bool
    observed: Mapping[str, Any] | None = None
    cluster: str = ""

    def __post_init__(self) -> None:
        if not self.obj.get("apiVersion") or not self.obj.get("kind"):
            raise ValueError(f"desired object {self.resource_id!r} has no apiVersion/kind")
        if not self.name:
            raise ValueError(f"desired object {self.resource_id!r} has no metadata.name")
        if self.namespaced and not self.namespace:
            raise ValueError(
                f"desired object {self.resource_id!r} is namespaced but has no metadata.namespace"
            )

    @property
    def gvk(self) -> GVK:
        return GVK.from_object(dict(self.obj))

    @property
    def name(self) -> str:
        return str(_meta(self.obj).get("name") or "")

    @property
    def namespace(self) -> str:
        """metadata.namespace for namespaced kinds, "" for cluster-scoped ones."""
        return str(_meta(self.obj).get("namespace") or "") if self.namespaced else ""


@dataclass(frozen=True, slots=True)
class AppliedResource:
    """The outcome for one desired object.

    obj: the server's answer to the apply, or the observed object when the apply was skipped;
        None on error.
    changed: the object was created or its resourceVersion moved (R-12).
    skipped: no request was sent because nothing would change.
    error: an API error, or OwnershipConflict; None on success.
    contests: fields of this object another manager keeps changing (`kro.applyset.contest`).
    retry_after_s: a contested field was left out for a backoff; apply again after this long.
    """

    resource_id: str
    obj: dict[str, Any] | None
    changed: bool = False
    skipped: bool = False
    error: KubeError | ApplySetError | None = None
    contests: tuple[Contest, ...] = ()
    retry_after_s: float | None = None
    cluster: str = ""
    """The member cluster the object lives in (`Desired.cluster`)."""

    @property
    def uid(self) -> str:
        return str(_meta(self.obj).get("uid") or "")


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """One pass: the parent as it now stands, the inventories, and per-resource outcomes.

    inventory: what the parent records now (projected superset).
    batch_inventory: what this batch alone covers; the parent shrinks to it after a clean prune.
    parent_obj: the parent after the inventory write (or as given, if no write was needed).
    """

    parent: Parent
    parent_obj: dict[str, Any]
    inventory: Inventory
    batch_inventory: Inventory
    resources: tuple[AppliedResource, ...]

    @property
    def has_errors(self) -> bool:
        return any(r.error is not None for r in self.resources)

    @property
    def applied_uids(self) -> frozenset[str]:
        """UIDs of every member this pass applied or confirmed; prune keeps exactly these."""
        return frozenset(r.uid for r in self.resources if r.error is None and r.uid)


@dataclass(frozen=True, kw_only=True)
class ApplierOptions:
    """tooling: the `applyset.kubernetes.io/tooling` value, `kro/<version>` (`tooling_for`).
    concurrency: the most applies of one batch in flight at once (`--apply-concurrency`,
        default 20 as upstream; 0 or less means 20): the whole batch shares the bound, so no
        more requests are in flight than upstream allows for one collection (V-09)."""

    tooling: str
    concurrency: int = DEFAULT_APPLY_CONCURRENCY


def combined(results: Sequence[ApplyResult]) -> ApplyResult:
    """Several applies of one pass (its waves) as one result for the prune: the parent and
    inventory as the last left them, every resource, and the union of the batches."""
    last = results[-1]
    if len(results) == 1:
        return last
    return ApplyResult(
        parent=last.parent,
        parent_obj=last.parent_obj,
        inventory=last.inventory,
        batch_inventory=reduce(Inventory.union, (r.batch_inventory for r in results)),
        resources=tuple(r for result in results for r in result.resources),
    )


def check_duplicates(desired: Sequence[Desired]) -> None:
    """Raise DuplicateResources if two resource IDs render the same object (R-11)."""
    seen: dict[tuple[str, str, str, str, str, str], str] = {}
    conflicts: list[tuple[str, str]] = []
    for item in desired:
        gvk = item.gvk
        key = (gvk.group, gvk.version, gvk.kind, item.cluster, item.namespace, item.name)
        first = seen.setdefault(key, item.resource_id)
        if first != item.resource_id:
            conflicts.append((item.resource_id, first))
    if conflicts:
        raise DuplicateResources(conflicts)


class Applier:
    """Applies ApplySet batches; long-lived, because its cache makes steady state write-free
    (keyed by object UID: one per controller process is enough)."""

    def __init__(
        self, client: Client, options: ApplierOptions, *, memory: ObjectMemory | None = None
    ) -> None:
        """`memory`: the process's one skip memory (kro.runtime.memory), shared with whoever
        else remembers facts about objects; default: one of the applier's own."""
        self._client = client
        self._options = options
        self.memory = memory if memory is not None else ObjectMemory()
        self._cache = AppliedCache(memory=self.memory)
        self.members = MemberLedger(memory=self.memory)
        """What this process knows of each ApplySet's members (kro.applyset.cache)."""
        self._contests = FieldContests(FIELD_MANAGER_APPLYSET)

    @property
    def tooling(self) -> str:
        return self._options.tooling

    def vouches_for(self, live: Mapping[str, Any]) -> bool:
        """Whether `live`, even without its managedFields or content, is exactly what our
        last apply of it left (same uid and resourceVersion) with no contested field: then
        the skip decision and a metadata read need nothing more of it (kro.applyset.cache)."""
        uid, version = uid_and_version(live)
        known = self._cache.applied_version(uid)
        return bool(version) and known == version and not self._contests.tracks(uid)

    async def apply(
        self,
        parent_obj: Mapping[str, Any],
        parent_gvr: GVR,
        desired: Sequence[Desired],
        *,
        clients: Callable[[str], Client] | None = None,
        home: str = "",
    ) -> ApplyResult:
        """Project the inventory onto the parent, then apply `desired` concurrently.

        clients: the client of each member cluster an item names (`Desired.cluster`, M-11);
            the parent and the items of its own cluster use the applier's client. The member
            clusters are recorded on the parent with the rest of the inventory, ahead (M-15).
        home: the member cluster the parent lives in (hub and spokes), part of its ID.
        Raises DuplicateResources or InvalidInventory before writing anything, and KubeError if
        the parent's inventory cannot be written (then no child is applied either); a member
        cluster that cannot be reached is that item's error.
        """
        parent = Parent.from_object(parent_obj, parent_gvr, home)
        check_duplicates(desired)
        batch = Inventory.of(
            parent,
            ((GroupKind(d.gvk.group, d.gvk.kind), d.namespace) for d in desired),
            clusters=(d.cluster for d in desired),
        )
        projected = project(read_inventory(parent_obj, parent), batch)
        written = await self.ensure_inventory(parent, parent_obj, projected)
        resources = await run_all(
            (
                (f"applyset.apply:{d.resource_id}", self._apply_one(parent, d, clients))
                for d in desired
            ),
            limit=max(self._options.concurrency, 0) or DEFAULT_APPLY_CONCURRENCY,
        )
        return ApplyResult(
            parent=parent,
            parent_obj=written if written is not None else copy.deepcopy(dict(parent_obj)),
            inventory=projected,
            batch_inventory=batch,
            resources=tuple(resources),
        )

    async def ensure_inventory(
        self, parent: Parent, parent_obj: Mapping[str, Any], inventory: Inventory
    ) -> dict[str, Any] | None:
        """Make the parent record `inventory`; returns the written parent, or None if it
        already did (no request sent). Also how the caller shrinks it after a clean prune."""
        if is_rendered(parent_obj, inventory, self._options.tooling):
            return None
        namespace = {"namespace": parent.namespace} if parent.namespace else {}
        metadata = {"name": parent.name, **namespace, **render(inventory, self._options.tooling)}
        body = {"apiVersion": parent.gvk.api_version, "kind": parent.gvk.kind, "metadata": metadata}
        written = await self._client.apply(
            parent.gvr,
            body,
            field_manager=FIELD_MANAGER_APPLYSET_PARENT,
            force=True,
            namespace=parent.namespace,
        )
        log.debug(
            "applyset.inventory_written",
            namespace=parent.namespace,
            name=parent.name,
            group_kinds=len(inventory.group_kinds),
        )
        return written

    async def _apply_one(
        self, parent: Parent, item: Desired, clients: Callable[[str], Client] | None
    ) -> AppliedResource:
        observed = item.observed
        owner = str((_meta(observed).get("labels") or {}).get(LABEL_APPLYSET_PART_OF) or "")
        if observed is not None and owner and owner != parent.id:
            conflict = OwnershipConflict(item.namespace, item.name, item.gvk, owner, parent.id)
            return AppliedResource(item.resource_id, None, error=conflict, cluster=item.cluster)
        body = member_body(parent, item)
        review = self._contests.review(item.resource_id, body, observed)
        if review.omit:
            body = without_paths(body, review.omit)
        body_digest = digest(body)
        if observed is not None and (
            self._cache.is_current(observed, body_digest)
            or (self.memory.enabled and already_applied(observed, body, FIELD_MANAGER_APPLYSET))
        ):
            self._cache.remember(observed, body_digest)  # e.g. after a restart: proven now
            skipped = AppliedResource(item.resource_id, copy.deepcopy(dict(observed)), skipped=True)
            return _reviewed(skipped, review, item)
        try:
            client = clients(item.cluster) if item.cluster and clients else self._client
            applied = await client.apply(
                item.gvr,
                body,
                field_manager=FIELD_MANAGER_APPLYSET,
                force=True,
                namespace=item.namespace,
            )
        except KubeError as err:
            # Only the error class: a server message may quote the submitted object.
            log.debug(
                "applyset.apply_failed", resource_id=item.resource_id, error=type(err).__name__
            )
            return _reviewed(AppliedResource(item.resource_id, None, error=err), review, item)
        self._cache.remember(applied, body_digest)
        before = _meta(observed).get("resourceVersion")
        changed = observed is None or _meta(applied).get("resourceVersion") != before
        log.debug("applyset.resource_applied", resource_id=item.resource_id, changed=changed)
        return _reviewed(AppliedResource(item.resource_id, applied, changed=changed), review, item)


def member_body(parent: Parent, item: Desired) -> dict[str, Any]:
    """What is applied for `item`: its object, marked as a member of `parent`'s ApplySet."""
    body = copy.deepcopy(dict(item.obj))
    metadata = body.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), LABEL_APPLYSET_PART_OF: parent.id}
    return body


def _reviewed(resource: AppliedResource, review: Review, item: Desired) -> AppliedResource:
    """`resource` with what the contest review of `item` found, in `item`'s cluster."""
    return replace(
        resource, contests=review.contests, retry_after_s=review.retry_after_s, cluster=item.cluster
    )
