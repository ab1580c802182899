"""kro.runtime._paths: URLs and query parameters for `Client`, and list-item normalisation.

Pure functions, kept apart from client.py so the verbs there read as what they send.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kro.runtime.gvk import GVR


def resource_path(
    gvr: GVR,
    *,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """`/apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>[/<subresource>]]`."""
    parts = [f"/apis/{gvr.group}/{gvr.version}" if gvr.group else f"/api/{gvr.version}"]
    if namespace:
        parts.append(f"namespaces/{namespace}")
    parts.append(gvr.resource)
    if name:
        parts.append(name)
        if subresource:
            parts.append(subresource)
    elif subresource:
        raise ValueError("a subresource needs an object name")
    return "/".join(parts)


def namespace_of(obj: Mapping[str, Any], namespace: str | None) -> str | None:
    if namespace is not None:
        return namespace or None
    ns = (obj.get("metadata") or {}).get("namespace")
    return str(ns) if ns else None


def name_of(obj: Mapping[str, Any]) -> str:
    name = (obj.get("metadata") or {}).get("name")
    if not name:
        raise ValueError("the object has no metadata.name")
    return str(name)


def write_params(field_manager: str | None, dry_run: bool, **extra: str | None) -> dict[str, str]:
    params = {k: v for k, v in extra.items() if v is not None}
    if field_manager:
        params["fieldManager"] = field_manager
    if dry_run:
        params["dryRun"] = "All"
    return params


def selector_params(
    label_selector: str | None, field_selector: str | None, resource_version: str | None
) -> dict[str, str]:
    params: dict[str, str] = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    if resource_version is not None:
        params["resourceVersion"] = resource_version
    return params


def fill_item_kinds(page: dict[str, Any]) -> None:
    """Built-in kinds' list items come without apiVersion/kind; watch events carry them, so fill
    them in and cached objects look the same whichever way they arrived."""
    list_kind = str(page.get("kind") or "")
    if not list_kind.endswith("List"):
        return
    kind = list_kind[: -len("List")]
    api_version = page.get("apiVersion")
    for item in page.get("items") or ():
        if "kind" not in item:
            item["kind"] = kind
        if "apiVersion" not in item and api_version:
            item["apiVersion"] = api_version
