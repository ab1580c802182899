"""kro.graph.template.scanner: split one string into literal text and `${...}` expressions.

The rules are upstream kro's extractor, not a CEL lexer, because RGDs written for upstream must
split the same way here (reference §1.D):

* C-01 an expression runs from `${` to the matching `}`; braces are counted outside
  double-quoted string literals, where `\\` escapes the next character. Single quotes are NOT
  string delimiters (so `${'}'}` ends at the first `}`; write `${"}"}`).
* C-02 a string that is exactly one `${...}` is *standalone*: its value, of any type, replaces
  the field.
* C-03 anything else with expressions is a *string template*: the parts concatenate to a string.
* C-04 `${` inside an expression is an error unless the character before it is `"`
  (so `${"${VAR}"}` is the escape for a literal `${VAR}`, C-06).
* V-06 an unterminated `${` is an error (upstream v0.9 kept it as literal text, C-05; v0.10
  refuses it). A literal `${` is written as a CEL string: `${"${VAR}"}`.

Public API:
    parse_template(text) -> Template       raises NestedExpressionError,
                                           UnterminatedExpressionError
    parse_standalone(text) -> str          the one expression; raises NotStandaloneError (C-07)
    is_standalone(text) -> bool            never raises
    Template.parts / .expressions / .is_standalone / .has_expressions
    Template.render(values) -> str         literal parts + one string per expression
    Template.cel_source() -> str           one CEL expression for the whole value (C-03)
    TextPart(text), ExpressionPart(source)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kro.graph.errors import (
    NestedExpressionError,
    NotStandaloneError,
    SubstitutionError,
    TemplateError,
    UnterminatedExpressionError,
)
from kro.graph.template.quote import go_quote

EXPRESSION_START = "${"
EXPRESSION_END = "}"

NESTED_EXPRESSION_MESSAGE = "nested expressions are not allowed unless inside string literals"
NOT_STANDALONE_MESSAGE = "only standalone expressions are allowed"
UNTERMINATED_QUOTE_LIMIT = 80


@dataclass(frozen=True, slots=True)
class TextPart:
    """Literal text between expressions; never empty inside a Template."""

    text: str


@dataclass(frozen=True, slots=True)
class ExpressionPart:
    """The CEL source between `${` and `}`, verbatim (whitespace kept)."""

    source: str


Part = TextPart | ExpressionPart


@dataclass(frozen=True, slots=True)
class Template:
    """A string split into parts; joining the parts back (`${` + source + `}`) gives `text`."""

    text: str
    parts: tuple[Part, ...]

    @property
    def expressions(self) -> tuple[str, ...]:
        return tuple(p.source for p in self.parts if isinstance(p, ExpressionPart))

    @property
    def has_expressions(self) -> bool:
        return any(isinstance(p, ExpressionPart) for p in self.parts)

    @property
    def is_standalone(self) -> bool:
        """Exactly one expression spanning the whole string: its result keeps its type (C-02)."""
        return len(self.parts) == 1 and isinstance(self.parts[0], ExpressionPart)

    def render(self, values: Sequence[str]) -> str:
        """Concatenate the literal parts with one already-evaluated string per expression.

        Only strings are accepted: upstream type-checks every part of a string template as
        `string` (N-23), so anything else here means the caller skipped that check.
        """
        if isinstance(values, str) or len(values) != len(self.expressions):
            raise SubstitutionError(
                f"template has {len(self.expressions)} expressions, got "
                f"{1 if isinstance(values, str) else len(values)} values",
                expression=self.text,
            )
        out: list[str] = []
        it = iter(values)
        for part in self.parts:
            if isinstance(part, TextPart):
                out.append(part.text)
                continue
            value = next(it)
            if not isinstance(value, str):
                raise SubstitutionError(
                    f"string template expression {go_quote(part.source)} evaluated to "
                    f"{type(value).__name__}, expected string",
                    expression=self.text,
                )
            out.append(value)
        return "".join(out)

    def cel_source(self) -> str:
        """One CEL expression computing the whole value.

        Standalone: the expression itself. String template: `"lit" + (e1) + "lit2" + (e2)`,
        literals Go-quoted, as upstream compiles it (C-03). A newline before `)` keeps a trailing
        `// comment` in the expression from swallowing the parenthesis.
        """
        if self.is_standalone:
            return self.expressions[0]
        if not self.parts:
            return '""'
        pieces: list[str] = []
        for part in self.parts:
            if isinstance(part, TextPart):
                pieces.append(go_quote(part.text))
            elif "//" in part.source:
                pieces.append(f"({part.source}\n)")
            else:
                pieces.append(f"({part.source})")
        return " + ".join(pieces)


def parse_template(text: str) -> Template:
    """Split `text` into literal and expression parts (C-01..C-04, V-06)."""
    parts: list[Part] = []
    literal_start = 0
    search_from = 0
    while True:
        start = text.find(EXPRESSION_START, search_from)
        if start < 0:
            break
        end = _expression_end(text, start)
        if end < 0:
            raise UnterminatedExpressionError(unterminated_message(text, start), expression=text)
        if start > literal_start:
            parts.append(TextPart(text[literal_start:start]))
        parts.append(ExpressionPart(text[start + len(EXPRESSION_START) : end]))
        literal_start = search_from = end + 1
    if literal_start < len(text):
        parts.append(TextPart(text[literal_start:]))
    return Template(text, tuple(parts))


def _expression_end(text: str, start: int) -> int:
    """Index of the `}` closing the expression opened at `start`, or -1 if it never closes."""
    depth = 1
    in_string = False
    escaped = False
    i = start + len(EXPRESSION_START)
    while i < len(text):
        ch = text[i]
        if ch == "$" and text.startswith("{", i + 1) and text[i - 1] != '"':
            raise NestedExpressionError(NESTED_EXPRESSION_MESSAGE, expression=text)
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def unterminated_message(text: str, start: int) -> str:
    """Names the unclosed expression by its text from the `${` on (cut after 80 characters)."""
    fragment = text[start:]
    if len(fragment) > UNTERMINATED_QUOTE_LIMIT:
        fragment = fragment[:UNTERMINATED_QUOTE_LIMIT] + "..."
    return f'unterminated expression {go_quote(fragment)}: missing closing "}}"'


def is_standalone(text: str) -> bool:
    """True if `text` is exactly one `${...}`; malformed text is simply not standalone."""
    try:
        return parse_template(text).is_standalone
    except TemplateError:
        return False


def parse_standalone(text: str) -> str:
    """The expression of a value that must be exactly one `${...}` (readyWhen, includeWhen,
    forEach values, status.conditions entries; C-07). YAML `|` block scalars end in a newline
    and therefore fail here; authors must use `|-`."""
    template = parse_template(text)
    if not template.is_standalone:
        raise NotStandaloneError(NOT_STANDALONE_MESSAGE, expression=text)
    return template.expressions[0]
