"""kro.controllers.spokes: hub and spokes (M-20..M-22), RGDs on the hub, instances in members.

With `--enable-multicluster` every RGD's CRD is installed on every Ready member cluster (and on
a member that joins later: the registry's `ready` brings every RGD back), except an RGD labelled
`kro.run/distribute: "false"`, which stays on the hub. A member's instances are reconciled
there: the hub runs, per member, a spoke of its own (the member's informers, its own queue and
workers, an applier over its client), serving the same compiled revisions as the hub. So an
instance's children, status and finalizer live in its member (unless a target sends a child
elsewhere: that child carries `kro.run/originating-cluster`), an instance is known by
(cluster, namespace, name), and a member with a long queue or an outage holds up no one but
itself: its spoke has its own workers, and its informers list and watch it again when it
comes back, so its instances are reconciled without an edit.

The RGD's `status.clusters[]` says per member whether the kind is served there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from kro.api.names import LABEL_DISTRIBUTE
from kro.api.objects import metadata as _meta
from kro.controllers.crd import CRDError, delete_crd_if_owned, ensure_crd
from kro.controllers.instance.kinds import InstanceControllers, Kind
from kro.controllers.members import RegistryMembers
from kro.dynamic import DynamicController
from kro.engine.places import ClusterUnavailable
from kro.runtime.client import Client
from kro.runtime.errors import KubeError

__all__ = ["Spoke", "SpokeFactory", "Spokes", "distributed"]

log = structlog.get_logger(__name__)


def distributed(rgd: Mapping[str, Any]) -> bool:
    """M-20: whether the RGD's kind is served in the members (`kro.run/distribute: "false"`
    keeps it on the hub)."""
    return str((_meta(rgd).get("labels") or {}).get(LABEL_DISTRIBUTE) or "") != "false"


@dataclass
class Spoke:
    """One member's instance controllers: its client, its queue and workers, its kinds."""

    cluster: str
    client: Client
    dynamic: DynamicController
    kinds: InstanceControllers
    task: asyncio.Task[None]

    async def stop(self) -> None:
        """Stop taking work (its instances are left as they are in the member)."""
        self.dynamic.shutdown()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


SpokeFactory = Callable[[str, Client], tuple[DynamicController, InstanceControllers]]
"""Builds a member's controllers over its client (the App: its options, registry, members)."""


class Spokes:
    """Every member's spoke (see the module docstring)."""

    def __init__(
        self, members: RegistryMembers, build: SpokeFactory, *, conservative: bool = False
    ) -> None:
        self._members = members
        self._build = build
        self._conservative = conservative
        self._spokes: dict[str, Spoke] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        self._stopped = asyncio.Event()
        members.registry.subscribe(self._changed)

    async def run(self) -> None:
        """Run (as a manager runnable) until shutdown, then stop every spoke."""
        try:
            await self._stopped.wait()
        finally:
            await self.close()

    def shutdown(self) -> None:
        self._stopped.set()

    def _changed(self, cluster: str, event: str) -> None:
        """A member left or its client was replaced: its spoke goes (a new one is built over
        the new client by the next RGD reconcile, which its `ready` brings)."""
        if event in ("removed", "updated"):
            spoke = self._spokes.pop(cluster, None)
            if spoke is not None:
                task = asyncio.ensure_future(spoke.stop())
                self._retiring.add(task)
                task.add_done_callback(self._retiring.discard)

    def _spoke(self, cluster: str) -> Spoke:
        client = self._members.client(cluster)
        spoke = self._spokes.get(cluster)
        if spoke is not None and spoke.client is client:
            return spoke
        dynamic, kinds = self._build(cluster, client)
        task = asyncio.create_task(dynamic.run(), name=f"spoke:{cluster}")
        spoke = self._spokes[cluster] = Spoke(cluster, client, dynamic, kinds, task)
        log.info("spoke.started", cluster=cluster)
        return spoke

    def _ready(self) -> list[str]:
        return [m.name for m in self._members.registry.members() if m.ready and not m.local]

    async def serve(
        self,
        rgd: Mapping[str, Any],
        crd: Mapping[str, Any],
        kind: Kind,
        revision: int,
        *,
        allow_breaking: bool,
    ) -> list[dict[str, Any]]:
        """Install the kind's CRD in every Ready member and serve its instances there; per
        member, whether the kind is served (`status.clusters[]`)."""
        rgd_name = str(_meta(rgd).get("name") or "")
        served: list[dict[str, Any]] = []
        for cluster in self._ready():
            try:
                spoke = self._spoke(cluster)
                await ensure_crd(
                    spoke.client,
                    crd,
                    rgd_name=rgd_name,
                    allow_breaking=allow_breaking,
                    conservative=self._conservative,
                )
                await spoke.kinds.serve(kind, revision)
            except (ClusterUnavailable, CRDError, KubeError) as error:
                log.warning("spoke.kind_not_served", cluster=cluster, error=str(error))
                served.append({"name": cluster, "kindReady": False, "message": str(error)})
                continue
            message = f"kind {kind.kind} served in cluster {cluster}"
            served.append({"name": cluster, "kindReady": True, "message": message})
        return served

    async def release(self, rgd_name: str, crd_name: str | None) -> None:
        """The RGD is going: each spoke drains its kind; with `crd_name` (only under
        `--allow-crd-deletion`, as on the hub) the member's CRD is deleted too."""
        for spoke in list(self._spokes.values()):
            try:
                await spoke.kinds.release(rgd_name)
                if crd_name:
                    await delete_crd_if_owned(spoke.client, crd_name, rgd_name=rgd_name)
            except KubeError as error:  # an unreachable member keeps its CRD and instances
                log.warning("spoke.release_failed", cluster=spoke.cluster, error=str(error))

    async def close(self) -> None:
        for cluster in list(self._spokes):
            await self._spokes.pop(cluster).stop()
