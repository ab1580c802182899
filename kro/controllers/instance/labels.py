"""kro.controllers.instance.labels: what kro writes on instances (§1.Q).

Instances get the RGD labels and kro's finalizer through the labeller (R-05), never
`app.kubernetes.io/managed-by`; their children's marks are the instance binding's
(kro.controllers.instance.binding).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kro import __version__
from kro.api.names import (
    FINALIZER,
    LABEL_KRO_VERSION,
    LABEL_OWNED,
    LABEL_RGD_ID,
    LABEL_RGD_NAME,
    OWNED_VALUE,
)
from kro.applyset import Parent, empty_inventory_metadata, has_inventory_metadata
from kro.runtime.gvk import GVR

KRO_VERSION = f"v{__version__}"


def instance_labels(rgd_name: str, rgd_uid: str) -> dict[str, str]:
    """Labels the labeller keeps on every instance (R-05)."""
    return {
        LABEL_OWNED: OWNED_VALUE,
        LABEL_KRO_VERSION: KRO_VERSION,
        LABEL_RGD_ID: rgd_uid,
        LABEL_RGD_NAME: rgd_name,
    }


def labeller_body(
    gvr: GVR,
    kind: str,
    metadata: Mapping[str, Any],
    labels: Mapping[str, str],
    *,
    tooling: str,
    home: str = "",
) -> tuple[dict[str, Any], str | None]:
    """The labeller's apply (R-05) for the instance with `metadata`: `labels`, kro's finalizer
    and, for an instance without ApplySet metadata, an empty inventory; with the id of the
    ApplySet that write starts (None: the instance records one).

    The body carries the instance's uid: a server-side apply of an object that does not exist
    creates it, and a uid makes the API server refuse that instead (409), so an instance
    deleted since it was read is never brought back as an empty one.
    """
    body_meta: dict[str, Any] = {
        "name": metadata["name"],
        "labels": dict(labels),
        "finalizers": [FINALIZER],
    }
    if metadata.get("uid"):
        body_meta["uid"] = metadata["uid"]
    if metadata.get("namespace"):
        body_meta["namespace"] = metadata["namespace"]
    api_version = f"{gvr.group}/{gvr.version}" if gvr.group else gvr.version
    body = {"apiVersion": api_version, "kind": kind, "metadata": body_meta}
    if has_inventory_metadata({"metadata": metadata}):
        return body, None
    applyset = Parent.from_object(body, gvr, home)
    fragment = empty_inventory_metadata(applyset, tooling)
    body_meta["labels"].update(fragment["labels"])
    body_meta["annotations"] = fragment["annotations"]
    return body, applyset.id
