"""kro.api.objects: reading Kubernetes objects held as plain dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """`obj.metadata`, or an empty mapping when the object or its metadata is missing."""
    return (obj or {}).get("metadata") or {}
