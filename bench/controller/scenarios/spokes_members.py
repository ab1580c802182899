"""The members of a spokes run: their control planes (no nodes), the credentials kro and the
bench use there, their registry Secrets on the hub, and the bench's own client of each.

Credentials (`--member-credentials`): `token` (the default) gives kro and the bench the
member's static admin bearer token, inline with its CA: how the hub is reached in every run
of this bench (harness.on_cluster), so the two phases pay the same for authentication.
`certificate` uses kro.testing.fleet's inline client certificate, as the e2e fleet does; then
kube-apiserver verifies the certificate's chain on every request, about a tenth of its CPU
under load (docs/performance.md), which only the members would pay here. Either is accepted
by M-03 (inline credentials, inline CA, https).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kro.runtime.client import Client, ClientOptions
from kro.testing import fleet
from kro.testing.adminapi import AdminApi
from kro.testing.cluster import ClusterOptions, LocalCluster

SECRETS_NAMESPACE = fleet.DEFAULT_NAMESPACE
CREDENTIALS = ("token", "certificate")


@dataclass
class Members:
    """Started member control planes and what the run knows of each."""

    hub: AdminApi
    clusters: dict[str, LocalCluster]
    kubeconfigs: dict[str, Path]
    """Per member, the inline kubeconfig its registry Secret carries (the bench uses it too)."""
    started: list[fleet.FleetMember] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    """Paths on the hub register() created, deleted again by unregister()."""

    @classmethod
    def start(cls, hub_kubeconfig: str, count: int, credentials: str) -> Members:
        """Start `count` members in parallel (blocking: run it in a thread)."""
        clusters = {
            name: LocalCluster(options=ClusterOptions(nodes=0))
            for name in fleet.member_names(count)
        }
        started = fleet.start_members(clusters)
        kubeconfigs: dict[str, Path] = {}
        for member in started:
            state = clusters[member.name].state
            if credentials == "token" and state is not None:
                kubeconfigs[member.name] = state.bearer_kubeconfig()
            else:
                kubeconfigs[member.name] = member.kubeconfig_path
        hub = AdminApi.from_kubeconfig(Path(hub_kubeconfig))
        return cls(hub, clusters, kubeconfigs, started)

    def secrets(self) -> list[dict[str, Any]]:
        return [
            fleet.registry_secret(name, path.read_text(), namespace=SECRETS_NAMESPACE)
            for name, path in self.kubeconfigs.items()
        ]

    def register(self) -> None:
        """Create every member's registry Secret (and its namespace if missing) on the hub."""
        self.created += fleet.apply_registry(self.hub, self.secrets())

    def unregister(self) -> None:
        for path in reversed(self.created):
            with contextlib.suppress(Exception):  # the hub may be gone (this run's own)
                self.hub.delete(path)
        self.created.clear()

    def stop(self) -> None:
        """Stop every member's control plane (in parallel)."""
        fleet.Fleet(self.hub, self.started).stop()

    def pids(self) -> dict[str, dict[str, int]]:
        """Per member, its control plane's processes."""
        return {
            name: dict(cluster.state.pids) if cluster.state else {}
            for name, cluster in self.clusters.items()
        }

    async def clients(self) -> dict[str, Client]:
        """The bench's client of each member (no rate limit of its own, as on the hub)."""
        return {
            name: await Client.from_kubeconfig(str(path), options=ClientOptions(qps=0))
            for name, path in self.kubeconfigs.items()
        }


async def close_all(clients: Mapping[str, Client]) -> None:
    for client in clients.values():
        await client.close()
