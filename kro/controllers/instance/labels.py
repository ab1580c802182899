"""kro.controllers.instance.labels: what kro writes on instances and their children (§1.Q).

Children get kro's ownership and instance labels merged *over* the template's labels (kro wins,
R-10) and their deletion wave as an annotation; they get no ownerReferences and no RGD labels
(N-14). Instances get the RGD labels and kro's finalizer through the labeller (R-05), never
`app.kubernetes.io/managed-by`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kro import __version__
from kro.api.graph import capped_label_value, node_id_label_value
from kro.api.names import (
    ANNOTATION_INSTANCE_GROUP,
    ANNOTATION_INSTANCE_NAME,
    FINALIZER,
    LABEL_INSTANCE_GROUP,
    LABEL_INSTANCE_ID,
    LABEL_INSTANCE_KIND,
    LABEL_INSTANCE_NAME,
    LABEL_INSTANCE_NAMESPACE,
    LABEL_INSTANCE_VERSION,
    LABEL_KRO_VERSION,
    LABEL_MANAGED_BY,
    LABEL_NODE_ID,
    LABEL_OWNED,
    LABEL_RGD_ID,
    LABEL_RGD_NAME,
    MANAGED_BY_VALUE,
    OWNED_VALUE,
)
from kro.applyset import Parent, empty_inventory_metadata, has_inventory_metadata
from kro.graph.model import Instance
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
    """The labeller's apply (R-05) for the instance with `metadata`: `labels` and kro's
    finalizer, with the id of the ApplySet that write starts (None: the instance records one).

    The body carries the instance's uid: a server-side apply of an object that does not exist
    creates it, and a uid makes the API server refuse that instead (409), so an instance
    deleted since it was read is never brought back as an empty one.

    An instance without ApplySet metadata gets an empty inventory in the same write (R-05).
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


def child_labels(instance: Mapping[str, Any], api: Instance, node_id: str) -> dict[str, str]:
    """Labels on every object kro applies for `node_id` of `instance` (R-10). A label value
    holds at most 63 characters: a longer instance name, group or node id is hashed (V-16),
    and `child_annotations` keeps the full name and group."""
    metadata = instance.get("metadata") or {}
    labels = {
        LABEL_OWNED: OWNED_VALUE,
        LABEL_KRO_VERSION: KRO_VERSION,
        LABEL_INSTANCE_ID: str(metadata.get("uid") or ""),
        LABEL_INSTANCE_NAME: capped_label_value(str(metadata.get("name") or "")),
        LABEL_INSTANCE_GROUP: capped_label_value(api.group),
        LABEL_INSTANCE_VERSION: api.version,
        LABEL_INSTANCE_KIND: api.kind,
        LABEL_MANAGED_BY: MANAGED_BY_VALUE,
        LABEL_NODE_ID: node_id_label_value(node_id),
    }
    if metadata.get("namespace"):
        labels[LABEL_INSTANCE_NAMESPACE] = str(metadata["namespace"])
    return labels


def child_annotations(instance: Mapping[str, Any], api: Instance) -> dict[str, str]:
    """The full instance name and group of a child whose labels hold them hashed (V-16)."""
    name = str((instance.get("metadata") or {}).get("name") or "")
    out = {}
    if capped_label_value(name) != name:
        out[ANNOTATION_INSTANCE_NAME] = name
    if capped_label_value(api.group) != api.group:
        out[ANNOTATION_INSTANCE_GROUP] = api.group
    return out


def collection_selector(instance_uid: str, node_id: str) -> str:
    """How a collection's existing items are found (F-07)."""
    return f"{LABEL_INSTANCE_ID}={instance_uid},{LABEL_NODE_ID}={node_id_label_value(node_id)}"
