"""kro.fleet: the member clusters of a hub (issue #35, behind the MultiCluster gate).

A member cluster is a labelled Secret holding an inline kubeconfig (M-02, M-03); the
`ClusterRegistry` watches those Secrets and keeps one checked, probed client per member
(M-04 to M-06); `kro clusters` (kro.cli.clusters) shows the registry as a user can read it
(M-07). This package knows Secrets and clients only: what runs on a member is the engine's.

Modules: `credentials` (a Secret to a connection, or a refusal), `probe` (is a member usable),
`metrics` (kro_cluster_*), `registry` (the live set), `errors`.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kro.fleet.credentials import MemberCredentials as MemberCredentials
    from kro.fleet.credentials import member_connection as member_connection
    from kro.fleet.errors import ClusterError as ClusterError
    from kro.fleet.errors import ClusterNotFound as ClusterNotFound
    from kro.fleet.errors import ClusterNotReady as ClusterNotReady
    from kro.fleet.errors import ClusterRefused as ClusterRefused
    from kro.fleet.registry import ClusterEvent as ClusterEvent
    from kro.fleet.registry import ClusterRegistry as ClusterRegistry
    from kro.fleet.registry import Member as Member
else:
    from kro._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            ".credentials": ("MemberCredentials", "member_connection"),
            ".errors": ("ClusterError", "ClusterNotFound", "ClusterNotReady", "ClusterRefused"),
            ".registry": ("ClusterEvent", "ClusterRegistry", "Member"),
        },
    )

__all__ = [
    "ClusterError",
    "ClusterEvent",
    "ClusterNotFound",
    "ClusterNotReady",
    "ClusterRefused",
    "ClusterRegistry",
    "Member",
    "MemberCredentials",
    "member_connection",
]
