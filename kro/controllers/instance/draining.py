"""kro.controllers.instance.draining: the instances of a deleted RGD, until none is left.

Upstream deregisters an RGD's instance controller the moment the RGD is deleted (P-11) and
keeps the CRD: instances stay `Ready=True` with nobody reconciling them, and deleting one hangs
on its finalizer forever. Here the kind stays registered with this reconciler, which needs no
graph: a live instance says `InstanceManaged=False`, reason `ResourceGraphDefinitionDeleted`
(children neither applied nor pruned), and deleting one works as always (D-02). Each instance
gone calls `on_instance_gone()`, so the RGD controller deregisters the kind once none is left;
a re-created RGD's reconciler, registered over this one, takes the instances back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from kro.api.names import (
    CONDITION_INSTANCE_MANAGED,
    INSTANCE_STATE_ERROR,
    REASON_RESOURCE_GRAPH_DEFINITION_DELETED,
    STATUS_FALSE,
)
from kro.controllers.instance.reconciler import InstanceReconciler
from kro.controllers.instance.status import InstanceStatus
from kro.dynamic import ObjectRef
from kro.graph.model import Graph
from kro.runtime.reconcile import Result

log = structlog.get_logger(__name__)


class DrainingReconciler(InstanceReconciler):
    """Marks the instances of a deleted RGD and serves their deletion; see the module."""

    def __init__(self, *, on_instance_gone: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._on_instance_gone = on_instance_gone

    def program(self, ref: ObjectRef) -> Graph | None:
        """None: no pass is skipped as settled (a pass of the RGD's reconciler does not vouch
        for marking the instance), and nothing is labelled ahead of a read."""
        return None

    async def sync(self, instance: dict[str, Any], parent: ObjectRef) -> Result:
        await self.watches.forget(parent)  # no graph any more: children are not followed
        status = InstanceStatus(instance)
        message = (
            f'ResourceGraphDefinition "{self.rgd_name}" was deleted; kro no longer reconciles '
            "this instance. Delete the instance to delete its resources, or re-create the "
            "ResourceGraphDefinition to resume reconciliation"
        )
        status.set(
            CONDITION_INSTANCE_MANAGED,
            STATUS_FALSE,
            REASON_RESOURCE_GRAPH_DEFINITION_DELETED,
            message,
        )
        await self._write_status(instance, status.build(INSTANCE_STATE_ERROR, None))
        log.debug("instance.rgd_deleted")
        return Result()

    async def forget(self, parent: ObjectRef) -> None:
        """The instance is gone (or its deletion done): one fewer to wait for."""
        await super().forget(parent)
        self._on_instance_gone()
