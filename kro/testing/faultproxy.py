"""kro.testing.faultproxy: a loopback TCP proxy in front of kube-apiserver that breaks on demand.

End-to-end tests need the failures a real network produces (a reset connection, bytes that are
not what the server sent, silence) against a real API server, with real TLS, in the real client.
`FaultProxy` listens on 127.0.0.1 (a free port), forwards every connection to the upstream
server as raw bytes (TLS passes through untouched: the proxy never sees a request), and can be
switched at any moment:

    Mode.PASS     forward both ways (the default)
    Mode.RESET    reset (RST) every open connection at once, and every new one on arrival
    Mode.GARBAGE  send garbage instead of the upstream's next bytes (for a new connection: instead
                  of its TLS ServerHello), then close; the client sees a broken TLS record
    Mode.STALL    hold every byte in both directions until the mode changes: connects, requests
                  and watches hang and time out; switching back releases what was held

    with FaultProxy.for_server(cluster.server) as proxy:
        kubeconfig = proxied_kubeconfig(original, proxy.url, tmp / "kubeconfig")
        ...                                   # a controller uses `kubeconfig`
        before = proxy.faults(Mode.RESET)
        proxy.set_mode(Mode.RESET)
        wait_for(lambda: proxy.faults(Mode.RESET) > before, what="a reset connection")
        proxy.set_mode(Mode.PASS)

Certificates: the harness's kube-apiserver certificate names IP 127.0.0.1 (kro.testing.pki), and
the proxy listens on 127.0.0.1 too, so a kubeconfig pointed at the proxy verifies the server
unchanged; for an upstream with another name, `proxied_kubeconfig` sets `tls-server-name`.

The proxy runs its own event loop on a daemon thread, so synchronous tests and tests on their
own loop can use it alike; every public method is thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml

T = TypeVar("T")

DEFAULT_GARBAGE = b"HTTP/1.1 200 OK\r\n\x00\x01\x02not the bytes you are looking for\xff\xfe\r\n"
"""Not a TLS record (and not valid HTTP either), so a TLS client fails at once."""
_READ_SIZE = 64 * 1024
_CONNECT_TIMEOUT_S = 10.0


class Mode(enum.Enum):
    """What the proxy does with connections; see the module docstring."""

    PASS = "pass"
    RESET = "reset"
    GARBAGE = "garbage"
    STALL = "stall"


class _Link:
    """One proxied connection: the client's streams and, once connected, the upstream's."""

    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.stalled = False  # counted as stalled in the current STALL episode

    def reset(self) -> None:
        for writer in (self.client, self.upstream):
            if writer is not None:
                _reset(writer)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST rather than FIN (SO_LINGER 0), as a crashed peer or a middlebox does."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class FaultProxy:
    """A switchable TCP proxy from 127.0.0.1:<port> to `upstream_host:upstream_port`."""

    def __init__(
        self, upstream_host: str, upstream_port: int, *, garbage: bytes = DEFAULT_GARBAGE
    ) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.garbage = garbage
        self.port = 0
        self._mode = Mode.PASS
        self._faults: Counter[Mode] = Counter()
        self._accepted = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._flowing: asyncio.Event | None = None
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    def for_server(cls, server: str, **kwargs: Any) -> FaultProxy:
        """A proxy for an API server URL such as `https://127.0.0.1:6443`."""
        parts = urlsplit(server)
        if parts.hostname is None:
            raise ValueError(f"no host in server URL {server!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.hostname, port, **kwargs)

    # -- lifecycle (any thread) ---------------------------------------------------------------

    def start(self, timeout_s: float = 10.0) -> FaultProxy:
        self._thread = threading.Thread(target=self._main, name="kro-fault-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"the fault proxy did not start within {timeout_s}s")
        if self._error is not None:
            raise RuntimeError("the fault proxy failed to start") from self._error
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        loop, stop, thread = self._loop, self._stop, self._thread
        if loop is None or stop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is already gone
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout_s)
        if thread.is_alive():
            raise TimeoutError("the fault proxy did not stop")

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- control (any thread) -----------------------------------------------------------------

    @property
    def url(self) -> str:
        """The URL clients use instead of the API server's (always https: TLS passes through)."""
        return f"https://127.0.0.1:{self.port}"

    @property
    def mode(self) -> Mode:
        return self._mode

    def set_mode(self, mode: Mode) -> None:
        """Switch now; returns once open connections have been dealt with (reset, released)."""
        self._call(lambda: self._switch(mode))

    def faults(self, mode: Mode) -> int:
        """Connections that met `mode` so far (reset, sent garbage, or held)."""
        with self._lock:
            return self._faults[mode]

    @property
    def accepted(self) -> int:
        """Connections accepted so far."""
        with self._lock:
            return self._accepted

    @property
    def open_connections(self) -> int:
        return self._call(lambda: _value(len(self._links)))

    def _call(self, make: Callable[[], Awaitable[T]], timeout_s: float = 10.0) -> T:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the fault proxy is not running")

        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout_s)

    # -- the proxy's own loop -----------------------------------------------------------------

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported to the thread that called start()
            self._error = error
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._flowing = asyncio.Event()
        self._flowing.set()
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(server.sockets[0].getsockname()[1])
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            # Break every connection and let its handler finish on its own: asyncio's stream
            # server reports a handler task that was cancelled as an error.
            self._mode = Mode.PASS
            self._flowing.set()
            for link in list(self._links):
                link.reset()
            if self._tasks:
                _, stuck = await asyncio.wait(set(self._tasks), timeout=_CONNECT_TIMEOUT_S)
                for task in stuck:
                    task.cancel()
            await server.wait_closed()

    def _count(self, mode: Mode) -> None:
        with self._lock:
            self._faults[mode] += 1

    async def _switch(self, mode: Mode) -> None:
        assert self._flowing is not None
        self._mode = mode
        if mode is Mode.STALL:
            self._flowing.clear()
            return
        for link in self._links:
            link.stalled = False
        self._flowing.set()
        if mode is Mode.RESET:
            for link in list(self._links):
                link.reset()
                self._count(Mode.RESET)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        link = _Link(writer)
        self._links.add(link)
        with self._lock:
            self._accepted += 1
        try:
            await self._proxy(link, reader)
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass  # a connection we (or the client, or the server) broke
        finally:
            self._links.discard(link)
            self._tasks.discard(task)
            for side in (link.client, link.upstream):
                if side is not None and not side.transport.is_closing():
                    side.transport.abort()

    async def _proxy(self, link: _Link, client: asyncio.StreamReader) -> None:
        if self._mode is Mode.RESET:
            link.reset()
            self._count(Mode.RESET)
            return
        if self._mode is Mode.GARBAGE:
            await client.read(1)  # the ClientHello has arrived: answer it with garbage
            await self._send_garbage(link.client)
            return
        async with asyncio.timeout(_CONNECT_TIMEOUT_S):
            upstream, link.upstream = await asyncio.open_connection(
                self.upstream_host, self.upstream_port
            )
        pumps = {
            asyncio.create_task(self._pump(link, client, link.upstream, down=False)),
            asyncio.create_task(self._pump(link, upstream, link.client, down=True)),
        }
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

    async def _pump(
        self,
        link: _Link,
        source: asyncio.StreamReader,
        sink: asyncio.StreamWriter,
        *,
        down: bool,
    ) -> None:
        """Copy `source` to `sink` chunk by chunk, applying the mode to every chunk."""
        assert self._flowing is not None
        while data := await source.read(_READ_SIZE):
            if not self._flowing.is_set():
                if not link.stalled:
                    link.stalled = True
                    self._count(Mode.STALL)
                await self._flowing.wait()
            if self._mode is Mode.RESET:
                return  # the switch has reset this link already
            if self._mode is Mode.GARBAGE and down:
                await self._send_garbage(sink)
                return
            sink.write(data)
            await sink.drain()

    async def _send_garbage(self, writer: asyncio.StreamWriter) -> None:
        self._count(Mode.GARBAGE)
        writer.write(self.garbage)
        await writer.drain()
        writer.close()


async def _value(value: T) -> T:
    return value


def proxied_kubeconfig(source: Path, proxy_url: str, dest: Path) -> Path:
    """A copy of kubeconfig `source` whose clusters are reached through `proxy_url`.

    Credentials are copied as they are. When a cluster's server was not 127.0.0.1, its name is
    kept as `tls-server-name`, so the server certificate is still verified against it.
    """
    config = yaml.safe_load(source.read_text())
    for entry in config.get("clusters") or []:
        cluster = entry["cluster"]
        host = urlsplit(cluster["server"]).hostname
        if host and host != "127.0.0.1" and "tls-server-name" not in cluster:
            cluster["tls-server-name"] = host
        cluster["server"] = proxy_url
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(config, indent=2))
    dest.chmod(0o600)
    return dest
