"""kro.runtime.tlsbuffers: the read buffer asyncio gives every TLS connection.

Why: Python's asyncio allocates a 256 KiB read buffer (`SSLProtocol.max_size`) per TLS
connection, zero-filled and so resident at once, whatever the responses' size. A controller
keeps up to `ClientOptions.pool_size` request connections (64) plus one per watch: measured at
1,000 instances, 16.3 MiB of its resident memory were these buffers. A Kubernetes response is
read in as many buffer-sized reads as it needs, so a smaller buffer costs a few more reads for
large lists and nothing else; 32 KiB holds most objects in one read.

The buffer size is process-wide (a class attribute of asyncio), so this is for a program that
owns its process, like `kro controller`; a library embedding kro.runtime leaves it alone, as it
leaves the garbage collector alone (kro.runtime.manager.GcTuning). It applies to connections
opened afterwards.
"""

from __future__ import annotations

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
