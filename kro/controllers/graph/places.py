"""kro.controllers.graph.places: the clusters a Graph may reach, as its ServiceAccount (M-13).

A Graph applies as a ServiceAccount of its namespace, never as kro. In its own cluster the API
server judges every request of that identity; a member cluster, though, is reached with the
credentials of the member's registry Secret, which the ServiceAccount never holds. So the trust
rule is the Secret itself: a Graph may target a cluster only if its ServiceAccount may `get`
that cluster's Secret. Reading the Secret is the permission to deploy there, so no Graph
reaches a cluster its author could not. The answer is an access review as the ServiceAccount,
kept as the watch reviews are (kro.controllers.graph.watch_access).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.api.names import REASON_CLUSTER_FORBIDDEN
from kro.controllers.graph.watch_access import AccessAnswers, may
from kro.controllers.members import RegistryMembers
from kro.engine.places import ClusterUnavailable, WithMembers
from kro.engine.watches import Watches
from kro.graph.errors import GraphError
from kro.graph.resolver import (
    GVK,
    ClusterSchemas,
    ResolvedSchema,
    SchemaNotFoundError,
    SchemaResolver,
)
from kro.graph.targets import graph_literal_targets
from kro.runtime.client import Client
from kro.runtime.gvk import GVR

__all__ = ["GraphPlaces", "ReadableClusters", "readable_clusters"]

SECRETS: Final = GVR("", "v1", "secrets")


class GraphPlaces(WithMembers):
    """A Graph's own cluster (as its ServiceAccount, `client`) and the members it may reach."""

    def __init__(
        self,
        client: Client,
        watches: Watches,
        members: RegistryMembers,
        *,
        username: str,
        answers: AccessAnswers,
        member_watches: Callable[[str], Watches] | None = None,
    ) -> None:
        super().__init__(client, watches, members, member_watches)
        self._client = client
        self._registry_namespace = members.namespace
        self._username = username
        self._answers = answers

    async def admit(self, cluster: str) -> None:
        if not cluster or cluster == self.own:
            return
        username, namespace = self._username, self._registry_namespace
        key = (username, "get", SECRETS, namespace, cluster)
        if not await may(self._client, self._answers, key):
            message = _forbidden(username, namespace, cluster)
            raise ClusterUnavailable(cluster, REASON_CLUSTER_FORBIDDEN, message)
        await super().admit(cluster)


def _forbidden(username: str, namespace: str, cluster: str) -> str:
    return (
        f"{username} may not get the Secret {namespace}/{cluster}: a Graph reaches cluster "
        f'"{cluster}" only when its ServiceAccount may read that cluster\'s Secret'
    )


@dataclass(frozen=True, slots=True)
class ReadableClusters:
    """The member clusters' schemas a Graph may compile against: those whose Secret its
    ServiceAccount may read (M-13), so a compile never tells of another's cluster. A node
    naming any other cluster is typed with the hub's kinds (the pass then refuses it,
    `ClusterForbidden`); a kind the hub does not serve is the refusal itself."""

    schemas: ClusterSchemas
    hub: SchemaResolver
    readable: frozenset[str]
    refusal: Callable[[str], str]

    def resolver(self, cluster: str) -> SchemaResolver:
        if cluster in self.readable:
            return self.schemas.resolver(cluster)
        return _Unreadable(self.hub, self.refusal(cluster))


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """The hub's kinds, for a node whose cluster the Graph may not read."""

    hub: SchemaResolver
    refusal: str

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        try:
            return self.hub.resolve(gvk)
        except SchemaNotFoundError:
            raise GraphError(self.refusal) from None

    async def prefetch(self, gvks: Iterable[GVK]) -> None:
        await self.hub.prefetch(gvks)


async def readable_clusters(
    graph: Mapping[str, Any],
    schemas: ClusterSchemas,
    hub: SchemaResolver,
    client: Client,
    *,
    username: str,
    registry_namespace: str,
    answers: AccessAnswers,
) -> ReadableClusters:
    """`schemas` as far as the Graph's ServiceAccount (`client`) may read the Secrets of the
    clusters its nodes name literally."""
    spec = graph.get("spec") if isinstance(graph.get("spec"), Mapping) else {}
    named = graph_literal_targets((spec or {}).get("nodes"))
    readable = frozenset(
        [
            cluster
            for cluster in sorted(named)
            if await may(client, answers, (username, "get", SECRETS, registry_namespace, cluster))
        ]
    )
    return ReadableClusters(
        schemas, hub, readable, lambda cluster: _forbidden(username, registry_namespace, cluster)
    )
