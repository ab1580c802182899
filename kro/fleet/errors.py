"""kro.fleet.errors: why a member cluster cannot be used, without ever saying with what.

Four failures a caller of the registry meets, one class each, all under `ClusterError`:

* `ClusterRefused`: the member's Secret holds credentials kro will not use (M-03). Raised by
  `kro.fleet.credentials.member_connection`, kept by the registry as the member's `reason`.
* `ClusterNotFound`: no Secret (and not the hub) has that name (M-02, M-12).
* `ClusterNotReady`: the member is known but refused or failing its probe (M-06, M-12).
* `ClusterUnreachable`: a request to a member got no answer at all (refused, reset, TLS,
  timed out): raised by the member's client in place of the transport's error (its
  `ClientOptions.unanswered` is `unanswered_in`), so every message about it names the cluster
  (M-06).

Messages name the cluster, its Secret and a reason, never a value from the Secret: they travel
into logs, conditions, Events and CLI output (M-06).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kro.api.names import REASON_CLUSTER_NOT_FOUND, REASON_CLUSTER_UNREACHABLE
from kro.runtime.errors import RequestTimeout, TransportError

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
    last probe failed (`reason` says which, in the words of `Member.reason`).

    `unreachable`: it is not Ready because it did not answer (a request of its users or its
    probe got no response): the condition reason is then `ClusterUnreachable`, which tells a
    user the member is down or cut off rather than unknown or misconfigured.
    """

    def __init__(self, cluster: str, *, reason: str, unreachable: bool = False) -> None:
        self.reason = reason
        self.unreachable = unreachable
        if unreachable:
            self.condition_reason = REASON_CLUSTER_UNREACHABLE
            super().__init__(cluster, f'cluster "{cluster}" is unreachable: {reason}')
            return
        super().__init__(cluster, f"cluster {cluster!r} is not ready: {reason or 'not probed yet'}")


class ClusterUnreachable(ClusterError, TransportError):
    """A request to the member got no response at all: the connection was refused or reset,
    TLS failed, or nothing came back in time (M-06).

    A TransportError still (whoever retries or backs off on one does so unchanged), whose
    message names the cluster, which the transport's cannot: `cluster "member-1" is
    unreachable: ClientConnectorError: cannot connect: ECONNREFUSED`. `cause` is that short
    cause: the transport's own description without the request line, library text only
    (kro.runtime._transport.describe_failure), never a header, body or credential.
    """

    condition_reason = REASON_CLUSTER_UNREACHABLE

    def __init__(self, cluster: str, error: TransportError) -> None:
        self.cluster = cluster
        self.cause = short_cause(error)
        TransportError.__init__(
            self,
            f'cluster "{cluster}" is unreachable: {self.cause}',
            method=error.method,
            path=error.path,
            status=error.status,
            reason=error.reason,
        )


class ClusterTimedOut(ClusterUnreachable, RequestTimeout):
    """Nothing came back in time: also a RequestTimeout (and a TimeoutError), as the
    transport's error was, for whoever tells a timeout from another failure."""


def unreachable(cluster: str, error: TransportError) -> ClusterUnreachable:
    """`error` (a request that got no answer, see `no_answer`) as the member's error."""
    if isinstance(error, RequestTimeout):
        return ClusterTimedOut(cluster, error)
    return ClusterUnreachable(cluster, error)


def unanswered_in(
    cluster: str, told: Callable[[str], None] = lambda cause: None
) -> Callable[[TransportError], TransportError]:
    """`ClientOptions.unanswered` of the member `cluster`'s client: a request that got no
    answer raises `ClusterUnreachable` naming the cluster, and `told` hears its short cause
    at once (the registry marks the member not Ready: passive health, M-06). The transport
    on the hub talks to one server and never had to say which; a member's failure is read
    where a user reads it (a condition, a log line, an Event), and "which cluster?" comes
    first. An answer, even a 500, a closed client or a stream cut mid-way is not silence."""

    def name(error: TransportError) -> TransportError:
        if not no_answer(error):
            return error
        named = unreachable(cluster, error)
        told(named.cause)
        return named

    return name


def no_answer(error: TransportError) -> bool:
    """Whether `error` says the server never answered: no response head arrived and the
    transport named the failure (a closed client, a broken stream or body is not one)."""
    return error.status is None and bool(error.reason) and not isinstance(error, ClusterError)


def short_cause(error: TransportError) -> str:
    """The transport's message without its leading `METHOD /path: `."""
    text = str(error)
    head = f"{error.method} {error.path}: " if error.method else ""
    return text.removeprefix(head) if head else text
