"""kro.controllers.graph.identity: who a Graph's resources are read and written as (V-53..V-56).

A Graph applies as a ServiceAccount of its own namespace (`spec.serviceAccountName`, else
`default`), never as kro: kro asks the API server to impersonate that ServiceAccount, so the
Graph can create nothing its ServiceAccount may not create. kro's own identity only reads and
writes the Graph object itself and runs the watches. A Graph naming kro's own ServiceAccount is
refused before anything is compiled or applied.

Impersonating the user alone is enough: for a `system:serviceaccount:<ns>:<name>` user with no
group given, the API server adds the ServiceAccount groups itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import OrderedDict
from typing import Final

from kro.runtime.client import Client

__all__ = ["ImpersonatedClients"]

IMPERSONATE_USER: Final = "Impersonate-User"
_CLOSE_AFTER_S: Final = 300.0
"""An evicted client may still serve a pass in flight; it is closed this much later."""


class ImpersonatedClients:
    """One client per identity Graphs apply as, the `max_entries` most recently used kept:
    each has its own connection pool (the impersonation header is per connection
    configuration); an evicted one is closed once any pass that may hold it has long finished."""

    def __init__(self, base: Client, *, max_entries: int = 32) -> None:
        self._base = base
        self._max_entries = max_entries
        self._clients: OrderedDict[str, Client] = OrderedDict()
        self._closing: dict[asyncio.Task[None], Client] = {}

    def client_for(self, username: str) -> Client:
        client = self._clients.get(username)
        if client is not None:
            self._clients.move_to_end(username)
            return client
        config = self._base.config
        headers = {**config.headers, IMPERSONATE_USER: username}
        client = Client(dataclasses.replace(config, headers=headers), self._base.options)
        self._clients[username] = client
        while len(self._clients) > self._max_entries:
            _, evicted = self._clients.popitem(last=False)
            self._close_later(evicted)
        return client

    def invalidate_discovery(self) -> None:
        """A CRD changed: each client's kinds are re-read on its next lookup, as kro's own
        client's are (a Graph's node whose kind was not served finds it at once)."""
        for client in self._clients.values():
            client.mapper.invalidate()

    def _close_later(self, client: Client) -> None:
        async def close() -> None:
            await asyncio.sleep(_CLOSE_AFTER_S)
            await client.close()

        task = asyncio.get_running_loop().create_task(close())
        self._closing[task] = client
        task.add_done_callback(lambda t: self._closing.pop(t, None))

    async def run(self) -> None:
        """A manager runnable: hold the clients until the process stops, then close them."""
        try:
            await asyncio.Event().wait()
        finally:
            await self.close()

    async def close(self) -> None:
        clients = [*self._clients.values(), *self._closing.values()]
        for task in list(self._closing):
            task.cancel()
        self._clients.clear()
        for client in clients:
            await client.close()
