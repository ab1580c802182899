"""kro.cel.lib_random: `random.seededString` and `random.seededInt` (C-19, C-20).

Deterministic "random" values derived from a seed (usually the instance UID or name), so a
generated password or node port stays the same across reconciles. The algorithms match
upstream `pkg/cel/library/random.go` bit for bit, including the quirk that seededString
repeats with period 8 (the re-hash branch for `start + 4 > 32` can never run).

That period is also why a long string costs nothing to build: the first eight characters
are computed as upstream computes every one, then repeated. Upstream has no length limit;
here a length above the per-value size limit (3 MiB by default, `limits`) fails before
anything is built, naming the function and the limit.
"""

from __future__ import annotations

import hashlib
from typing import Final

from kro.cel import budget
from kro.cel.library import Overload

ALPHABET: Final = "0123456789abcdefghijklmnopqrstuvwxyz"
_U64: Final = (1 << 64) - 1
_PERIOD: Final = 8  # 32 digest bytes / 4 bytes per character


def seeded_string(length: int, seed: str) -> str:
    if length <= 0:
        raise ValueError("random.seededString length must be positive")
    budget.check_length("random.seededString", "length", length)
    period = _period(seed)
    repeats, rest = divmod(length, len(period))
    return period * repeats + period[:rest]


def _period(seed: str) -> str:
    """Characters 0..7 of upstream's sequence; character i is character i % 8."""
    digest = hashlib.sha256(seed.encode()).digest()
    out = []
    for i in range(_PERIOD):
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
