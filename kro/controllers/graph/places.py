"""kro.controllers.graph.places: the clusters a Graph may reach, as its ServiceAccount (M-13).

A Graph applies as a ServiceAccount of its namespace, never as kro. In its own cluster the API
server judges every request of that identity; a member cluster, though, is reached with the
credentials of the member's registry Secret, which the ServiceAccount never holds. So the trust
rule is the Secret itself: a Graph may target a cluster only if its ServiceAccount may `get`
that cluster's Secret. Reading the Secret is the permission to deploy there, so no Graph
reaches a cluster its author could not. The answer is an access review as the ServiceAccount,
kept like the watch reviews (kro.controllers.graph.watch_access): a yes for a minute, a no
asked again by the next pass, so a grant is picked up without an edit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kro.api.names import REASON_CLUSTER_FORBIDDEN
from kro.controllers.graph.watch_access import AccessAnswers, may
from kro.controllers.members import RegistryMembers
from kro.engine.places import ClusterUnavailable, WithMembers
from kro.engine.watches import Watches
from kro.runtime.client import Client
from kro.runtime.gvk import GVR

__all__ = ["GraphPlaces"]

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
        if not cluster or cluster == self.hub:
            return
        key = (self._username, "get", SECRETS, self._registry_namespace, cluster)
        if not await may(self._client, self._answers, key):
            raise ClusterUnavailable(
                cluster,
                REASON_CLUSTER_FORBIDDEN,
                f"{self._username} may not get the Secret {self._registry_namespace}/{cluster}: "
                f'a Graph reaches cluster "{cluster}" only when its ServiceAccount may read '
                "that cluster's Secret",
            )
        await super().admit(cluster)
