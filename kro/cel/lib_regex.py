"""kro.cel.lib_regex: the Kubernetes regex library: `s.find(re)` and `s.findAll(re[, n])`.

Patterns are RE2 upstream; Python's `re` accepts the RE2 syntax kro authors use (classes,
anchors, groups, `(?i)`), see docs/compatibility.md for the differences. Compiled patterns
are cached because expressions run every reconcile with the same literal pattern.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from kro.cel.library import Overload


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise ValueError(f"error parsing regexp: {err}") from None


def find(text: str, pattern: str) -> str:
    match = _compile(pattern).search(text)
    return match.group(0) if match else ""


def find_all(text: str, pattern: str) -> list[str]:
    return [m.group(0) for m in _compile(pattern).finditer(text)]


def find_all_limit(text: str, pattern: str, limit: int) -> list[str]:
    if limit == 0:
        return []
    matches = find_all(text, pattern)
    return matches if limit < 0 else matches[:limit]


OVERLOADS: Final = (
    Overload("find", "string_find_string", ("string", "string"), "string", find, True),
    Overload(
        "findAll", "string_find_all_string", ("string", "string"), "list<string>", find_all, True
    ),
    Overload(
        "findAll", "string_find_all_string_int", ("string", "string", "int"), "list<string>",
        find_all_limit, True,
    ),
)  # fmt: skip
