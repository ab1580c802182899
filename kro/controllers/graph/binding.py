"""kro.controllers.graph.binding: how a Graph marks what it applies (V-61).

Every template object carries `kro.run/node-id`; the items of a collection also carry the
Graph's UID in `kro.run/instance-id` (with their index and the collection's size), which, with
the node id, finds a collection's existing items. Nothing else of kro's: no `kro.run/owned`, no
ApplySet labels, no ownerReferences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kro.api.graph import node_id_label_value
from kro.api.names import LABEL_INSTANCE_ID, LABEL_NODE_ID
from kro.dynamic import ObjectRef
from kro.graph.model import Graph, NodeType
from kro.runtime.gvk import GVR

__all__ = ["GraphBinding"]


@dataclass(frozen=True, slots=True)
class GraphBinding:
    """`OwnerBinding` of one Graph (kro.engine.owner)."""

    gvr: GVR
    ref: ObjectRef
    graph: Graph

    def child_labels(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        labels = {LABEL_NODE_ID: node_id_label_value(node_id)}
        if self.graph.node(node_id).type is NodeType.COLLECTION:
            labels[LABEL_INSTANCE_ID] = _uid(owner)
        return labels

    @property
    def foreign_managers(self) -> tuple[str, ...]:
        return ()  # another Graph's manager is a FieldManagerConflict at apply (V-62)

    @property
    def reads_in_namespace(self) -> bool:
        return True  # as the Graph's ServiceAccount, which may not list across namespaces

    def child_annotations(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        return {}  # the node path, written for every owner (kro.engine.decorate), is all

    def collection_selector(self, owner: Mapping[str, Any], node_id: str) -> str:
        return f"{LABEL_NODE_ID}={node_id_label_value(node_id)},{LABEL_INSTANCE_ID}={_uid(owner)}"


def _uid(owner: Mapping[str, Any]) -> str:
    return str((owner.get("metadata") or {}).get("uid") or "")
