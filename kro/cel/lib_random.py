"""kro.cel.lib_random: `random.seededString` and `random.seededInt` (C-19, C-20).

Deterministic "random" values derived from a seed (usually the instance UID or name), so a
generated password or node port stays the same across reconciles. The algorithms match
upstream `pkg/cel/library/random.go` bit for bit, including the quirk that seededString
repeats with period 8 (the re-hash branch for `start + 4 > 32` can never run).
"""

from __future__ import annotations

import hashlib
from typing import Final

from kro.cel.library import Overload

ALPHABET: Final = "0123456789abcdefghijklmnopqrstuvwxyz"
_U64: Final = (1 << 64) - 1


def seeded_string(length: int, seed: str) -> str:
    if length <= 0:
        raise ValueError("random.seededString length must be positive")
    digest = hashlib.sha256(seed.encode()).digest()
    out = []
    for i in range(length):
        start = (i * 4) % len(digest)
        if start + 4 > len(digest):  # unreachable: 32 % 4 == 0; kept to mirror upstream
            digest = hashlib.sha256(digest).digest()
            start = 0
        index = int.from_bytes(digest[start : start + 4], "big") % len(ALPHABET)
        out.append(ALPHABET[index])
    return "".join(out)


def seeded_int(minimum: int, maximum: int, seed: str) -> int:
    if minimum >= maximum:
        raise ValueError("random.seededInt min must be less than max")
    value = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
    span = (maximum - minimum) & _U64  # Go: uint64(max-min), wrapping like int64 math
    result = (minimum + value % span) & _U64
    return result - (1 << 64) if result >= 1 << 63 else result


OVERLOADS: Final = (
    Overload(
        "random.seededString", "random_seededString_int_string", ("int", "string"), "string",
        seeded_string,
    ),
    Overload(
        "random.seededInt", "random_seededInt_int_int_string", ("int", "int", "string"), "int",
        seeded_int,
    ),
)  # fmt: skip
