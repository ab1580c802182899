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

Scale out (M-23). With `--shards=auto` the members are spread over the replicas: a member is a
point of the shard hash space (`spread_hash` of its name, kro.runtime.sharding), and only the
replica whose range holds that point runs its spoke. The spoke's workers ask the view before
each reconcile, as the hub's do for a namespace, and their in-flight reconciles count in the
view's drain: so a handover of a member is fenced exactly like one of a namespace (the losing
replica stops reconciling the member's instances and finishes those in flight before it
acknowledges the new view; the winner starts the spoke when its range grows). The member CRDs
are the leader's to write, as the hub's CRD is: the leader installs them everywhere, and a
replica that does not lead serves a member's kind once the leader's CRD is there.
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
from kro.controllers.crd import CRDError, crd_is_current, delete_crd_if_owned, ensure_crd
from kro.controllers.instance.kinds import InstanceControllers, Kind
from kro.controllers.members import RegistryMembers
from kro.dynamic import DynamicController
from kro.engine.places import ClusterUnavailable
from kro.runtime.client import Client
from kro.runtime.controller import Admission
from kro.runtime.errors import KubeError
from kro.runtime.gvk import GVR
from kro.runtime.sharding import ShardView, contains, spread_hash

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


SpokeFactory = Callable[
    [str, Client, Admission | None], tuple[DynamicController, InstanceControllers]
]
"""Builds a member's controllers over its client, admitting keys per the admission (M-23: its
replica's share; None: every key) (the App: its options, registry, members)."""


class Spokes:
    """Every member's spoke that this replica runs (see the module docstring)."""

    def __init__(
        self,
        members: RegistryMembers,
        build: SpokeFactory,
        *,
        conservative: bool = False,
        share: ShardView | None = None,
        gained: Callable[[], None] = lambda: None,
        retired: Callable[[str], None] = lambda cluster: None,
    ) -> None:
        """`share`: this replica's shard view (`--shards=auto`), None for one replica.
        `gained`: called when this replica's range grows over a member's point (the App
        queues every RGD, whose reconcile serves their kinds in the new spoke). `retired`:
        called with a member whose spoke stops here (it left, its credential rotated, or
        another replica took it): the App drops what it exported for that spoke."""
        self._members = members
        self._build = build
        self._conservative = conservative
        self._share = share
        self._gained = gained
        self._retired = retired
        self._spokes: dict[str, Spoke] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        self._stopped = asyncio.Event()
        members.registry.subscribe(self._changed)

    async def run(self) -> None:
        """Run (as a manager runnable) until shutdown, following the shard view's changes,
        then stop every spoke."""
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            share, seen = self._share, -1
            while share is not None and not stopped.done():
                if share.version != seen:
                    seen = share.version
                    self._rebalance()
                changed = asyncio.ensure_future(share.changed(seen))
                await asyncio.wait({stopped, changed}, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
            await stopped
        finally:
            stopped.cancel()
            await self.close()

    def shutdown(self) -> None:
        self._stopped.set()

    def owns(self, cluster: str) -> bool:
        """Whether this replica reconciles `cluster`'s instances now (M-23)."""
        return self._share is None or contains(self._share.ranges, spread_hash(cluster))

    def parents(self) -> dict[str, frozenset[GVR]]:
        """The instance kinds each of this replica's spokes serves now, by member (M-23: the
        instances it owns, for `kro_shard_owned_instances`)."""
        return {cluster: spoke.dynamic.registered() for cluster, spoke in self._spokes.items()}

    def _rebalance(self) -> None:
        """The view moved: retire the spokes of members now another replica's, and have the
        RGDs served again if a Ready member became ours."""
        for cluster in [c for c in self._spokes if not self.owns(c)]:
            log.info("spoke.handed_over", cluster=cluster)
            self._retire(cluster)
        if any(self.owns(c) and c not in self._spokes for c in self._ready()):
            self._gained()

    def _changed(self, cluster: str, event: str) -> None:
        """A member left or its client was replaced: its spoke goes (a new one is built over
        the new client by the next RGD reconcile, which its `ready` brings)."""
        if event in ("removed", "updated"):
            self._retire(cluster)

    def _retire(self, cluster: str) -> None:
        spoke = self._spokes.pop(cluster, None)
        if spoke is not None:
            self._retired(cluster)
            task = asyncio.ensure_future(spoke.stop())
            self._retiring.add(task)
            task.add_done_callback(self._retiring.discard)

    def _spoke(self, cluster: str, client: Client) -> Spoke:
        spoke = self._spokes.get(cluster)
        if spoke is not None and spoke.client is client:
            return spoke
        admission = self._share.pinned(cluster, cluster=cluster) if self._share else None
        dynamic, kinds = self._build(cluster, client, admission)
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
        """The leader's part: install the kind's CRD in every Ready member, and serve its
        instances in the members this replica owns; per member, whether the kind is served
        (`status.clusters[]`)."""
        rgd_name = str(_meta(rgd).get("name") or "")
        served: list[dict[str, Any]] = []
        for cluster in self._ready():
            try:
                client = self._members.client(cluster)
                await ensure_crd(
                    client,
                    crd,
                    rgd_name=rgd_name,
                    allow_breaking=allow_breaking,
                    conservative=self._conservative,
                )
                if self.owns(cluster):
                    await self._spoke(cluster, client).kinds.serve(kind, revision)
            except (ClusterUnavailable, CRDError, KubeError) as error:
                log.warning("spoke.kind_not_served", cluster=cluster, error=str(error))
                served.append({"name": cluster, "kindReady": False, "message": str(error)})
                continue
            message = f"kind {kind.kind} served in cluster {cluster}"
            served.append({"name": cluster, "kindReady": True, "message": message})
        return served

    async def follow(
        self, rgd: Mapping[str, Any], crd: Mapping[str, Any], kind: Kind, revision: int
    ) -> bool:
        """A replica that does not lead (M-23): serve the kind in the members it owns once
        the leader's CRD is there; False while one of them waits for it (retry later)."""
        rgd_name = str(_meta(rgd).get("name") or "")
        done = True
        for cluster in [c for c in self._ready() if self.owns(c)]:
            try:
                client = self._members.client(cluster)
                if not await crd_is_current(
                    client,
                    crd,
                    rgd_name=rgd_name,
                    conservative=self._conservative,
                ):
                    done = False
                    continue
                await self._spoke(cluster, client).kinds.serve(kind, revision)
            except (ClusterUnavailable, CRDError, KubeError) as error:
                log.warning("spoke.kind_not_served", cluster=cluster, error=str(error))
                done = False
        return done

    async def release(self, rgd_name: str, crd_name: str | None) -> None:
        """The RGD is going: each of this replica's spokes drains its kind; with `crd_name`
        (the leader, and only under `--allow-crd-deletion`, as on the hub) every Ready
        member's CRD is deleted too."""
        for spoke in list(self._spokes.values()):
            try:
                await spoke.kinds.release(rgd_name)
            except KubeError as error:  # an unreachable member keeps its instances
                log.warning("spoke.release_failed", cluster=spoke.cluster, error=str(error))
        for cluster in self._ready() if crd_name else ():
            try:
                await delete_crd_if_owned(
                    self._members.client(cluster), crd_name or "", rgd_name=rgd_name
                )
            except (ClusterUnavailable, KubeError) as error:  # it keeps its CRD
                log.warning("spoke.release_failed", cluster=cluster, error=str(error))

    async def close(self) -> None:
        for cluster in list(self._spokes):
            await self._spokes.pop(cluster).stop()
