"""_engine_compat.syntax: source rules of upstream's parser that cel-cpp's parser does not apply.

cel-cpp accepts backtick-quoted field names (`obj.\\`in\\``, `obj.\\`a-b\\``) unconditionally;
cel-go accepts them only with `EnableIdentEscapeSyntax`, which kro does not enable, and
reports `unsupported syntax '\\``. Upstream reaches such properties of a typed object by
their escaped names instead (`obj.__in__`, `obj.a__dash__b`, see `types.cel_field_names`),
and map keys by index (`m["a-b"]`). So a backtick outside string literals and comments is
refused here, with cel-go's words, before the engine parses the expression.
"""

from __future__ import annotations

from typing import Final

from kro.cel.errors import CelCompileError

_PREFIXES: Final = frozenset("rRbB")


def check(expression: str) -> None:
    """Raise CelCompileError if `expression` quotes an identifier with backticks."""
    if "`" not in expression:
        return
    offset = _backtick(expression)
    if offset is None:
        return
    line = expression.count("\n", 0, offset) + 1
    start = expression.rfind("\n", 0, offset) + 1
    end = expression.find("\n", offset)
    text = expression[start : end if end >= 0 else len(expression)]
    column = offset - start
    raise CelCompileError(
        expression=expression,
        message=(
            f"ERROR: <input>:{line}:{column + 1}: unsupported syntax '`'\n"
            f" | {text}\n | {'.' * column}^"
        ),
    )


def _backtick(source: str) -> int | None:
    """The offset of the first backtick outside string literals and `//` comments."""
    i, n = 0, len(source)
    while i < n:
        char = source[i]
        if char == "`":
            return i
        if char == "/" and source.startswith("//", i):
            newline = source.find("\n", i)
            i = n if newline < 0 else newline + 1
            continue
        if char in "'\"":
            i = _after_string(source, i, raw=_is_raw(source, i))
            continue
        i += 1
    return None


def _is_raw(source: str, quote: int) -> bool:
    """True if the literal starting at `quote` has an `r` among its (one or two) prefixes."""
    j = quote
    while j > 0 and quote - j < 2 and source[j - 1] in _PREFIXES:
        j -= 1
    if j > 0 and (source[j - 1].isalnum() or source[j - 1] == "_"):
        return False  # part of an identifier (`attr"...` is not a prefix)
    return "r" in source[j:quote].lower()


def _after_string(source: str, start: int, *, raw: bool) -> int:
    """The offset just past the string literal opening at `start`."""
    quote = source[start]
    delimiter = quote * 3 if source.startswith(quote * 3, start) else quote
    i = start + len(delimiter)
    n = len(source)
    while i < n:
        if not raw and source[i] == "\\":
            i += 2
            continue
        if source.startswith(delimiter, i):
            return i + len(delimiter)
        if len(delimiter) == 1 and source[i] == "\n":
            return i  # unterminated: the engine reports it
        i += 1
    return n
