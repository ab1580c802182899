"""kro.fleet.errors: why a member cluster cannot be used, without ever saying with what.

Three failures a caller of the registry meets, one class each, all under `ClusterError`:

* `ClusterRefused`: the member's Secret holds credentials kro will not use (M-03). Raised by
  `kro.fleet.credentials.member_connection`, kept by the registry as the member's `reason`.
* `ClusterNotFound`: no Secret (and not the hub) has that name (M-02, M-12).
* `ClusterNotReady`: the member is known but refused or failing its probe (M-06, M-12).

Messages name the cluster, its Secret and a reason, never a value from the Secret: they travel
into logs, conditions, Events and CLI output (M-06).
"""

from __future__ import annotations

from typing import Final

from kro.api.names import REASON_CLUSTER_NOT_FOUND

REFUSED_MESSAGE_LIMIT: Final = 512
"""A refusal's detail is fixed text plus names; this bounds what a hostile name could add."""


class ClusterError(Exception):
    """A member cluster cannot be used. `cluster` is its name; `condition_reason` is the
    Ready-condition reason an owner reports for it (M-12: `ClusterNotFound`)."""

    condition_reason: str = REASON_CLUSTER_NOT_FOUND

    def __init__(self, cluster: str, message: str) -> None:
        self.cluster = cluster
        super().__init__(message)


class ClusterRefused(ClusterError):
    """M-03: the member's kubeconfig is not inert inline data (or cannot be read at all).

    `secret` is `namespace/name`; `reason` a stable short code (`ExecPlugin`, `FilePath`, ...,
    see `kro.fleet.credentials.REASONS`); `detail` a sentence in fixed words naming at most a
    field, an entry of the kubeconfig or the Secret's key, never a value.
    """

    def __init__(self, cluster: str, *, secret: str, reason: str, detail: str) -> None:
        self.secret = secret
        self.reason = reason
        self.detail = detail[:REFUSED_MESSAGE_LIMIT]
        super().__init__(cluster, f"cluster Secret {secret} refused ({reason}): {self.detail}")


class ClusterNotFound(ClusterError):
    """No member of that name: neither the hub's local name nor a labelled Secret."""

    def __init__(self, cluster: str, *, namespace: str) -> None:
        self.namespace = namespace
        super().__init__(
            cluster,
            f"cluster {cluster!r} is not registered: no labelled Secret of that name in "
            f"namespace {namespace}",
        )


class ClusterNotReady(ClusterError):
    """The member is registered but cannot be used now: its credentials were refused, or its
    last probe failed (`reason` says which, in the words of `Member.reason`)."""

    def __init__(self, cluster: str, *, reason: str) -> None:
        self.reason = reason
        super().__init__(cluster, f"cluster {cluster!r} is not ready: {reason or 'not probed yet'}")
