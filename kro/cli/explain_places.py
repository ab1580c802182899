"""kro.cli.explain_places: the member clusters `kro explain` reaches, as its caller could (M-07).

The controller reaches a member with its registry Secret's credentials (M-02); explain, running
the pass dry as the caller, reaches it with the Secret the caller can read, under the registry's
own rules (kro.fleet.credentials, M-03), and one `/version` probe. A cluster that is not
registered or whose credentials are refused is the node's error, as for the controller; one the
caller may not read or that does not answer from here is `unseen`: its nodes are unknown, not a
problem kro has. Nothing of a Secret is printed but its name and the server URL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from kro.api.names import (
    CLUSTER_SECRETS_KEY_DEFAULT,
    CLUSTER_SECRETS_LABEL_DEFAULT,
    LOCAL_CLUSTER_NAME_DEFAULT,
    REASON_CLUSTER_FORBIDDEN,
    REASON_CLUSTER_NOT_FOUND,
    REASON_CLUSTER_UNREACHABLE,
)
from kro.api.objects import metadata as _meta
from kro.cli.clusters import DEFAULT_NAMESPACE, DEFAULT_TIMEOUT_S
from kro.engine.places import ClusterUnavailable
from kro.engine.watches import NoWatches, Watches
from kro.fleet.credentials import member_connection
from kro.fleet.errors import ClusterRefused
from kro.fleet.probe import ProbeFailed, probe
from kro.fleet.registry import SECRETS
from kro.runtime.client import Client, ClientOptions
from kro.runtime.errors import Forbidden, KubeError, NotFound


@dataclass(frozen=True, slots=True)
class ClusterAccess:
    """Where the member clusters' Secrets are and what the hub is called (the controller's
    `--cluster-secrets-*`, `--local-cluster-name`); `timeout_s` bounds each member's requests."""

    namespace: str = DEFAULT_NAMESPACE  # the controller's chart installs there
    label: str = CLUSTER_SECRETS_LABEL_DEFAULT
    key: str = CLUSTER_SECRETS_KEY_DEFAULT
    local_name: str = LOCAL_CLUSTER_NAME_DEFAULT
    timeout_s: float = DEFAULT_TIMEOUT_S

    def name_of(self, cluster: str) -> str:
        """The cluster's name as a user reads it: the hub's local name for ""."""
        return cluster or self.local_name


class CallerClusters:
    """`kro.engine.places.Places` of a dry run: the hub is the caller's own client; a member
    is reached through the registry Secret the caller reads. `wrap` turns a member's client
    into the dry run's reading client. An async context manager: it closes the members'
    clients on exit."""

    def __init__(
        self, hub: Client, access: ClusterAccess, wrap: Callable[[Client], Client]
    ) -> None:
        self._hub = hub
        self.access = access
        self._wrap = wrap
        self._clients: dict[str, Client] = {}  # the members' own clients, to close
        self._readers: dict[str, Client] = {}
        self._refused: dict[str, ClusterUnavailable] = {}
        self.unseen: dict[str, str] = {}  # clusters the caller could not see -> why

    async def __aenter__(self) -> CallerClusters:
        return self

    async def __aexit__(self, *exc: object) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            await client.close()

    @property
    def hub(self) -> str:
        return self.access.local_name

    own = hub  # explain runs against the hub's owners

    def _is_hub(self, cluster: str) -> bool:
        return not cluster or cluster == self.access.local_name

    async def admit(self, cluster: str) -> None:
        if self._is_hub(cluster) or cluster in self._readers:
            return
        refused = self._refused.get(cluster)
        if refused is None:
            try:
                await self._connect(cluster)
                return
            except ClusterUnavailable as error:
                self._refused[cluster] = refused = error
                if error.reason != REASON_CLUSTER_NOT_FOUND:
                    self.unseen[cluster] = str(error)
        raise refused

    def client(self, cluster: str) -> Client:
        if self._is_hub(cluster):
            return self._hub
        reader = self._readers.get(cluster)
        if reader is None:
            raise self._refused.get(cluster) or ClusterUnavailable(
                cluster, REASON_CLUSTER_NOT_FOUND, f'cluster "{cluster}" was not admitted'
            )
        return reader

    def watches(self, cluster: str) -> Watches:
        return NoWatches()  # a dry run watches nothing

    async def _connect(self, cluster: str) -> None:
        """Raises ClusterUnavailable saying which step failed (never with a credential)."""
        access = self.access
        where = f"{access.namespace}/{cluster}"
        unavailable = partial(ClusterUnavailable, cluster)
        try:
            secret = await self._hub.get(SECRETS, cluster, namespace=access.namespace)
        except NotFound:
            detail = f'cluster "{cluster}" is not registered: no Secret {where}'
            raise unavailable(REASON_CLUSTER_NOT_FOUND, detail) from None
        except Forbidden as error:
            detail = (
                f'cannot reach cluster "{cluster}" as you: reading its Secret {where} is '
                f"not allowed ({error.message})"
            )
            raise unavailable(REASON_CLUSTER_FORBIDDEN, detail) from None
        except KubeError as error:
            detail = f'cannot read the Secret {where} of cluster "{cluster}": {error}'
            raise unavailable(REASON_CLUSTER_UNREACHABLE, detail) from None
        key, _, value = access.label.partition("=")
        if (_meta(secret).get("labels") or {}).get(key) != value:
            detail = (
                f'cluster "{cluster}" is not registered: the Secret {where} does not carry '
                f"the label {access.label}"
            )
            raise unavailable(REASON_CLUSTER_NOT_FOUND, detail)
        try:
            member = member_connection(secret, key=access.key)
        except ClusterRefused as refusal:  # its words name the Secret and a field, no value
            raise unavailable(REASON_CLUSTER_NOT_FOUND, str(refusal)) from None
        options = ClientOptions(
            connect_timeout_s=access.timeout_s,
            request_timeout_s=access.timeout_s,
            max_retries=1,
            user_agent="kro-cli",
        )
        client = Client.from_config(member.config, options)
        self._clients[cluster] = client
        try:
            await probe(client, timeout_s=access.timeout_s, discovery=False)
        except ProbeFailed as failure:
            detail = f'cluster "{cluster}" ({member.server}) does not answer from here: {failure}'
            raise unavailable(REASON_CLUSTER_UNREACHABLE, detail) from None
        self._readers[cluster] = self._wrap(client)
