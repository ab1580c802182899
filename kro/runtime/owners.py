"""kro.runtime.owners: ownerReferences, the link Kubernetes' garbage collector and watches follow.

An object a controller creates for another (a Deployment for a Website) carries an
ownerReference to it with `controller: true`. Two things then come for free: the API server's
garbage collector deletes the child with its owner, and a controller that `owns` the child kind
hears about changes to children as requests for their owner (kro.runtime.handlers). These
helpers write and read such references the way controller-runtime's controllerutil does,
including its refusals: one controller per object, and no owner in another namespace (the
garbage collector would treat such a reference as dangling and delete the child).

Owners may be dicts or typed models (kro.runtime.typed); children are dicts, changed in place.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from pydantic import BaseModel

from .gvk import split_api_version
from .typed import as_dict

__all__ = [
    "AlreadyOwned",
    "controller_of",
    "is_controlled_by",
    "owner_reference",
    "owner_references",
    "set_controller_reference",
    "set_owner_reference",
]

Owner = Mapping[str, Any] | BaseModel


class AlreadyOwned(ValueError):
    """The object already has another controller; two controllers would fight over it."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def owner_reference(
    owner: Owner, *, controller: bool = True, block_owner_deletion: bool = True
) -> dict[str, Any]:
    """A reference to `owner`, which must have been read from the server (it needs a uid)."""
    o = as_dict(owner)
    meta = _meta(o)
    missing = [f for f in ("apiVersion", "kind") if not o.get(f)]
    missing += [f"metadata.{f}" for f in ("name", "uid") if not meta.get(f)]
    if missing:
        raise ValueError(f"an owner needs {', '.join(missing)} (read it from the server first)")
    ref: dict[str, Any] = {
        "apiVersion": o["apiVersion"],
        "kind": o["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }
    if controller:
        ref["controller"] = True
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    return ref


def _check_namespaces(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
    owner_ns = _meta(owner).get("namespace") or ""
    obj_ns = _meta(obj).get("namespace") or ""
    if owner_ns and owner_ns != obj_ns:
        where = f"namespace {obj_ns!r}" if obj_ns else "a cluster-scoped object"
        raise ValueError(
            f"an owner in namespace {owner_ns!r} cannot own {where}: the garbage collector "
            "would treat the reference as dangling"
        )


def _same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Same group, kind and name: controllerutil's test (versions may differ, uids may lag)."""
    return (
        split_api_version(str(a.get("apiVersion", "")))[0]
        == split_api_version(str(b.get("apiVersion", "")))[0]
        and a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
    )


def _upsert(obj: MutableMapping[str, Any], ref: dict[str, Any]) -> None:
    meta = obj.setdefault("metadata", {})
    refs = [dict(r) for r in meta.get("ownerReferences") or () if isinstance(r, Mapping)]
    for i, existing in enumerate(refs):
        if _same_owner(existing, ref):
            refs[i] = ref
            break
    else:
        refs.append(ref)
    meta["ownerReferences"] = refs


def set_controller_reference(
    owner: Owner, obj: MutableMapping[str, Any], *, block_owner_deletion: bool = True
) -> MutableMapping[str, Any]:
    """Make `owner` the controller of `obj` (in place; returned for chaining).

    Raises AlreadyOwned if another object controls `obj`, and ValueError for an owner in another
    namespace. Setting the same controller again updates its reference (a new uid after the
    owner was recreated).
    """
    o = as_dict(owner)
    _check_namespaces(o, obj)
    ref = owner_reference(o, controller=True, block_owner_deletion=block_owner_deletion)
    current = controller_of(obj)
    if current is not None and not _same_owner(current, ref):
        raise AlreadyOwned(
            f"{_meta(obj).get('name')} is already controlled by "
            f"{current.get('kind')} {current.get('name')}"
        )
    _upsert(obj, ref)
    return obj


def set_owner_reference(owner: Owner, obj: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Add (or refresh) a non-controller reference to `owner`: garbage collection only."""
    o = as_dict(owner)
    _check_namespaces(o, obj)
    ref = owner_reference(o, controller=False, block_owner_deletion=False)
    for existing in _meta(obj).get("ownerReferences") or ():
        if isinstance(existing, Mapping) and _same_owner(existing, ref):
            # Already the controller: keep those flags, only the uid may need refreshing.
            for flag in ("controller", "blockOwnerDeletion"):
                if existing.get(flag):
                    ref[flag] = True
    _upsert(obj, ref)
    return obj


def owner_references(
    obj: Mapping[str, Any] | BaseModel,
    *,
    group: str | None = None,
    kind: str | None = None,
    only_controller: bool = False,
) -> list[Mapping[str, Any]]:
    """The ownerReferences of `obj`, optionally of one group/kind, optionally the controller's."""
    found = []
    for ref in _meta(as_dict(obj)).get("ownerReferences") or ():
        if not isinstance(ref, Mapping):
            continue
        if only_controller and not ref.get("controller"):
            continue
        if kind is not None and ref.get("kind") != kind:
            continue
        if group is not None and split_api_version(str(ref.get("apiVersion", "")))[0] != group:
            continue
        found.append(ref)
    return found


def controller_of(obj: Mapping[str, Any] | BaseModel) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true`, if any."""
    refs = owner_references(obj, only_controller=True)
    return refs[0] if refs else None


def is_controlled_by(obj: Mapping[str, Any] | BaseModel, owner: Owner) -> bool:
    """Whether `owner` (this very object: same uid) is the controller of `obj`."""
    ref = controller_of(obj)
    uid = _meta(as_dict(owner)).get("uid")
    return ref is not None and uid is not None and ref.get("uid") == uid
