"""kro.cel.lib_hash: `hash.fnv64a`, `hash.sha256`, `hash.md5` (C-21, C-22).

They return raw digest bytes, which cannot be stored in an object directly (C-23): authors
write `base64.encode(hash.sha256(x))` or `"%x".format([hash.sha256(x)])`.

FNV-1a has no C implementation in the standard library; the Python loop costs about 0.1 µs
a byte, so it works in chunks and checks the evaluation's time budget between them.
"""

from __future__ import annotations

import hashlib
from typing import Final

from kro.cel import budget
from kro.cel.library import Overload

_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_U64: Final = (1 << 64) - 1
_CHUNK: Final = 64 * 1024  # bytes between time-budget checks: a few milliseconds


def fnv64a(text: str) -> bytes:
    value = _FNV_OFFSET
    data = text.encode()
    for start in range(0, len(data), _CHUNK):
        if start:
            budget.enter("hash.fnv64a")
        for byte in data[start : start + _CHUNK]:
            value = ((value ^ byte) * _FNV_PRIME) & _U64
    return value.to_bytes(8, "big")


def sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def md5(text: str) -> bytes:
    return hashlib.md5(text.encode(), usedforsecurity=False).digest()


OVERLOADS: Final = (
    Overload("hash.fnv64a", "hash_fnv64a_string", ("string",), "bytes", fnv64a),
    Overload("hash.sha256", "hash_sha256_string", ("string",), "bytes", sha256),
    Overload("hash.md5", "hash_md5_string", ("string",), "bytes", md5),
)
