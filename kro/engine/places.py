"""kro.engine.places: where a node's objects live, the owner's own cluster or a member (M-11).

A pass reads, watches and applies each object in the cluster its target names (rendered with
the object, taken off before anything is sent). `Places` answers per cluster name with its
client and watches; "" is the owner's cluster. Without members, `OwnCluster`.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

from kro.api.names import ANNOTATION_TARGET_CLUSTER, REASON_CLUSTER_UNREACHABLE
from kro.engine.watches import NoWatches, Watches
from kro.runtime.client import Client
from kro.runtime.errors import KubeError, TransportError

__all__ = [
    "ClusterUnavailable",
    "MemberClusters",
    "OwnCluster",
    "Places",
    "WithMembers",
    "take_target",
    "unreachable",
]


class ClusterUnavailable(KubeError):
    """A target names a cluster that is not registered, or not Ready (M-12): the node's error,
    reason `reason` (ClusterNotFound, ClusterForbidden, ClusterUnreachable, ...)."""

    def __init__(self, cluster: str, reason: str, detail: str) -> None:
        self.cluster = cluster
        self.reason = reason
        super().__init__(detail)


def unreachable(cluster: str, error: KubeError) -> ClusterUnavailable | None:
    """A request to the member `cluster` that got no answer at all (refused, reset, TLS,
    timeout) as `ClusterUnreachable`; None for an answer (even a 500) or the owner's own
    cluster. An error that does not name its cluster yet is prefixed with it."""
    if isinstance(error, ClusterUnavailable):
        return error  # the registry said so between admit and this request
    if not cluster or not isinstance(error, TransportError):
        return None
    if error.status is not None or not error.reason:
        return None
    named = getattr(error, "cluster", None) == cluster
    detail = str(error) if named else f'cluster "{cluster}" is unreachable: {error}'
    return ClusterUnavailable(cluster, REASON_CLUSTER_UNREACHABLE, detail)


class Places(Protocol):
    """The clusters a pass may reach, by name ("" is the owner's own)."""

    @property
    def hub(self) -> str:
        """The hub's name (`--local-cluster-name`, carried as `kro.run/hub`, M-14)."""

    @property
    def own(self) -> str:
        """The owner's own cluster's name (the hub's, or its member's, M-21)."""

    async def admit(self, cluster: str) -> None:
        """Raises ClusterUnavailable unless the owner may reach `cluster`: not registered,
        not Ready (M-12), not the owner's to reach (M-13)."""

    def client(self, cluster: str) -> Client:
        """The client of `cluster`; raises ClusterUnavailable."""

    def watches(self, cluster: str) -> Watches:
        """The watches of `cluster` (changes there bring the owner back)."""


class OwnCluster:
    """Every object lives in the owner's cluster: the only place without the MultiCluster gate."""

    def __init__(self, client: Client, watches: Watches, hub: str = "") -> None:
        self._client = client
        self._watches = watches
        self._hub = hub

    @property
    def hub(self) -> str:
        return self._hub

    @property
    def own(self) -> str:
        return self._hub

    async def admit(self, cluster: str) -> None:
        self.client(cluster)

    def client(self, cluster: str) -> Client:
        if cluster and cluster != self._hub:
            raise ClusterUnavailable(
                cluster,
                "ClusterNotFound",
                f'cluster "{cluster}" is not a registered cluster (the MultiCluster gate is off)',
            )
        return self._client

    def watches(self, cluster: str) -> Watches:
        return self._watches


class MemberClusters(Protocol):
    """The registry's side (kro.fleet): a member cluster's client, by name."""

    @property
    def hub(self) -> str:
        """The hub's own name as a target (`--local-cluster-name`)."""

    def client(self, cluster: str) -> Client:
        """The member's client; raises ClusterUnavailable when it is not registered or not
        Ready."""


class WithMembers:
    """The owner's cluster and the registry's members, each with its own watches (M-14)."""

    def __init__(
        self,
        client: Client,
        watches: Watches,
        members: MemberClusters,
        member_watches: Callable[[str], Watches] | None = None,
        own: str = "",
    ) -> None:
        """`member_watches(cluster)`: the owner kind's watches in a member (None: none).
        `own`: the member the owner lives in (M-21); "" for the hub."""
        self._own = OwnCluster(client, watches, own or members.hub)
        self._members = members
        self._member_watches = member_watches

    @property
    def hub(self) -> str:
        return self._members.hub

    @property
    def own(self) -> str:
        return self._own.own

    async def admit(self, cluster: str) -> None:
        self.client(cluster)

    def client(self, cluster: str) -> Client:
        if not cluster or cluster == self.own:
            return self._own.client("")
        return self._members.client(cluster)

    def watches(self, cluster: str) -> Watches:
        if not cluster or cluster == self.own:
            return self._own.watches("")
        if self._member_watches is None:
            return NoWatches()
        return self._member_watches(cluster)


def take_target(obj: MutableMapping[str, Any], own: str) -> str:
    """The cluster a rendered object targets ("" for `own`), the annotation taken off."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict) or ANNOTATION_TARGET_CLUSTER not in annotations:
        return ""
    cluster = str(annotations.pop(ANNOTATION_TARGET_CLUSTER) or "").strip()
    if not annotations:
        metadata.pop("annotations")
    return "" if cluster == own else cluster
