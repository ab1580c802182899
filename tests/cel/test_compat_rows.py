"""Upstream behaviours that used to be listed as CEL deviations in docs/compatibility.md.

Each test pins one former row to upstream's documented behaviour; the expected values come
from the cel-go extension docs (two-variable comprehensions), the Kubernetes CEL library
docs (quantity, semver, lists, list types, property-name escaping) and kro's C-ids, not
from kro-py's own output.
"""

from __future__ import annotations

from typing import Any

import pytest

from kro.cel import CelCompileError, CelEnvironment, ExpressionError, Value

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "in": {"type": "string"},
        "namespace": {"type": "string"},
        "a-b": {"type": "integer"},
        "x.y": {"type": "string"},
        "tags": {
            "type": "array",
            "x-kubernetes-list-type": "set",
            "items": {"type": "string"},
        },
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
            },
        },
        "plain": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
DATA: dict[str, Any] = {
    "in": "inside",
    "namespace": "ns",
    "a-b": 3,
    "x.y": "dotted",
    "tags": ["a", "b"],
    "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
    "plain": ["a", "b"],
    "labels": {"app": "demo"},
}
ENV = CelEnvironment(declarations={"o": SCHEMA, "d": None})
ACTIVATION = ENV.bind({"o": DATA, "d": DATA})


def evaluate(expression: str) -> Any:
    return ENV.compile(expression).evaluate(ACTIVATION)


# --- transformMap / transformMapEntry (cel-go ext.TwoVarComprehensions, C-18) -------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # The examples of cel-go's extension documentation.
        ("{'greeting': 'hello'}.transformMap(k, v, v + '!')", {"greeting": "hello!"}),
        ("[1, 2, 3].transformMap(indexVar, valueVar, valueVar * 2)", {0: 2, 1: 4, 2: 6}),
        ("[1, 2, 3].transformMap(indexVar, valueVar, indexVar < 2, valueVar * 2)", {0: 2, 1: 4}),
        ("{'greeting': 'hello'}.transformMapEntry(k, v, {v: k})", {"hello": "greeting"}),
        ("['a', 'b', 'c'].transformMapEntry(i, v, {v: i})", {"a": 0, "b": 1, "c": 2}),
        # On schema data, and nested.
        ("o.labels.transformMap(k, v, k + '=' + v)", {"app": "app=demo"}),
        ("[[1], [2]].transformMap(i, l, l.transformMap(j, v, v + i))", {0: {0: 1}, 1: {0: 3}}),
    ],
)
def test_transform_map(expression: str, expected: Any) -> None:
    assert evaluate(expression) == Value(expected)


def test_transform_map_result_is_a_cel_map() -> None:
    assert evaluate("[1, 2].transformMap(i, v, v * 10) == {0: 10, 1: 20}") == Value(True)
    assert evaluate("{'a': 1}.transformMap(k, v, v)['a']") == Value(1)


def test_transform_map_is_linear_enough_for_the_default_budget() -> None:
    env = CelEnvironment(declarations={"m": None})
    data = {f"k{i}": i for i in range(500)}
    result = env.compile("m.transformMap(k, v, v * 2)").evaluate(env.bind({"m": data}))
    assert result == Value({k: v * 2 for k, v in data.items()})


def test_transform_map_entry_duplicate_key_is_an_error() -> None:
    result = evaluate(
        "{'greeting': 'aloha', 'farewell': 'aloha'}"
        ".transformMapEntry(keyVar, valueVar, {valueVar: keyVar})"
    )
    assert isinstance(result, ExpressionError)
    assert "already exists" in result.message


# --- Quantity and Semver equality (Kubernetes quantity / semver libraries) ------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('quantity("1Gi") == quantity("1073741824")', True),  # resource.Quantity.Equal
        ('quantity("1k") == quantity("1e3")', True),
        ('quantity("1Gi") != quantity("1073741824")', False),
        ('quantity("1Gi") == quantity("1G")', False),
        ('[quantity("1Gi")] == [quantity("1073741824")]', True),
        ('quantity("1Gi") in [quantity("1G"), quantity("1073741824")]', True),
        ('dyn(quantity("1Gi")) == dyn(quantity("1073741824"))', True),
        ('semver("1.0.0+a") == semver("1.0.0+b")', True),  # precedence ignores build metadata
        ('semver("1.0.0-alpha") == semver("1.0.0")', False),
        ('semver("1.2.3") != semver("1.2.3+build.5")', False),
    ],
)
def test_library_value_equality(expression: str, expected: bool) -> None:
    assert evaluate(expression) == Value(expected)


# --- Property names (C-16, Kubernetes escaping of property names) ---------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("o.__in__", "inside"),  # a keyword: reachable only escaped
        ("o.namespace", "ns"),  # a reserved word: plain (SetRecognizeKeywordAsFieldName) ...
        ("o.__namespace__", "ns"),  # ... and escaped
        ("o.a__dash__b", 3),
        ("o.x__dot__y", "dotted"),
        ("o.?__in__.orValue('none')", "inside"),
        ("has(o.__in__)", True),
        ("d.namespace", "ns"),  # dyn objects: reserved words by dot, the rest by index
        ('d["in"]', "inside"),
    ],
)
def test_property_names(expression: str, expected: Any) -> None:
    assert evaluate(expression) == Value(expected)


def test_escaped_property_is_typed() -> None:
    assert ENV.compile("o.a__dash__b").output_type.cel_name == "int"
    with pytest.raises(CelCompileError):
        ENV.compile('o.a__dash__b + "x"')


@pytest.mark.parametrize("expression", ["o.in", "d.in", "o.`in`", "d.`a-b`"])
def test_keywords_after_a_dot_are_syntax_errors(expression: str) -> None:
    # cel-go's grammar lexes `in` as an operator, and without EnableIdentEscapeSyntax it
    # reports backtick-quoted names as "unsupported syntax '`'".
    with pytest.raises(CelCompileError):
        ENV.compile(expression)


def test_backtick_inside_strings_is_fine() -> None:
    assert evaluate("\"`in`\" + r'`'") == Value("`in``")


# --- list-type set / map equality (C-34) ------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('o.tags == ["b", "a"]', True),  # set: "[1, 2] == [2, 1]"
        ('o.tags != ["b", "a"]', False),
        ('o.tags == ["a", "c"]', False),
        ('o.plain == ["b", "a"]', False),  # atomic lists keep their order
        ("o.ports == [o.ports[1], o.ports[0]]", True),  # map: keyed by name
        ("o.ports == [o.ports[0]]", False),
    ],
)
def test_list_type_equality(expression: str, expected: bool) -> None:
    assert evaluate(expression) == Value(expected)


# --- optionals inside results (C-10, C-35) ----------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("[d.?namespace]", ["ns"]),
        ('{"k": d.?missing}', {"k": None}),
        ('{"a": 1, "b": d.?missing, "c": [d.?namespace]}', {"a": 1, "b": None, "c": ["ns"]}),
        ('[d[?"in"], optional.none()]', ["inside", None]),
        ("[1, 2].map(i, i == 1 ? optional.of(i) : optional.none())", [1, None]),
    ],
)
def test_optionals_inside_results_are_converted(expression: str, expected: Any) -> None:
    assert ENV.compile(expression).evaluate_json(ACTIVATION) == Value(expected)


def test_optional_passed_to_a_function_is_an_error_not_a_crash() -> None:
    result = evaluate("json.marshal([d.?namespace, 1])")
    assert isinstance(result, ExpressionError)
    assert "optional" in result.message


# --- generic kro functions (C-26, C-28..C-30) -------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "type_name"),
    [
        ('{"a": 1}.merge({"b": 2})', "map(string, int)"),
        ('lists.setAtIndex(["a"], 0, "b")', "list(string)"),
        ("lists.insertAtIndex([1], 1, 2)", "list(int)"),
        ("lists.removeAtIndex(o.plain, 0)", "list(string)"),
    ],
)
def test_generic_functions_keep_their_types(expression: str, type_name: str) -> None:
    assert ENV.compile(expression).output_type.cel_name == type_name


@pytest.mark.parametrize(
    "expression",
    [
        '{"a": 1}.merge({"b": "x"})',
        'lists.setAtIndex([1], 0, "a")',
        'lists.insertAtIndex([1], 0, "a")',
    ],
)
def test_generic_functions_reject_mismatched_types(expression: str) -> None:
    with pytest.raises(CelCompileError, match="no matching overload"):
        ENV.compile(expression)


# --- Kubernetes list library: sum() of an empty list -----------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("[1.5].filter(x, x > 2.0).sum()", 0.0),
        ("type([1.5].filter(x, x > 2.0).sum()) == double", True),
        ("type([1u].filter(x, x > 2u).sum()) == uint", True),
        ('[duration("1s")].filter(x, false).sum() == duration("0s")', True),
        ("[1.5, 2.5].sum()", 4.0),
    ],
)
def test_sum_of_an_empty_list_is_the_zero_of_its_type(expression: str, expected: Any) -> None:
    result = evaluate(expression)
    assert result == Value(expected)
    assert type(result.unwrap()) is type(expected)
