"""kro.cel.lib_regex: the Kubernetes regex library: `s.find(re)` and `s.findAll(re[, n])`.

Upstream runs these on Go's `regexp`, an RE2 engine: matching is linear in the input
whatever the pattern, so an author cannot write a pattern that takes exponential time
(`(a+)+$`). A backtracking engine such as Python's `re` can, and one call would freeze the
controller, so kro-py matches with RE2 itself (google-re2). Syntax and semantics follow Go:
leftmost-first matches, `findAll` skips an empty match that abuts the previous match and
steps over whole characters after an empty match, bad patterns fail with Go's
`error parsing regexp: <reason>: `<fragment>`` wording.

findAll checks the evaluation's time budget while it collects matches and stops at the
per-value size limit, so a pattern matching every position of a large string cannot build
a list of millions of strings. Compiled patterns are cached: expressions run every
reconcile with the same literal pattern.
"""

from __future__ import annotations

from typing import Final

from kro.cel import budget
from kro.cel.go_regexp import compile_go as _compile
from kro.cel.library import Overload

_CHECK_EVERY: Final = 256  # matches between time-budget checks in findAll


def find(text: str, pattern: str) -> str:
    match = _compile(pattern).search(text.encode())
    return match.group(0).decode(errors="replace") if match else ""


def find_all(text: str, pattern: str) -> list[str]:
    return find_all_limit(text, pattern, -1)


def find_all_limit(text: str, pattern: str, limit: int) -> list[str]:
    """Go's `FindAllString(text, limit)`: non-overlapping matches, at most `limit` (< 0: all)."""
    regexp = _compile(pattern)
    if limit == 0:
        return []
    data = text.encode()
    end = len(data)
    out: list[str] = []
    size = 0
    max_size = budget.current_limits().max_value_bytes
    pos, previous_end = 0, -1
    while pos <= end and (limit < 0 or len(out) < limit):
        match = regexp.search(data, pos)
        if match is None:
            break
        start, stop = match.span()
        accept = True
        if stop == start:  # an empty match: step over one whole character
            accept = start != previous_end
            pos = stop + _char_width(data, stop) if stop < end else end + 1
        else:
            pos = stop
        previous_end = stop
        if accept:
            out.append(data[start:stop].decode(errors="replace"))
            size += stop - start + 8
            if size > max_size:
                raise budget.too_large("findAll", size)
            if len(out) % _CHECK_EVERY == 0:
                budget.enter("findAll")
    return out


def _char_width(data: bytes, index: int) -> int:
    """Bytes of the UTF-8 character starting at `index` (1 for a stray byte, as Go)."""
    lead = data[index]
    if lead < 0x80:
        return 1
    width = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return width if index + width <= len(data) else 1


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
