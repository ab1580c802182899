"""kro.runtime.tlsprocess: process-wide TLS costs a program that owns its process may cut.

Both settings are process-wide, so they are for a program like `kro controller`; a library
embedding kro.runtime leaves them alone, as it leaves the garbage collector alone
(kro.runtime.manager.GcTuning).

The read buffer. Why: Python's asyncio allocates a 256 KiB read buffer (`SSLProtocol.max_size`)
per TLS connection, zero-filled and so resident at once, whatever the responses' size. A
controller keeps up to `ClientOptions.pool_size` request connections (64) plus one per watch:
measured at 1,000 instances, 16.3 MiB of its resident memory were these buffers. A Kubernetes
response is read in as many buffer-sized reads as it needs, so a smaller buffer costs a few more
reads for large lists and nothing else; 32 KiB holds most objects in one read.
It applies to connections opened afterwards.

aiohttp's default trust store. Why: importing aiohttp builds two default SSL contexts at module
level, each loading the system's CA bundle (~45 ms of CPU apiece, 15 % of the controller's
start-up). They serve only requests that bring no SSL context of their own, and kro.runtime
brings its own for every https server (the cluster's CA, or the system's, loaded by
kro.runtime.config). `import_aiohttp_without_default_trust()` imports aiohttp with the CA
locations pointed nowhere for the duration of the import, then restores the environment: those
two contexts hold no CA and kro never uses them. Any other use of aiohttp in such a process
must pass its own SSL context.
"""

from __future__ import annotations

import os
import sys
from asyncio import sslproto

DEFAULT_BYTES = 32 * 1024


def set_tls_read_buffer(size: int = DEFAULT_BYTES) -> int:
    """Make TLS connections opened from now on read through a `size`-byte buffer; returns the
    previous size."""
    if size < 4096:
        raise ValueError("a TLS read buffer below 4 KiB would read a record in pieces")
    previous = int(sslproto.SSLProtocol.max_size)
    sslproto.SSLProtocol.max_size = size
    return previous


_CA_LOCATIONS = ("SSL_CERT_FILE", "SSL_CERT_DIR")


def import_aiohttp_without_default_trust() -> None:
    """Import aiohttp (once) without its default SSL contexts loading the system CA bundle."""
    if "aiohttp.connector" in sys.modules:
        return
    saved = {name: os.environ.get(name) for name in _CA_LOCATIONS}
    try:
        for name in _CA_LOCATIONS:
            os.environ[name] = os.path.join(os.sep, "nonexistent", "kro-no-default-trust")
        import aiohttp.connector  # noqa: F401  (the import is the point)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
