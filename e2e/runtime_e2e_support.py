"""Helpers for the kro.runtime e2e tests (e2e/test_runtime_*.py); a plain module, not a conftest.

* `eventually`: await a probe until it holds, with a deadline (never a fixed sleep);
* `example(name)`: an operator of examples/runtime/, loaded as a module (its `setup`);
* `concurrently`: run one coroutine per item with bounded concurrency (1,000 writes in seconds);
* `same_state` / `wait_for_same_state`: an informer's store against a fresh LIST, by
  resourceVersion (equal resourceVersions mean equal objects);
* `Recorder`: an informer handler that remembers what it was told;
* `TcpProxy`: a loopback forwarder that can cut every connection and refuse new ones, i.e. a
  network partition between one client and the API server while other clients still write.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.runtime.store import object_key
from kro.testing import waiting

CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "runtime"

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741


def example(name: str) -> ModuleType:
    """examples/runtime/<name>.py as a fresh module (each test gets its own copy)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def eventually(
    probe: Callable[[], Awaitable[T | None]],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.2,
) -> T:
    """Await `probe()` until it returns something truthy; fail after `timeout_s`."""
    return await waiting.eventually(probe, what=what, timeout_s=timeout_s, interval_s=interval_s)


async def concurrently(
    items: Iterable[I], op: Callable[[I], Awaitable[Any]], *, concurrency: int = 32
) -> None:
    """`op(item)` for every item, at most `concurrency` at a time; the first failure stops all."""
    pending = iter(items)

    async def worker() -> None:
        for item in pending:
            await op(item)

    async with asyncio.TaskGroup() as group:
        for i in range(concurrency):
            group.create_task(worker(), name=f"e2e.concurrently-{i}")


def configmap(
    name: str, data: dict[str, str], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": data,
    }


async def server_state(client: Client, gvr: GVR, namespace: str) -> dict[str, str]:
    items, _ = await client.list_all(gvr, namespace=namespace)
    return {object_key(o): o["metadata"]["resourceVersion"] for o in items}


def cached(informer: Informer, namespace: str, name: str) -> dict[str, Any]:
    """The cached object, which the test expects to be there."""
    obj = informer.store.get_by(namespace, name)
    assert obj is not None, f"{namespace}/{name} is not in the informer's store"
    return obj


def store_state(informer: Informer) -> dict[str, str]:
    return {object_key(o): o["metadata"]["resourceVersion"] for o in informer.store.list()}


async def same_state(client: Client, informer: Informer, namespace: str) -> bool:
    return store_state(informer) == await server_state(client, informer.gvr, namespace)


async def wait_for_same_state(
    client: Client, informer: Informer, namespace: str, *, timeout_s: float = 60.0
) -> float:
    """Wait until the store equals the server's state; returns the seconds it took."""
    began = time.monotonic()

    async def probe() -> bool:
        return await same_state(client, informer, namespace)

    try:
        await eventually(probe, timeout_s=timeout_s, what="the informer store to match the server")
    except AssertionError:
        server = await server_state(client, informer.gvr, namespace)
        store = store_state(informer)
        missing = sorted(set(server) - set(store))[:5]
        extra = sorted(set(store) - set(server))[:5]
        stale = sorted(k for k in set(server) & set(store) if server[k] != store[k])[:5]
        raise AssertionError(
            f"store != server: {len(server)} on the server, {len(store)} cached; "
            f"missing {missing}, extra {extra}, stale {stale}"
        ) from None
    return time.monotonic() - began


@dataclass
class Recorder:
    """An informer handler that keeps, per object name, what it was told (the last object)."""

    added: dict[str, dict[str, Any]] = field(default_factory=dict)
    updated: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: dict[str, dict[str, Any]] = field(default_factory=dict)
    delete_calls: int = 0

    def on_add(self, obj: dict[str, Any]) -> None:
        self.added[obj["metadata"]["name"]] = obj

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.updated[new["metadata"]["name"]] = new

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.delete_calls += 1
        self.deleted[obj["metadata"]["name"]] = obj


@contextlib.asynccontextmanager
async def running(informer: Informer, *, sync_timeout_s: float = 30.0) -> Any:
    """Run `informer` for the block (synced on entry); stop it on the way out."""
    task = asyncio.create_task(informer.run(), name=f"e2e.informer:{informer.gvr}")
    try:
        synced = await informer.wait_for_sync(timeout_s=sync_timeout_s)
        assert synced, f"informer for {informer.gvr} did not sync in {sync_timeout_s}s"
        yield informer
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class TcpProxy:
    """Forwards 127.0.0.1:<port> to 127.0.0.1:<target_port> byte for byte (TLS passes through).

    `partition()` aborts every open connection and refuses new ones until `heal()`; clients see
    resets, exactly as when a network path between them and the API server fails.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.partitioned = False
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    def partition(self) -> None:
        self.partitioned = True
        for writer in list(self._open):
            writer.transport.abort()

    def heal(self) -> None:
        self.partitioned = False

    async def close(self) -> None:
        self.partition()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)  # from now on partition() reaches it, even mid-connect
        up_writer: asyncio.StreamWriter | None = None
        try:
            if self.partitioned:
                return
            with contextlib.suppress(OSError):
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            if up_writer is None or self.partitioned:
                return
            self.connections += 1
            self._open.add(up_writer)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for end in (writer, up_writer):
                if end is not None:
                    self._open.discard(end)
                    end.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(2**16):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
