"""kro.runtime.cache: the manager's informers, one per watched resource, shared by all controllers.

controller-runtime gives every controller of a manager one cache: two controllers that watch
Deployments share one watch connection and one copy of each Deployment, and the client reads
from the same copies. `InformerCache` is that cache. Controllers built with
kro.runtime.builder ask it for informers; kro.runtime.reader answers reads from it.

It is one runnable for the manager: readiness and the start of controllers wait until every
informer in it has listed (`has_synced`), and an informer asked for while the manager already
runs is started at once. An informer that crashes (a bug: informers retry API failures
themselves) ends `run`, which the manager treats as fatal.

Informers are keyed by (resource, namespace, label selector, field selector). Only unfiltered
informers can answer arbitrary reads (`covering`): one with a selector does not know whether an
object it lacks exists, so it answers only lists whose selector implies its own, and gets of
objects it holds (`holding`).
"""

from __future__ import annotations

import asyncio

from .client import Client
from .clock import Clock
from .gvk import GVR
from .informer import Informer, Transform, strip_managed_fields
from .informerfactory import InformerKey
from .labels import implies

__all__ = ["InformerCache", "InformerKey"]


class InformerCache:
    """Shared informers over one client, run as one manager runnable."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock | None = None,
        resync_period_s: float | None = None,
        transform: Transform | None = strip_managed_fields,
    ) -> None:
        self.client = client
        self._clock = clock
        self._resync_period_s = resync_period_s
        self._transform = transform
        self._informers: dict[InformerKey, Informer] = {}
        self._group: asyncio.TaskGroup | None = None

    def informer(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer:
        """The informer for this combination; created (and started, if running) on first ask."""
        key = InformerKey(gvr, namespace or None, label_selector or None, field_selector or None)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(
                self.client,
                gvr,
                namespace=key.namespace,
                label_selector=key.label_selector,
                field_selector=key.field_selector,
                transform=self._transform,
                resync_period_s=self._resync_period_s,
                clock=self._clock,
            )
            self._informers[key] = informer
            if self._group is not None:
                self._start(self._group, informer)
        return informer

    def covering(
        self, gvr: GVR, namespace: str | None, label_selector: str | None = None
    ) -> Informer | None:
        """A synced informer that holds every object of `gvr` in `namespace` (None: in every
        namespace) that `label_selector` selects, or None when no informer can answer for all
        of them. An unfiltered informer answers anything; one filtered by labels answers the
        queries its selector is implied by; one filtered by fields answers nothing."""
        unfiltered: Informer | None = None
        filtered: Informer | None = None
        for key, informer in self._informers.items():
            if key.gvr != gvr or key.field_selector or not informer.has_synced():
                continue
            if key.namespace is not None and key.namespace != namespace:
                continue
            if key.label_selector is None:
                unfiltered = unfiltered or informer
            elif label_selector and implies(label_selector, key.label_selector):
                filtered = filtered or informer
        return unfiltered or filtered

    def holding(self, gvr: GVR, namespace: str | None) -> tuple[Informer | None, bool]:
        """The synced informer to look an object of `gvr` in `namespace` up in, and whether it
        is complete (unfiltered: a miss means NotFound). Without an unfiltered one, a filtered
        informer of that namespace scope serves the objects it holds (a primary watched with a
        selector), and its misses must be asked of the server."""
        complete = self.covering(gvr, namespace)
        if complete is not None:
            return complete, True
        for key, informer in self._informers.items():
            if key.gvr != gvr or not informer.has_synced():
                continue
            if key.namespace is None or key.namespace == namespace:
                return informer, False
        return None, False

    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self._informers.values())

    def unsynced(self) -> list[str]:
        """The informers still waiting for their first list, for error messages."""
        return [
            f"{i.gvr} in {i.namespace}" if i.namespace else str(i.gvr)
            for i in self._informers.values()
            if not i.has_synced()
        ]

    async def run(self) -> None:
        """Run every informer, and each one added later, until cancelled."""
        if self._group is not None:
            raise RuntimeError("the informer cache is already running")
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for informer in self._informers.values():
                    self._start(group, informer)
                await asyncio.get_running_loop().create_future()  # park until cancelled
        except BaseExceptionGroup as failed:
            # An informer crashed: surface it as itself (the manager reports the cause).
            raise failed.exceptions[0] from failed
        finally:
            self._group = None

    @staticmethod
    def _start(group: asyncio.TaskGroup, informer: Informer) -> None:
        where = f":{informer.namespace}" if informer.namespace else ""
        group.create_task(informer.run(), name=f"cache.informer:{informer.gvr}{where}")
