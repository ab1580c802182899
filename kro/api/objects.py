"""kro.api.objects: reading Kubernetes objects held as plain dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """`obj.metadata`, or an empty mapping when the object or its metadata is missing."""
    return (obj or {}).get("metadata") or {}


def status_update(obj: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
    """The body of a status write (an UpdateStatus, or a server-side apply of `/status`) that
    gives `obj` this `status`. kube-apiserver takes nothing but `status` from it (and the uid
    and resourceVersion as preconditions), so the rest of the object, its managedFields above
    all, is neither copied nor encoded nor decoded again."""
    meta = metadata(obj)
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if meta.get(k)
        },
        "status": status,
    }
