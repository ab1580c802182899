"""A probe list of CEL features (syntax, extensions, kro functions), run through kro.cel.

This is the upgrade guard for the engine pin: if a cel-expr-python release changes any of
these results, this table says which. Outcomes follow kro's environment (C-18), which is
why `math.*` and `sets.*` are compile errors here although the engine has them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from kro.cel import (
    CelCompileError,
    CelEnvironment,
    DataPending,
    ExpressionError,
    Value,
)

DATA: dict[str, Any] = {
    "schema": {
        "metadata": {"name": "demo", "namespace": "ns"},
        "spec": {
            "replicas": 3,
            "image": "nginx",
            "ingress": {"enabled": True},
            "tags": ["a", "b"],
            "labels": {"x": "1"},
        },
    },
    "deployment": {
        "metadata": {"generation": 2},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "demo"}}},
        "status": {
            "availableReplicas": 3,
            "observedGeneration": 2,
            "conditions": [{"type": "Available", "status": "True"}],
        },
    },
    "items": [{"name": "i0", "n": 0}, {"name": "i1", "n": 1}, {"name": "i2", "n": 2}],
}
ENV = CelEnvironment(declarations={"schema": None, "deployment": None, "items": None})
ACTIVATION = ENV.bind(DATA)

PROBES: list[tuple[str, Any]] = [
    ("schema.spec.replicas", 3),
    ('schema.metadata.name + "-svc"', "demo-svc"),
    ("schema.spec.replicas + 1", 4),
    ("deployment.status.availableReplicas >= deployment.spec.replicas", True),
    ("deployment.status.observedGeneration >= deployment.metadata.generation", True),
    ("has(schema.spec.ingress)", True),
    ("has(schema.spec.missing)", False),
    ('schema.spec.ingress.enabled ? "a" : "b"', "a"),
    ('schema.spec.tags.map(t, t + "-x")', ["a-x", "b-x"]),
    ('schema.spec.tags.filter(t, t == "a")', ["a"]),
    ('schema.spec.tags.exists(t, t == "b")', True),
    ("schema.spec.tags.all(t, size(t) == 1)", True),
    ("size(schema.spec.tags)", 2),
    ('"a" in schema.spec.tags', True),
    (
        'deployment.status.conditions.exists(c, c.type == "Available" && c.status == "True")',
        True,
    ),
    ("string(schema.spec.replicas)", "3"),
    ('int("42")', 42),
    ("double(schema.spec.replicas) / 2.0", 1.5),
    ("schema.metadata.name.upperAscii()", "DEMO"),
    ("schema.metadata.name.lowerAscii()", "demo"),
    ('"a,b,c".split(",")', ["a", "b", "c"]),
    ('["a","b"].join("-")', "a-b"),
    ('"hello".replace("l","L")', "heLLo"),
    ('"%s-%d".format(["x", 3])', "x-3"),
    ('schema.metadata.name.startsWith("de")', True),
    ('schema.metadata.name.matches("^d.*")', True),
    ('schema.?spec.?missing.orValue("dflt")', "dflt"),
    ("optional.of(1).hasValue()", True),
    ('{"k": schema.spec.image}', {"k": "nginx"}),
    ("[1,2] + [3]", [1, 2, 3]),
    ("deployment.spec.selector.matchLabels", {"app": "demo"}),
    ("dyn(schema.spec.replicas)", 3),
    (
        'timestamp("2024-01-01T00:00:00Z") + duration("1h")',
        dt.datetime(2024, 1, 1, 1, tzinfo=dt.UTC),
    ),
    ("lists.range(3)", [0, 1, 2]),
    ('base64.encode(b"hi")', "aGk="),
    ("cel.bind(x, 2, x * x)", 4),
    # extras
    ("items.map(i, i.name)", ["i0", "i1", "i2"]),
    ("items.filter(i, i.n > 0).size()", 2),
    ('schema.spec.labels.all(k, v, k == "x" && v == "1")', True),
    ("deployment.status.conditions[0].type", "Available"),
    # more kro-relevant probes
    ("schema.metadata.namespace", "ns"),
    ('schema.spec.labels[?"x"].orValue("none")', "1"),
    ('schema.spec.tags[?5].orValue("none")', "none"),
    ('"abc".charAt(1)', "b"),
    ('"  x ".trim()', "x"),
    ('"hello".substring(1, 3)', "el"),
    ('"a.b.c".lastIndexOf(".")', 3),
    ('strings.quote("a\\"b")', '"a\\"b"'),
    ('"abc".reverse()', "cba"),
    ("[3, 1, 2].sort()", [1, 2, 3]),
    ("[[1], [2, 3]].flatten()", [1, 2, 3]),
    ("[1, 1, 2].distinct()", [1, 2]),
    ("[1, 2, 3].slice(1, 3)", [2, 3]),
    ("[1, 2].reverse()", [2, 1]),
    ("items.sortBy(i, -i.n).map(i, i.name)", ["i2", "i1", "i0"]),
    ("[10, 20].transformList(i, v, i + v)", [10, 21]),
    ("[1, 2, 3].existsOne(i, v, v == 2)", True),
    ("schema.spec.labels.exists(k, v, v == '1')", True),
    ("items[0].?missing.hasValue()", False),
    ("schema.?spec.?image", "nginx"),
    ("schema.?spec.?missing", None),
    ("optional.none()", None),
    ("[1, 2].first()", 1),
    ('schema.spec.labels.transformMap(k, v, v + "!")', {"x": "1!"}),
    ("schema.spec.labels.transformMap(k, v, k != 'x', v)", {}),
    ("schema.spec.labels.transformMapEntry(k, v, {v: k})", {"1": "x"}),
]


@pytest.mark.parametrize(("expression", "expected"), PROBES, ids=[p[0] for p in PROBES])
def test_probe_value(expression: str, expected: Any) -> None:
    result = ENV.compile(expression).evaluate(ACTIVATION)
    assert result == Value(expected)


NOT_ENABLED = [
    "math.greatest(1, 5)",  # ext.Math is not in kro's environment (C-18)
    "sets.contains([1,2,3],[1])",  # ext.Sets neither
    'regex.replace("abc", "b", "x")',  # cel-cpp's regex ext is not k8s's find/findAll
    "unknownvar + 1",
]


@pytest.mark.parametrize("expression", NOT_ENABLED)
def test_not_in_kro_environment(expression: str) -> None:
    with pytest.raises(CelCompileError, match="undeclared reference"):
        ENV.compile(expression)


PENDING = [
    "schema.spec.missing",
    "schema.spec.tags[5]",
    '"%s".format([schema.spec.missing])',
    "deployment.status.missing.deeper",
    "has(schema.spec.missing.deeper)",
]


@pytest.mark.parametrize("expression", PENDING)
def test_missing_data_is_pending(expression: str) -> None:
    assert isinstance(ENV.compile(expression).evaluate(ACTIVATION), DataPending)


def test_error_absorbed_by_logical_or() -> None:
    assert ENV.compile("schema.spec.missing || true").evaluate(ACTIVATION) == Value(True)


FAILURES = [
    ("schema.spec.replicas / 0", "divide by zero"),
    ('int("abc")', "cannot convert string to int"),
    ('dyn(schema.spec.replicas) + "x"', "No matching overloads"),
    ("9223372036854775807 + schema.spec.replicas", "integer overflow"),
]


@pytest.mark.parametrize(("expression", "message"), FAILURES, ids=[f[0] for f in FAILURES])
def test_real_errors_are_errors(expression: str, message: str) -> None:
    result = ENV.compile(expression).evaluate(ACTIVATION)
    assert isinstance(result, ExpressionError)
    assert message in result.message


def test_parse_error_has_a_caret() -> None:
    with pytest.raises(CelCompileError) as info:
        ENV.compile("schema.spec.replicas +")
    assert "Syntax error" in info.value.message
    assert info.value.expression == "schema.spec.replicas +"


def test_strict_numeric_equality_like_cel_go() -> None:
    with pytest.raises(CelCompileError, match="no matching overload for '_==_'"):
        ENV.compile("1 == 1.0")


def test_double_to_string_uses_go_format() -> None:
    for expression, expected in [
        ("string(3.0)", "3"),
        ("string(3.14)", "3.14"),
        ("string(1e21)", "1e+21"),
    ]:
        assert ENV.compile(expression).evaluate(ACTIVATION) == Value(expected)


def test_unicode_size_counts_code_points() -> None:
    assert ENV.compile('size("héllo")').evaluate(ACTIVATION) == Value(5)


def test_nested_optional_is_unwrapped() -> None:
    result = ENV.compile("[schema.?spec.?image, schema.?spec.?missing]").evaluate(ACTIVATION)
    assert result == Value(["nginx", None])


def test_optional_list_element_syntax_works() -> None:
    result = ENV.compile("[?schema.?spec.?image, ?schema.?spec.?missing]").evaluate(ACTIVATION)
    assert result == Value(["nginx"])
