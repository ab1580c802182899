"""kro.controllers.instance.binding: an RGD instance as the owner of an engine pass.

The engine (kro.engine) runs a compiled graph for any owning object; this is what makes an RGD
instance one: its children carry the instance labels of §1.Q (kro's ownership, the instance's
uid, name, namespace and kind, the node id), and a collection's existing items are found by the
instance's uid and the node id (F-07). The instance is also the ApplySet parent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kro.api.graph import FIELD_MANAGER_TEMPLATE_PREFIX, capped_label_value, node_id_label_value
from kro.api.names import (
    ANNOTATION_INSTANCE_GROUP,
    ANNOTATION_INSTANCE_NAME,
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
    MANAGED_BY_VALUE,
    OWNED_VALUE,
)
from kro.controllers.instance.labels import KRO_VERSION
from kro.dynamic import ObjectRef
from kro.graph.model import Instance
from kro.runtime.gvk import GVR


@dataclass(frozen=True, slots=True)
class InstanceBinding:
    """Binds one instance (`ref`, of the RGD's generated kind `api`) to an engine pass."""

    gvr: GVR
    ref: ObjectRef
    api: Instance

    def child_labels(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        """Labels on every object kro applies for `node_id` (R-10). A label value holds at most
        63 characters: a longer instance name, group or node id is hashed (V-16), and
        `child_annotations` keeps the full name and group."""
        metadata = owner.get("metadata") or {}
        labels = {
            LABEL_OWNED: OWNED_VALUE,
            LABEL_KRO_VERSION: KRO_VERSION,
            LABEL_INSTANCE_ID: str(metadata.get("uid") or ""),
            LABEL_INSTANCE_NAME: capped_label_value(str(metadata.get("name") or "")),
            LABEL_INSTANCE_GROUP: capped_label_value(self.api.group),
            LABEL_INSTANCE_VERSION: self.api.version,
            LABEL_INSTANCE_KIND: self.api.kind,
            LABEL_MANAGED_BY: MANAGED_BY_VALUE,
            LABEL_NODE_ID: node_id_label_value(node_id),
        }
        if metadata.get("namespace"):
            labels[LABEL_INSTANCE_NAMESPACE] = str(metadata["namespace"])
        return labels

    @property
    def foreign_managers(self) -> tuple[str, ...]:
        return (FIELD_MANAGER_TEMPLATE_PREFIX,)  # V-18: a standalone Graph's objects

    @property
    def reads_in_namespace(self) -> bool:
        return False  # kro reads as itself, cluster-wide

    def child_annotations(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        """The full instance name and group of a child whose labels hold them hashed (V-16)."""
        name = str((owner.get("metadata") or {}).get("name") or "")
        out = {}
        if capped_label_value(name) != name:
            out[ANNOTATION_INSTANCE_NAME] = name
        if capped_label_value(self.api.group) != self.api.group:
            out[ANNOTATION_INSTANCE_GROUP] = self.api.group
        return out

    def collection_selector(self, owner: Mapping[str, Any], node_id: str) -> str:
        """How a collection's existing items are found (F-07)."""
        uid = str((owner.get("metadata") or {}).get("uid") or "")
        return f"{LABEL_INSTANCE_ID}={uid},{LABEL_NODE_ID}={node_id_label_value(node_id)}"
