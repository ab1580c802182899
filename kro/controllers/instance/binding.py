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

from kro.api.graph import FIELD_MANAGER_TEMPLATE_PREFIX
from kro.controllers.instance.labels import child_annotations, child_labels, collection_selector
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
        return child_labels(owner, self.api, node_id)

    @property
    def foreign_managers(self) -> tuple[str, ...]:
        return (FIELD_MANAGER_TEMPLATE_PREFIX,)  # V-18: a standalone Graph's objects

    @property
    def reads_in_namespace(self) -> bool:
        return False  # kro reads as itself, cluster-wide

    def child_annotations(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        return child_annotations(owner, self.api)

    def collection_selector(self, owner: Mapping[str, Any], node_id: str) -> str:
        return collection_selector(str((owner.get("metadata") or {}).get("uid") or ""), node_id)
