"""Process-wide TLS settings: a TLS connection opened afterwards reads through the smaller
buffer and still reads a response larger than it, from a TLS server on loopback; aiohttp
imported without its default trust store leaves the environment as it was."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
from asyncio import sslproto
from collections.abc import Iterator
from pathlib import Path

import pytest

from kro.runtime.tlsprocess import set_tls_read_buffer


@pytest.fixture
def restore() -> Iterator[None]:
    previous = sslproto.SSLProtocol.max_size
    yield
    sslproto.SSLProtocol.max_size = previous


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return key, cert


async def test_connections_read_through_the_smaller_buffer(tmp_path: Path, restore: None) -> None:
    key, cert = _certificate(tmp_path)
    payload = bytes(range(256)) * 1024  # 256 KiB: eight reads of the 32 KiB buffer
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)

    async def serve(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(payload)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    assert set_tls_read_buffer() == 256 * 1024
    client_ctx = ssl.create_default_context(cafile=str(cert))
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx)
        ssl_protocol = writer.transport._ssl_protocol  # type: ignore[attr-defined]
        assert len(ssl_protocol._ssl_buffer) == 32 * 1024
        assert await reader.readexactly(len(payload)) == payload
        writer.close()


def test_a_buffer_too_small_is_refused(restore: None) -> None:
    with pytest.raises(ValueError, match="below 4 KiB"):
        set_tls_read_buffer(1024)


def test_aiohttp_is_imported_without_default_trust_and_the_environment_is_restored() -> None:
    """In a fresh interpreter (aiohttp not yet imported): its default verified context holds no
    CA, and SSL_CERT_FILE / SSL_CERT_DIR are what they were (one set, one unset)."""
    script = (
        "import os, sys\n"
        "os.environ['SSL_CERT_FILE'] = '/etc/mine.pem'\n"
        "os.environ.pop('SSL_CERT_DIR', None)\n"
        "from kro.runtime.tlsprocess import import_aiohttp_without_default_trust\n"
        "import_aiohttp_without_default_trust()\n"
        "import aiohttp.connector as c\n"
        "print(c._SSL_CONTEXT_VERIFIED.cert_store_stats()['x509_ca'])\n"
        "print(os.environ.get('SSL_CERT_FILE'), os.environ.get('SSL_CERT_DIR'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout.split("\n")
    assert out[0] == "0"
    assert out[1] == "/etc/mine.pem None"
