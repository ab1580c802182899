"""kro.applyset.identity: who an ApplySet is, and the hashes that name it (§1.Q, N-15).

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
from typing import Any

from kro.api.names import APPLYSET_ID_PREFIX, APPLYSET_ID_SUFFIX, INVENTORY_HASH_PREFIX
from kro.runtime.gvk import GVK, GVR
from kro.runtime.objectref import ObjectRef

__all__ = [
    "GroupKind",
    "ObjectRef",
    "Parent",
    "applyset_id",
    "format_group_kinds",
    "format_namespaces",
    "inventory_hash",
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
    """The ApplySet parent (for kro: the instance) — enough to name, list for and write it.

    namespace is "" for a cluster-scoped parent.
    """

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

    @property
    def home_namespace(self) -> str:
        """The namespace members are listed in besides `additional-namespaces` (D-03): the
        parent's own, or `default` for a cluster-scoped parent (upstream's choice)."""
        return self.namespace or "default"
