"""kro.fleet.client: a member cluster's client, whose connection failures name the cluster (M-06).

The transport says a request got no answer (`GET /api/v1/...: ClientConnectorError: cannot
connect: ECONNREFUSED`) but not to whom: on the hub every request goes to one server, so it
never had to. A member's request fails where a user reads it (an owner's condition, a log
line, an Event), and "which cluster?" is the first question. So a member's client raises
`ClusterUnreachable` instead, a TransportError still, naming the cluster, and tells the
registry at once (`unreachable(cause)`), which marks the member not Ready without waiting up
to 30 s for its next probe (passive health).

Three methods carry every request of a `Client` (plain requests, JSON object requests and
watches): each is wrapped here, and only failures without any response are turned (a status,
even a 500, is an answer; a closed client or a stream cut mid-way is not the member's
silence).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

from kro.fleet.errors import no_answer, unreachable
from kro.runtime.client import JSON, Client, WatchEvent
from kro.runtime.clientoptions import ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import TransportError
from kro.runtime.gvk import GVR

__all__ = ["MemberClient"]

Unreachable = Callable[[str], None]
"""Told the short cause of each request of the member that got no answer."""


def _ignore(cause: str) -> None:
    return None


class MemberClient(Client):
    """A `Client` of the member `cluster`: see the module docstring."""

    def __init__(
        self,
        config: ConnectionConfig,
        options: ClientOptions | None = None,
        *,
        cluster: str,
        unreachable: Unreachable = _ignore,
    ) -> None:
        super().__init__(config, options)
        self.cluster = cluster
        self._unreachable = unreachable

    def _named(self, error: TransportError) -> TransportError:
        """The error to raise: a ClusterUnreachable for a request that got no answer."""
        if not no_answer(error):
            return error
        named = unreachable(self.cluster, error)
        self._unreachable(named.cause)
        return named

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
    ) -> Any:
        try:
            return await super().request(
                method, path, params=params, body=body, content_type=content_type, accept=accept
            )
        except TransportError as error:
            raise self._named(error) from error

    async def _json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
    ) -> dict[str, Any]:
        try:
            return await super()._json(
                method, path, params=params, body=body, content_type=content_type, accept=accept
            )
        except TransportError as error:
            raise self._named(error) from error

    async def watch(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_s: int | None = 300,
        metadata_only: bool = False,
        drop_managed_fields: bool = False,
        shard_selector: str | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        stream = super().watch(
            gvr,
            namespace=namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            field_selector=field_selector,
            allow_bookmarks=allow_bookmarks,
            timeout_s=timeout_s,
            metadata_only=metadata_only,
            drop_managed_fields=drop_managed_fields,
            shard_selector=shard_selector,
        )
        async with contextlib.aclosing(stream):
            try:
                async for event in stream:
                    yield event
            except TransportError as error:
                raise self._named(error) from error
