"""kro.cel.go_regexp: Go's `regexp` verdict on a pattern, from RE2 itself.

Upstream compiles patterns with Go's `regexp` (CEL's `find` / `findAll`, and the `pattern=`
marker of SimpleSchema, which the apiserver enforces with the same engine). Go's parser is a
port of RE2's, so RE2 (google-re2) accepts and rejects the same patterns for the same reasons;
what differs is the wording, and `_GO_REASONS` translates RE2's error texts into Go's
`regexp/syntax` ErrorCode strings. Go's message always has the form
``error parsing regexp: <reason>: `<fragment>` ``.

Where the two parsers disagree, Go's verdict wins (`_go_only_error`, run on patterns RE2
accepted, and `_named_capture`):

- `\\C` (any byte): RE2 accepts it, Go rejects it as an invalid escape;
- a repeat count of nine digits or more (`a{999999999}`): RE2 reads the braces as literal text,
  Go rejects the count as too large;
- `(?<=` and `(?<!` (lookbehind): both reject them, RE2 as a Perl operator, Go as a named
  capture (`(?<` starts one since Go 1.22), quoting up to the next `>` or the end;
- a lone surrogate (JSON can carry one, `"\\ud800"`) cannot be encoded as UTF-8; upstream
  never sees one, because Go's JSON decoder turns it into U+FFFD, and so does this module.

Unicode class names follow RE2's tables, which can differ from Go's for scripts added in a
Unicode version one of them has not picked up yet.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Final

import re2

_OPTIONS: Final = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every bad pattern on stderr

PREFIX: Final = "error parsing regexp: "

# RE2's parse error texts (re2::RegexpStatus::CodeText), in Go regexp's words.
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
    "bad nesting depth": "expression nests too deeply",
}
_INVALID_ESCAPE: Final = "invalid escape sequence"
_INVALID_REPEAT_COUNT: Final = "invalid repeat count"
_INVALID_NAMED_CAPTURE: Final = "invalid named capture"
_INVALID_PERL: Final = "invalid perl operator"
# Go's parseInt gives up on a count of more than eight digits; RE2's gives up too, but then
# reads the braces as literal text instead of failing.
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_BIG_REPEAT: Final = re.compile(r"\{[0-9]{9,}(?:,[0-9]*)?\}|\{[0-9]+,[0-9]{9,}\}")


def message(reason: str, fragment: str) -> str:
    """Go's `regexp/syntax.Error` text."""
    return f"{PREFIX}{reason}: `{fragment}`"


def syntax_error(pattern: str) -> str | None:
    """Go's `regexp.Compile` error text for `pattern`, or None if Go accepts it."""
    try:
        _compile(pattern)
    except ValueError as err:
        return str(err)
    return None


def compile_go(pattern: str) -> re2._Regexp[str]:
    """`pattern` compiled with RE2 (cached); raises ValueError with Go's message if Go would
    reject it."""
    return _compile(pattern)


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> re2._Regexp[str]:
    pattern = _SURROGATE.sub("\ufffd", pattern)
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as err:
        raw = err.args[0] if err.args else ""
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        raise ValueError(_translated(pattern, text)) from None
    problem = _go_only_error(pattern)
    if problem is not None:
        raise ValueError(problem)
    return compiled


def _translated(pattern: str, text: str) -> str:
    """RE2's `<reason>: <fragment>` in Go's words."""
    reason, _, fragment = text.partition(": ")
    if reason == _INVALID_PERL and fragment.startswith("(?<"):
        return _named_capture(pattern)
    go = _GO_REASONS.get(reason)
    if go is None:
        return f"{PREFIX}{text}"
    return message(go, fragment)


def _named_capture(pattern: str) -> str:
    """Go's error for a `(?<` that does not start a valid named capture: the text from the
    first `(?<` outside classes and escapes up to the next `>` (or the end)."""
    start = next((i for i, ch in _top_level(pattern) if pattern.startswith("(?<", i)), 0)
    end = pattern.find(">", start)
    return message(_INVALID_NAMED_CAPTURE, pattern[start:] if end < 0 else pattern[start : end + 1])


def _go_only_error(pattern: str) -> str | None:
    """Go's error for a pattern RE2 accepted but Go does not (see the module docstring)."""
    for i, ch in _top_level(pattern):
        if ch == "\\" and pattern.startswith("\\C", i):
            return message(_INVALID_ESCAPE, "\\C")
        if ch == "{":
            big = _BIG_REPEAT.match(pattern, i)
            if big is not None:
                return message(_INVALID_REPEAT_COUNT, big.group(0))
    return None


def _top_level(pattern: str) -> Iterator[tuple[int, str]]:
    """(index, character) of each character outside character classes and escape bodies: the
    operators, literals and the backslash of each escape. The pattern must be valid up to
    where the caller stops reading."""
    i, end = 0, len(pattern)
    while i < end:
        ch = pattern[i]
        yield i, ch
        if ch == "\\":
            i = _escape_end(pattern, i)
        elif ch == "[":
            i = _class_end(pattern, i)
        else:
            i += 1


def _escape_end(pattern: str, i: int) -> int:
    """The index after the escape at `i` (`\\Q...\\E`, `\\x{...}`, `\\p{...}` included)."""
    kind = pattern[i + 1 : i + 2]
    if kind == "Q":
        close = pattern.find("\\E", i + 2)
        return len(pattern) if close < 0 else close + 2
    if kind in ("x", "p", "P") and pattern.startswith("{", i + 2):
        return pattern.index("}", i + 2) + 1
    return i + 2


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class opening at `i`."""
    i += 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):  # a leading `]` is a literal
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "\\":
            i = _escape_end(pattern, i)
        elif pattern.startswith("[:", i) and ":]" in pattern[i + 2 :]:
            i = pattern.index(":]", i + 2) + 2
        else:
            i += 1
    return i + 1
