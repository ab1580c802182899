"""`find` / `findAll` run on RE2 with Go's semantics: linear time whatever the pattern, Go's
empty-match rules and Go's `error parsing regexp: ...` messages (k8s Regex library, C-18)."""

from __future__ import annotations

from typing import Any

import pytest

from kro.cel import CelEnvironment, CelOptions, EvaluationLimits, ExpressionError, Value

ENV = CelEnvironment(declarations={"schema": None})


def _eval(expression: str, **spec: Any) -> Value | ExpressionError:
    result = ENV.compile(expression).evaluate(ENV.bind({"schema": {"spec": spec}}))
    assert isinstance(result, Value | ExpressionError), result
    return result


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("(a+)+$", "a" * 30 + "!", ""),
        ("(a+)+$", "x" + "a" * 5000, "a" * 5000),
        ("(a|aa)*b", "a" * 10000, ""),
        ("(x+x+)+y", "x" * 5000, ""),
    ],
    ids=["nested-plus-no-match", "nested-plus-match", "alternation", "double-plus"],
)
def test_catastrophic_patterns_finish_with_re2_results(
    pattern: str, text: str, expected: str
) -> None:
    assert _eval("schema.spec.text.find(schema.spec.pattern)", text=text, pattern=pattern) == Value(
        expected
    )


@pytest.mark.timeout(10)
def test_catastrophic_pattern_in_find_all_finishes() -> None:
    result = _eval('schema.spec.text.findAll("(a+)+$")', text="a" * 30 + "!")
    assert result == Value([])


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('"baaac".findAll("a*")', ["", "aaa", ""]),  # Go skips the empty match after "aaa"
        ('"abc".findAll("")', ["", "", "", ""]),
        ('"héllo".findAll("")', ["", "", "", "", "", ""]),  # one step per character
        ('"héllo wörld".findAll("[^ ]+")', ["héllo", "wörld"]),
        ('"a1b22c333".findAll("[0-9]+", 2)', ["1", "22"]),
        ('"a1b22c333".findAll("[0-9]+", -1)', ["1", "22", "333"]),
        ('"ab ab".findAll("^ab")', ["ab"]),  # ^ anchors at the text start only
        ('"ab ab".findAll("\\\\bab")', ["ab", "ab"]),
        ('"x9".find("\\\\pN")', "9"),  # RE2-only syntax Python's re lacks
        ('"key=value".find("(?P<k>\\\\w+)=")', "key="),
        ('"ABC".find("(?i)b")', "B"),
    ],
    ids=[
        "empty-after-match",
        "empty-pattern",
        "empty-pattern-unicode",
        "unicode-text",
        "limit",
        "negative-limit",
        "caret",
        "word-boundary",
        "unicode-class",
        "named-group",
        "case-insensitive",
    ],
)
def test_go_semantics(expression: str, expected: Any) -> None:
    assert _eval(expression) == Value(expected)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(", "error parsing regexp: missing closing ): `(`"),
        ("a)", "error parsing regexp: unexpected ): `a)`"),
        ("[a", "error parsing regexp: missing closing ]: `[a`"),
        ("a**", "error parsing regexp: invalid nested repetition operator: `**`"),
        ("a{1001}", "error parsing regexp: invalid repeat count: `{1001}`"),
        ("(?=x)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
        ("x\\", "error parsing regexp: trailing backslash at end of expression: ``"),
        # Where RE2 and Go's parser disagree, Go decides (RE2 accepts the first two).
        ("a\\Cb", "error parsing regexp: invalid escape sequence: `\\C`"),
        ("a{1000000000}", "error parsing regexp: invalid repeat count: `{1000000000}`"),
        ("a{2,1000000000}", "error parsing regexp: invalid repeat count: `{2,1000000000}`"),
        ("x(?<!y)z", "error parsing regexp: invalid named capture: `(?<!y)z`"),
        ("[(?<x](?<=y)>z", "error parsing regexp: invalid named capture: `(?<=y)>`"),
    ],
    ids=[
        *("paren", "unexpected-paren", "bracket", "repetition", "count", "lookahead"),
        *("backslash", "any-byte", "huge-count", "huge-max"),
        *("lookbehind", "lookbehind-after-class"),
    ],
)
def test_bad_patterns_fail_with_go_messages(pattern: str, message: str) -> None:
    result = _eval("schema.spec.text.find(schema.spec.pattern)", text="x", pattern=pattern)
    assert isinstance(result, ExpressionError)
    assert result.message.startswith(message)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("[{999999999}]+", "x{99}", "{99}"),
        ("\\{999999999}", "a{999999999}", "{999999999}"),
        ("\\x{000000041}", "zA", "A"),
        ("\\Q\\C{999999999}\\E", "\\C{999999999}", "\\C{999999999}"),
        ("(?<name>b)", "ab", "b"),
    ],
    ids=["in-class", "escaped-brace", "long-hex", "quoted", "named-capture"],
)
def test_what_go_accepts_is_not_mistaken_for_its_exceptions(
    pattern: str, text: str, expected: str
) -> None:
    assert _eval("schema.spec.text.find(schema.spec.pattern)", text=text, pattern=pattern) == Value(
        expected
    )


def test_find_all_result_is_capped_by_the_value_limit() -> None:
    limits = EvaluationLimits(time_budget_s=None, max_value_bytes=4096)
    env = CelEnvironment(CelOptions(limits=limits), declarations={"schema": None})
    compiled = env.compile('schema.text.findAll("")')
    result = compiled.evaluate(env.bind({"schema": {"text": "x" * 5000}}))
    assert isinstance(result, ExpressionError)
    assert result.code == "RESOURCE_EXHAUSTED"
    assert result.message.startswith("findAll: result of about ")
    assert result.message.endswith("exceeds the limit of 4KiB per value")
