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

import functools
from typing import Final

import re2

from kro.cel import budget
from kro.cel.library import Overload

_OPTIONS: Final = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every bad pattern on stderr

# RE2's parse error texts, in Go regexp's words (regexp/syntax ErrorCode strings).
_GO_REASONS: Final = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class range": "invalid character class range",
    "invalid character class": "invalid character class",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "invalid UTF-8": "invalid UTF-8",
    "pattern too large - compile failed": "expression too large",
}
_CHECK_EVERY: Final = 256  # matches between time-budget checks in findAll


def go_error(text: str) -> str:
    """`error parsing regexp: ...` for an RE2 error text `<reason>: <fragment>`."""
    reason, _, fragment = text.partition(": ")
    go = _GO_REASONS.get(reason)
    if go is None:
        return f"error parsing regexp: {text}"
    detail = f"{go}: `{fragment}`" if fragment else go
    return f"error parsing regexp: {detail}"


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> re2._Regexp[str]:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as err:
        raw = err.args[0] if err.args else ""
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        raise ValueError(go_error(text)) from None


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
