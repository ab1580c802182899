"""kro.graph.template.fieldpath: where a value sits inside a resource template.

A path is a tuple of segments: `str` for a map key, `int` for a list index. Its text form is the
one upstream kro prints in messages (`type mismatch ... at path "spec.replicas"`):

    spec.containers[0].image
    metadata.labels["app.kubernetes.io/name"]      keys with `.`, `[`, `]` or empty keys are
                                                   bracketed and Go-quoted, so parsing round-trips

Public API:
    FieldPath(segments=())          frozen, hashable; `str()` gives the text form
    FieldPath.parse(text)           text form -> FieldPath (FieldPathError if malformed)
    path.child(segment)             one segment deeper
    path + other                    concatenation
    ROOT                            the empty path (the object itself)
"""

from __future__ import annotations

from dataclasses import dataclass

from kro.graph.errors import FieldPathError
from kro.graph.template.quote import go_quote, go_unquote

Segment = str | int

_NEEDS_BRACKETS = frozenset(".[]")


@dataclass(frozen=True, slots=True)
class FieldPath:
    """An immutable location inside a JSON-like object; segments are keys (str) or indexes (int)."""

    segments: tuple[Segment, ...] = ()

    def __post_init__(self) -> None:
        for seg in self.segments:
            # bool is an int subclass; a True index is always a bug upstream of here.
            if isinstance(seg, bool) or not isinstance(seg, str | int):
                raise TypeError(f"field path segment must be str or int, got {type(seg).__name__}")
            if isinstance(seg, int) and seg < 0:
                raise ValueError(f"field path index must be >= 0, got {seg}")

    def child(self, segment: Segment) -> FieldPath:
        return FieldPath((*self.segments, segment))

    def __add__(self, other: FieldPath) -> FieldPath:
        return FieldPath(self.segments + other.segments)

    def __str__(self) -> str:
        out: list[str] = []
        for seg in self.segments:
            if isinstance(seg, int):
                out.append(f"[{seg}]")
            elif not seg or _NEEDS_BRACKETS.intersection(seg):
                out.append(f"[{go_quote(seg)}]")
            else:
                out.append(f".{seg}" if out else seg)
        return "".join(out)

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        """Parse the text form; the empty string is ROOT."""
        return cls(tuple(_Parser(text).segments()))


ROOT = FieldPath()


class _Parser:
    """One left-to-right pass over `name`, `.name`, `[N]` and `["quoted"]` segments."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, reason: str) -> FieldPathError:
        return FieldPathError(f"invalid field path {go_quote(self.text)}: {reason}")

    def segments(self) -> list[Segment]:
        out: list[Segment] = []
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "[":
                out.append(self.bracket())
            elif ch == ".":
                if not out:
                    raise self.fail("leading '.'")
                self.pos += 1
                out.append(self.name())
            elif out:
                raise self.fail(f"expected '.' or '[' at offset {self.pos}")
            else:
                out.append(self.name())
        return out

    def name(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ".[":
            self.pos += 1
        if self.pos == start:
            raise self.fail(f"empty field name at offset {start}")
        return self.text[start : self.pos]

    def bracket(self) -> Segment:
        text = self.text
        start = self.pos
        self.pos += 1  # '['
        if self.pos < len(text) and text[self.pos] == '"':
            end = self.pos + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if end >= len(text):
                raise self.fail(f"unterminated quoted key at offset {start}")
            try:
                key = go_unquote(text[self.pos : end + 1])
            except ValueError as exc:
                raise self.fail(f"bad quoted key at offset {start}: {exc}") from None
            self.pos = end + 1
            self.expect_close(start)
            return key
        digits_start = self.pos
        while self.pos < len(text) and text[self.pos].isascii() and text[self.pos].isdigit():
            self.pos += 1
        if self.pos == digits_start:
            raise self.fail(f"expected an index or a quoted key at offset {start}")
        index = int(text[digits_start : self.pos])
        self.expect_close(start)
        return index

    def expect_close(self, start: int) -> None:
        if self.pos >= len(self.text) or self.text[self.pos] != "]":
            raise self.fail(f"missing ']' for '[' at offset {start}")
        self.pos += 1
