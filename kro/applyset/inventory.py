"""kro.applyset.inventory: who an ApplySet is and what its parent records — which kinds and
namespaces may hold members — read, validated, projected and rendered (§1.Q, N-15).

The inventory is the only memory kro has of what it created: pruning (R-13) and deletion
(D-03) list members by `part-of` label across exactly these group-kinds x namespaces. That is
why it only ever grows before a batch is applied (`project`, R-11 / N-11) and shrinks only after
a clean prune, and why deletion refuses to run on metadata it cannot trust (D-02): a truncated
inventory would leave children behind forever once the finalizer is gone.

On the parent it looks like:

    labels:      applyset.kubernetes.io/id: applyset-<hash>-v1
    annotations: applyset.kubernetes.io/tooling: kro/<version>
                 applyset.kubernetes.io/contains-group-kinds: ConfigMap,Deployment.apps
                 applyset.kubernetes.io/additional-namespaces: other-ns
                 internal.kro.run/applyset-inventory-hash: sha256:<hash>

The ID and the inventory hash are wire contracts: kubectl's ApplySet tooling, upstream kro and
existing clusters recompute them, so the byte layout below must never change:

* ApplySet ID: `applyset-` + base64url-nopad(sha256("<name>.<namespace>.<Kind>.<group>")) +
  `-v1`. The parent's version is deliberately absent (a served-version change must not orphan
  the set) and a cluster-scoped parent contributes an empty namespace segment.
* Inventory hash: `sha256:` + base64url-nopad(sha256(id NUL gks NUL namespaces)) where `gks` and
  `namespaces` are exactly the rendered `contains-group-kinds` and `additional-namespaces`
  annotation values (sorted, comma-joined). It lets deletion (D-02) detect an inventory that
  somebody edited by hand.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kro.api.names import (
    ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES,
    ANNOTATION_APPLYSET_CLUSTERS,
    ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
    ANNOTATION_APPLYSET_INVENTORY_HASH,
    ANNOTATION_APPLYSET_TOOLING,
    APPLYSET_ID_PREFIX,
    APPLYSET_ID_SUFFIX,
    APPLYSET_TOOLING_PREFIX,
    INVENTORY_HASH_PREFIX,
    LABEL_APPLYSET_ID,
)
from kro.applyset.errors import InvalidInventory
from kro.runtime.gvk import GVK, GVR

__all__ = [
    "GroupKind",
    "Inventory",
    "Parent",
    "applyset_id",
    "empty_inventory_metadata",
    "format_group_kinds",
    "format_namespaces",
    "has_inventory_metadata",
    "inventory_hash",
    "is_rendered",
    "project",
    "read_inventory",
    "render",
    "tooling_for",
]


def _b64_sha256(data: str) -> str:
    digest = hashlib.sha256(data.encode("utf-8")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True, order=True)
class GroupKind:
    """A kind without its version: what the inventory records, because members of one kind may
    be served at several versions over the ApplySet's life."""

    group: str
    kind: str

    @classmethod
    def parse(cls, text: str) -> GroupKind:
        """`Deployment.apps` -> (apps, Deployment); `ConfigMap` -> ("", ConfigMap).

        Kinds never contain dots, so the first dot separates kind from group (kubectl's
        `ParseGroupKind`). Raises ValueError for an empty kind or surrounding whitespace.
        """
        kind, _, group = text.partition(".")
        if not kind or text != text.strip() or any(c.isspace() for c in text):
            raise ValueError(f"invalid group kind {text!r}")
        return cls(group, kind)

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


def format_group_kinds(group_kinds: Iterable[GroupKind]) -> str:
    """The `contains-group-kinds` value: sorted by their string form, comma-joined."""
    return ",".join(sorted({str(gk) for gk in group_kinds}))


def format_namespaces(namespaces: Iterable[str]) -> str:
    """The `additional-namespaces` value: sorted, de-duplicated, comma-joined."""
    return ",".join(sorted(set(namespaces)))


def applyset_id(*, name: str, namespace: str, kind: str, group: str, cluster: str = "") -> str:
    """The ID of the ApplySet whose parent is the named object (N-15). `cluster`: the member
    cluster the parent lives in (hub and spokes, M-21), which kubectl's formula does not
    know: two members' same-named instances sending objects to one cluster must not claim
    each other's (kro-py's own extension; "" for the hub keeps kubectl's ID)."""
    identity = f"{name}.{namespace}.{kind}.{group}"
    digest = _b64_sha256(f"{identity}.{cluster}" if cluster else identity)
    return f"{APPLYSET_ID_PREFIX}{digest}{APPLYSET_ID_SUFFIX}"


def inventory_hash(set_id: str, group_kinds: Iterable[GroupKind], namespaces: Iterable[str]) -> str:
    """The `internal.kro.run/applyset-inventory-hash` value for this inventory."""
    payload = "\x00".join((set_id, format_group_kinds(group_kinds), format_namespaces(namespaces)))
    return INVENTORY_HASH_PREFIX + _b64_sha256(payload)


@dataclass(frozen=True, slots=True)
class Parent:
    """The ApplySet parent (for kro: the instance) — enough to name, list for and write it;
    namespace is "" for a cluster-scoped parent."""

    gvr: GVR
    gvk: GVK
    name: str
    namespace: str
    cluster: str = ""
    """The member cluster the parent lives in (hub and spokes); "" for the hub."""
    id: str = field(init=False, repr=False, compare=False)
    """The ApplySet ID, hashed once: a pass labels every child with it."""

    def __post_init__(self) -> None:
        set_id = applyset_id(
            name=self.name,
            namespace=self.namespace,
            kind=self.gvk.kind,
            group=self.gvk.group,
            cluster=self.cluster,
        )
        object.__setattr__(self, "id", set_id)

    @classmethod
    def from_object(cls, obj: Mapping[str, Any], gvr: GVR, cluster: str = "") -> Parent:
        """Read kind and name from the live parent; the caller resolved its GVR already."""
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            raise ValueError("the ApplySet parent has no metadata.name")
        namespace = str(meta.get("namespace") or "")
        return cls(gvr, GVK.from_object(dict(obj)), name, namespace, cluster)


INVENTORY_ANNOTATIONS: Final = (
    ANNOTATION_APPLYSET_TOOLING,
    ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
    ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES,
    ANNOTATION_APPLYSET_INVENTORY_HASH,
)


def tooling_for(version: str) -> str:
    """The tooling annotation value, `kro/<version>`."""
    return APPLYSET_TOOLING_PREFIX + version


@dataclass(frozen=True, slots=True)
class Inventory:
    """Where an ApplySet's members may live.

    additional_namespaces never needs the parent's own namespace (it is implied, see
    `namespaces`); `of` leaves it out, a hand-written annotation may still list it.
    """

    applyset_id: str
    group_kinds: frozenset[GroupKind] = frozenset()
    additional_namespaces: frozenset[str] = frozenset()
    clusters: frozenset[str] = frozenset()
    """Member clusters that may hold members (M-15), besides the parent's own; kro's own
    annotation, written only when there is one, so an inventory without stays kubectl's."""

    @classmethod
    def of(
        cls,
        parent: Parent,
        members: Iterable[tuple[GroupKind, str]],
        *,
        clusters: Iterable[str] = (),
    ) -> Inventory:
        """The inventory covering exactly `members` — (group-kind, namespace) pairs, namespace
        "" for cluster-scoped objects — in the parent's cluster and `clusters` ("" ignored)."""
        pairs = list(members)
        return cls(
            parent.id,
            frozenset(gk for gk, _ in pairs),
            frozenset(ns for _, ns in pairs if ns and ns != parent.namespace),
            frozenset(c for c in clusters if c),
        )

    @property
    def hash(self) -> str:
        return inventory_hash(self.applyset_id, self.group_kinds, self.additional_namespaces)

    def union(self, other: Inventory) -> Inventory:
        if other.applyset_id != self.applyset_id:
            raise ValueError(
                f"cannot merge inventories of {self.applyset_id} and {other.applyset_id}"
            )
        return Inventory(
            self.applyset_id,
            self.group_kinds | other.group_kinds,
            self.additional_namespaces | other.additional_namespaces,
            self.clusters | other.clusters,
        )

    def namespaces(self, parent: Parent) -> list[str]:
        """Every namespace namespaced members are listed in (D-03, R-13), sorted: the parent's
        own, or `default` for a cluster-scoped parent (upstream's choice), and the others."""
        return sorted({parent.namespace or "default", *self.additional_namespaces})


def project(current: Inventory | None, batch: Inventory) -> Inventory:
    """What to record on the parent before applying `batch` (R-11): the union with what is
    already recorded, so kinds of skipped or removed nodes stay listable until pruned (N-11)."""
    return batch if current is None else current.union(batch)


def render(inventory: Inventory, tooling: str) -> dict[str, Any]:
    """The parent metadata fragment (`labels`, `annotations`) that records `inventory`.
    Without member clusters their annotation is left out: applied by the same field manager,
    leaving it out removes it once the last member cluster was pruned."""
    annotations = {
        ANNOTATION_APPLYSET_TOOLING: tooling,
        ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS: format_group_kinds(inventory.group_kinds),
        ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES: format_namespaces(
            inventory.additional_namespaces
        ),
        ANNOTATION_APPLYSET_INVENTORY_HASH: inventory.hash,
    }
    if inventory.clusters:
        annotations[ANNOTATION_APPLYSET_CLUSTERS] = ",".join(sorted(inventory.clusters))
    return {"labels": {LABEL_APPLYSET_ID: inventory.applyset_id}, "annotations": annotations}


def empty_inventory_metadata(parent: Parent, tooling: str) -> dict[str, Any]:
    """The empty inventory the labeller writes together with the finalizer (R-05), so that a
    parent carrying kro's finalizer always has deletable (valid) ApplySet metadata."""
    return render(Inventory(parent.id), tooling)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def is_rendered(obj: Mapping[str, Any], inventory: Inventory, tooling: str) -> bool:
    """Whether `obj` already carries exactly `render(inventory, tooling)`, so writing it again
    would change nothing."""
    wanted = render(inventory, tooling)
    labels, annotations = _labels(obj), _annotations(obj)
    return all(labels.get(k) == v for k, v in wanted["labels"].items()) and all(
        annotations.get(k) == wanted["annotations"].get(k)
        for k in (*wanted["annotations"], ANNOTATION_APPLYSET_CLUSTERS)
    )


def has_inventory_metadata(obj: Mapping[str, Any]) -> bool:
    """Whether any ApplySet label or annotation is present (partial metadata counts)."""
    annotations = _annotations(obj)
    return LABEL_APPLYSET_ID in _labels(obj) or any(k in annotations for k in INVENTORY_ANNOTATIONS)


def _split(key: str, value: str) -> list[str]:
    if value == "":
        return []
    parts = value.split(",")
    if any(not p or p != p.strip() for p in parts):
        raise InvalidInventory(key=key, reason=f"annotation {key} is not parsable: {value!r}")
    return parts


def _required(obj: Mapping[str, Any], key: str, *, label: bool = False) -> str:
    value = (_labels(obj) if label else _annotations(obj)).get(key)
    if value is None:
        what = "label" if label else "annotation"
        raise InvalidInventory(key=key, reason=f"missing {what} {key}")
    return str(value)


def read_inventory(obj: Mapping[str, Any], parent: Parent) -> Inventory | None:
    """The inventory recorded on the parent `obj`; None when it carries no ApplySet metadata.

    Raises InvalidInventory when the metadata is partial or fails a check of D-02: the ID label
    equals the recomputed ID, tooling starts with `kro/`, both list annotations are present and
    parsable, and the inventory hash (optional, for metadata written by other tools) matches.
    """
    if not has_inventory_metadata(obj):
        return None
    found_id = _required(obj, LABEL_APPLYSET_ID, label=True)
    if found_id != parent.id:
        raise InvalidInventory(
            key=LABEL_APPLYSET_ID,
            reason=f'label {LABEL_APPLYSET_ID} is "{found_id}", expected "{parent.id}"',
        )
    tooling = _required(obj, ANNOTATION_APPLYSET_TOOLING)
    if not tooling.startswith(APPLYSET_TOOLING_PREFIX):
        raise InvalidInventory(
            key=ANNOTATION_APPLYSET_TOOLING,
            reason=f'annotation {ANNOTATION_APPLYSET_TOOLING} is "{tooling}", '
            f'expected a "{APPLYSET_TOOLING_PREFIX}" prefix',
        )
    gk_key = ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS
    try:
        group_kinds = frozenset(GroupKind.parse(p) for p in _split(gk_key, _required(obj, gk_key)))
    except ValueError as err:
        raise InvalidInventory(
            key=gk_key, reason=f"annotation {gk_key} is not parsable: {err}"
        ) from err
    ns_key, clusters_key = ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES, ANNOTATION_APPLYSET_CLUSTERS
    namespaces = frozenset(_split(ns_key, _required(obj, ns_key)))
    annotations = _annotations(obj)
    clusters = frozenset(_split(clusters_key, str(annotations.get(clusters_key) or "")))
    inventory = Inventory(found_id, group_kinds, namespaces, clusters)
    recorded_hash = annotations.get(ANNOTATION_APPLYSET_INVENTORY_HASH)
    if recorded_hash is not None and recorded_hash != inventory.hash:
        raise InvalidInventory(
            key=ANNOTATION_APPLYSET_INVENTORY_HASH,
            reason=f"annotation {ANNOTATION_APPLYSET_INVENTORY_HASH} does not match the "
            "recorded group kinds and namespaces",
        )
    return inventory
