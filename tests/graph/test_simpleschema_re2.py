"""Go regexp (RE2) syntax checking for `pattern=` markers (S-21)."""

import pytest

from kro.graph.simpleschema import re2_syntax_error

VALID = [
    "^[a-z]([-a-z0-9]*[a-z0-9])?$",
    "^v[0-9]+(alpha[0-9]+|beta[0-9]+)?$",
    r"^\d{1,3}(\.\d{1,3}){3}$",
    r"\pL+",
    r"\p{Greek}\P{Han}\p{^Latin}",
    r"[\p{Lu}\d_]",
    r"\Aabc\z",
    r"\bword\B",
    r"(?i)abc",
    r"a(?i)bc",
    r"(?i:abc)",
    r"(?-s:.)",
    r"(?U)a+",
    r"(?P<year>\d{4})-(?<month>\d{2})",
    r"[[:alpha:][:^digit:]]",
    r"[]a]",
    r"[^]a]",
    r"[a-]",
    r"\Q.*+\E",
    r"\x41\x{263a}\101\0",
    r"\.\*\_",
    "a{,3}",  # not a repeat: literal text
    "a{01}",  # leading zero: not a repeat
    "x{2}{",  # trailing literal brace
    "a{1000}",
    "a*?b+?c??d{2}?",
    "^*",
    "()",
    "a||b",
    "",
]


@pytest.mark.parametrize("pattern", VALID)
def test_go_accepts(pattern: str) -> None:
    assert re2_syntax_error(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "expr_and_code"),
    [
        pytest.param("(abc", "missing closing ): `(abc`", id="missing paren"),
        pytest.param("abc)", "unexpected ): `abc)`", id="unexpected paren"),
        pytest.param("a|b)", "unexpected ): `a|b)`", id="unexpected paren after alternation"),
        pytest.param("[abc", "missing closing ]: `[abc`", id="missing bracket"),
        pytest.param("x[a-", "missing closing ]: `[a-`", id="missing bracket in range"),
        pytest.param("[z-a]", "invalid character class range: `z-a`", id="reversed range"),
        pytest.param("[[:foo:]]", "invalid character class range: `[:foo:]`", id="posix name"),
        pytest.param(r"\p{Foo}", r"invalid character class range: `\p{Foo}`", id="unicode name"),
        pytest.param(r"\p{Greek", r"invalid character class range: `\p{Greek`", id="unclosed \\p"),
        pytest.param(r"\pX", r"invalid character class range: `\pX`", id="unknown one-letter"),
        pytest.param("*a", "missing argument to repetition operator: `*`", id="leading star"),
        pytest.param("a|*", "missing argument to repetition operator: `*`", id="star after bar"),
        pytest.param("(+)", "missing argument to repetition operator: `+`", id="plus after paren"),
        pytest.param("{2}", "missing argument to repetition operator: `{2}`", id="leading repeat"),
        pytest.param("a**", "invalid nested repetition operator: `**`", id="double star"),
        pytest.param("a++", "invalid nested repetition operator: `++`", id="possessive"),
        pytest.param("a*?+", "invalid nested repetition operator: `*?+`", id="lazy then plus"),
        pytest.param("a{2}*", "invalid nested repetition operator: `{2}*`", id="repeat then star"),
        pytest.param("a{1001}", "invalid repeat count: `{1001}`", id="count too big"),
        pytest.param("a{3,2}", "invalid repeat count: `{3,2}`", id="min over max"),
        pytest.param("a{2,1001}", "invalid repeat count: `{2,1001}`", id="max too big"),
        pytest.param(
            "a{999999999999}", "invalid repeat count: `{999999999999}`", id="count overflow"
        ),
        pytest.param("(?=a)", "invalid or unsupported Perl syntax: `(?=`", id="lookahead"),
        pytest.param("(?!a)", "invalid or unsupported Perl syntax: `(?!`", id="negative look"),
        pytest.param("(?<=a)", "invalid named capture: `(?<=a)`", id="lookbehind"),
        pytest.param("(?>a)", "invalid or unsupported Perl syntax: `(?>`", id="atomic group"),
        pytest.param("(?#c)", "invalid or unsupported Perl syntax: `(?#`", id="comment group"),
        pytest.param("(?i", "invalid or unsupported Perl syntax: `(?i`", id="unclosed flags"),
        pytest.param("(?i-)", "invalid or unsupported Perl syntax: `(?i-)`", id="dangling -"),
        pytest.param("(?P<>a)", "invalid named capture: `(?P<>`", id="empty capture name"),
        pytest.param("(?P<a-b>x)", "invalid named capture: `(?P<a-b>`", id="bad capture name"),
        pytest.param("(?P<name", "invalid named capture: `(?P<name`", id="unclosed name"),
        pytest.param(r"(a)\1", r"invalid escape sequence: `\1`", id="backreference"),
        pytest.param(r"a\Z", r"invalid escape sequence: `\Z`", id="python end anchor"),
        pytest.param(r"\C", r"invalid escape sequence: `\C`", id="any byte"),
        pytest.param(r"\e", r"invalid escape sequence: `\e`", id="unknown letter"),
        pytest.param(r"\u0041", r"invalid escape sequence: `\u`", id="python unicode escape"),
        pytest.param(r"\xZ1", r"invalid escape sequence: `\xZ1`", id="bad hex"),
        pytest.param(r"\x{}", r"invalid escape sequence: `\x{}`", id="empty braced hex"),
        pytest.param(r"\x{110000}", r"invalid escape sequence: `\x{110000`", id="hex too big"),
        pytest.param(r"[\b]", r"invalid escape sequence: `\b`", id="backspace in class"),
        pytest.param("ab\\", "trailing backslash at end of expression: ``", id="trailing \\"),
    ],
)
def test_go_rejects_with_its_message(pattern: str, expr_and_code: str) -> None:
    assert re2_syntax_error(pattern) == f"error parsing regexp: {expr_and_code}"


def test_a_lone_surrogate_reads_as_the_replacement_character_as_in_go() -> None:
    # A JSON string can carry one (`"\ud800"`); Go's JSON decoder makes it U+FFFD.
    assert re2_syntax_error("ab\ud800c+") is None


@pytest.mark.parametrize(
    "pattern",
    [r"\Q\C\E", "[{999999999}]", r"\{999999999}", r"\x{000000041}", r"\p{Greek}{2}"],
    ids=["quoted", "brace-in-class", "escaped-brace", "long-hex", "repeat-after-class"],
)
def test_go_accepts_what_only_looks_like_its_exceptions_to_re2(pattern: str) -> None:
    assert re2_syntax_error(pattern) is None


def test_any_byte_in_a_class_is_refused_by_both() -> None:
    assert re2_syntax_error(r"[\C]") == r"error parsing regexp: invalid escape sequence: `\C`"
