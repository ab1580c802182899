"""kro.controllers.members: the cluster registry (kro.fleet) as the engine's member clusters.

The engine asks for a member's client by name (kro.engine.places.MemberClusters); the registry
answers with the member's own client or says why it cannot (not registered, refused, failing
its probe). Here its answer becomes the node's error the engine reports (`ClusterNotFound`,
M-12), and the registry runs for as long as the manager does.
"""

from __future__ import annotations

import asyncio

from kro.engine.places import ClusterUnavailable
from kro.fleet import ClusterError, ClusterRegistry
from kro.runtime.client import Client

__all__ = ["RegistryMembers"]


class RegistryMembers:
    """`MemberClusters` over a cluster registry, and the manager runnable that runs it."""

    def __init__(self, registry: ClusterRegistry) -> None:
        self.registry = registry
        self._stopped = asyncio.Event()

    @property
    def hub(self) -> str:
        return self.registry.local_name

    @property
    def namespace(self) -> str:
        """Where the member clusters' Secrets live (`--cluster-secrets-namespace`)."""
        return self.registry.namespace

    def client(self, cluster: str) -> Client:
        try:
            return self.registry.client_for(cluster)
        except ClusterError as error:  # its message names no secret (M-06)
            raise ClusterUnavailable(cluster, error.condition_reason, str(error)) from None

    async def run(self) -> None:
        await self.registry.start()
        try:
            await self._stopped.wait()
        finally:
            await self.registry.stop()

    def shutdown(self) -> None:
        self._stopped.set()
