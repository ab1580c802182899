"""kro's own CEL functions (reference C-19..C-33): every vector and message, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from kro.cel import (
    OMIT,
    CelCompileError,
    CelEnvironment,
    CelOptions,
    DataPending,
    ExpressionError,
    Value,
    bind,
)

ENV = CelEnvironment(CelOptions(omit_function=True), {"x": None})
NO_OMIT = CelEnvironment(CelOptions(omit_function=False), {"x": None})


def run(expression: str, x: Any = None, *, json: bool = False) -> Any:
    compiled = ENV.compile(expression)
    activation = bind({"x": x})
    result = compiled.evaluate_json(activation) if json else compiled.evaluate(activation)
    return result


def value(expression: str, x: Any = None, *, json: bool = False) -> Any:
    result = run(expression, x, json=json)
    assert isinstance(result, Value), result
    return result.value


def error(expression: str, x: Any = None, *, json: bool = False) -> str:
    result = run(expression, x, json=json)
    assert isinstance(result, ExpressionError), result
    return result.message


VALUES = [
    # C-19 random.seededString
    ('random.seededString(10, "test-seed")', "5czheg3o5c"),
    ('random.seededString(20, "test-seed")', "5czheg3o5czheg3o5czh"),
    ('size(random.seededString(1, "a"))', 1),
    # C-20 random.seededInt
    ('random.seededInt(0, 100, "test-seed")', 56),
    ('random.seededInt(30000, 32768, "my-service")', 31247),
    ('random.seededInt(5, 6, "seed")', 5),
    # C-21 / C-22 hashes (bytes, shown through encoders)
    ('"%x".format([hash.fnv64a("hello world")])', "779a65e7023cd2e7"),
    (
        'base64.encode(hash.sha256("hello"))',
        "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
    ),
    ('"%x".format([hash.md5("hello")])', "5d41402abc4b2a76b9719d911017c592"),
    # C-24 json.unmarshal: every number is a double
    ("json.unmarshal('{\"a\":1}').a", 1.0),
    ("type(json.unmarshal('{\"a\":1}').a) == double", True),
    ('json.unmarshal("[1, \\"x\\", null, true]")', [1.0, "x", None, True]),
    ('json.unmarshal("null")', None),
    # C-25 json.marshal: sorted, compact, Go formatting
    ('json.marshal({"name": "test", "count": 42})', '{"count":42,"name":"test"}'),
    ('json.marshal({"b": 1, "a": [true, null]})', '{"a":[true,null],"b":1}'),
    ('json.marshal("<a&b>")', '"\\u003ca\\u0026b\\u003e"'),
    ("json.marshal(42.0)", "42"),
    ("json.marshal(1.5)", "1.5"),
    ("json.marshal(1e21)", "1e+21"),
    ("json.marshal(1e-7)", "1e-7"),
    ("json.marshal(1e20)", "100000000000000000000"),
    ('json.marshal(b"hello")', '"aGVsbG8="'),
    ("json.marshal(18446744073709551615u)", "18446744073709551615"),
    ('json.marshal("é\\n")', '"é\\n"'),
    # C-26 merge (shallow, right wins)
    ('{"a": 1, "b": 2}.merge({"b": 3, "c": 4})', {"a": 1, "b": 3, "c": 4}),
    ('{"a": {"x": 1}}.merge({"a": {"y": 2}})', {"a": {"y": 2}}),
    # C-27 deepMerge
    ("{'a':{'x':1}}.deepMerge({'a':{'y':2}})", {"a": {"x": 1, "y": 2}}),
    ("{'a':[1]}.deepMerge({'a':[2]})", {"a": [2]}),
    ("{'a':{'x':1}}.deepMerge({'a':3})", {"a": 3}),
    # C-28..C-30 lists
    ("lists.setAtIndex([1, 2, 3], 1, 9)", [1, 9, 3]),
    ("lists.insertAtIndex([1, 2], 0, 9)", [9, 1, 2]),
    ("lists.insertAtIndex([1, 2], 2, 9)", [1, 2, 9]),
    ("lists.removeAtIndex([1, 2, 3], 0)", [2, 3]),
    ('lists.setAtIndex(["a"], 0, "b")', ["b"]),
    # C-33 runtime.condition
    ('runtime.condition(x, "Ready").status', "True"),
    ('runtime.condition(x, "Missing").status', ""),
    ('runtime.condition(x, "Ready").reason', "AllGood"),
]


@pytest.mark.parametrize(("expression", "expected"), VALUES, ids=[v[0] for v in VALUES])
def test_function_value(expression: str, expected: Any) -> None:
    x = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "AllGood"}]}}
    assert value(expression, x) == expected


ERRORS = [
    ('random.seededString(0, "s")', "random.seededString length must be positive"),
    ('random.seededString(-1, "s")', "random.seededString length must be positive"),
    ('random.seededInt(5, 5, "s")', "random.seededInt min must be less than max"),
    ('random.seededInt(6, 5, "s")', "random.seededInt min must be less than max"),
    ("lists.setAtIndex([1, 2], 2, 0)", "lists.setAtIndex: index 2 out of bounds [0, 2)"),
    ("lists.setAtIndex([1, 2], -1, 0)", "lists.setAtIndex: index -1 out of bounds [0, 2)"),
    ("lists.insertAtIndex([1, 2], 3, 0)", "lists.insertAtIndex: index 3 out of bounds [0, 2]"),
    ("lists.removeAtIndex([], 0)", "lists.removeAtIndex: index 0 out of bounds [0, 0)"),
    ("json.unmarshal('')", "json.unmarshal failed to parse JSON: unexpected end of JSON input"),
    (
        "json.unmarshal('{\"a\":')",
        "json.unmarshal failed to parse JSON: unexpected end of JSON input",
    ),
    (
        "json.unmarshal('x')",
        "json.unmarshal failed to parse JSON: invalid character 'x' looking for beginning of value",
    ),
    (
        "json.unmarshal('{} x')",
        "json.unmarshal failed to parse JSON: invalid character 'x' after top-level value",
    ),
    ("{'a': 1}.deepMerge(1)", "no such overload: deepMerge requires two maps"),
]


@pytest.mark.parametrize(("expression", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_function_error(expression: str, message: str) -> None:
    assert error(expression) == message


def test_index_errors_are_not_data_pending() -> None:
    """`index 5 out of bounds` is a real error; only the engine's index error means pending."""
    assert isinstance(run("lists.setAtIndex([1], 5, 0)"), ExpressionError)


def test_hash_argument_must_be_string() -> None:
    with pytest.raises(CelCompileError, match=r"found no matching overload for 'hash\.sha256'"):
        ENV.compile("hash.sha256(1)")


def test_seeded_string_rejects_string_length() -> None:
    with pytest.raises(CelCompileError, match="no matching overload"):
        ENV.compile('random.seededString("8", "abc")')


# C-23: bytes are not storable -----------------------------------------------------------


def test_bytes_result_cannot_be_stored() -> None:
    assert error('hash.sha256("x")', json=True) == (
        "bytes value cannot be used directly in a resource template or status field; "
        "encode it explicitly, e.g. base64.encode(...)"
    )


def test_bytes_are_fine_as_native_value() -> None:
    assert bytes(value('hash.fnv64a("hello world")')).hex() == "779a65e7023cd2e7"


# C-31 omit ----------------------------------------------------------------------------


def test_omit_renders_the_marker() -> None:
    assert value("omit()", json=True) is OMIT
    assert value('x == 1 ? omit() : "keep"', 1, json=True) is OMIT
    assert value("[1, omit()]", json=True) == [1, OMIT]


def test_omit_needs_the_feature_gate() -> None:
    with pytest.raises(
        CelCompileError, match="omit\\(\\) requires the CELOmitFunction feature gate"
    ):
        NO_OMIT.compile("omit()")


def test_omit_is_reported_to_the_caller() -> None:
    assert ENV.compile("x.a == 1 ? omit() : 2").uses_omit
    assert not ENV.compile("x.a").uses_omit


def test_omit_cannot_be_compared() -> None:
    with pytest.raises(CelCompileError, match="omit\\(\\) cannot be compared"):
        ENV.compile("omit() == omit()")


# C-32 runtime.newCondition --------------------------------------------------------------


def test_new_condition_builds_a_condition() -> None:
    compiled = ENV.compile('runtime.newCondition({type: "Ready", status: x, message: "m"})')
    assert compiled.output_type.cel_name == "kro.run.Condition"
    assert compiled.new_conditions[0].type == "Ready"
    assert compiled.new_conditions[0].status is None
    assert value(compiled.expression, "True", json=True) == {
        "type": "Ready",
        "status": "True",
        "reason": "",
        "message": "m",
    }


def test_new_condition_inside_a_comprehension() -> None:
    expression = 'x.map(c, runtime.newCondition({type: c, status: "True"}))'
    compiled = ENV.compile(expression)
    assert compiled.output_type.cel_name == "list(kro.run.Condition)"
    assert [c["type"] for c in value(expression, ["A", "B"], json=True)] == ["A", "B"]


NEW_CONDITION_ERRORS = [
    ('runtime.newCondition({"type": "A", "status": "True"})', "keys must be bare identifiers"),
    ('runtime.newCondition({type: "A", status: "True", foo: "x"})', 'unknown key "foo"'),
    ('runtime.newCondition({type: "A", type: "B", status: "True"})', 'duplicate key "type"'),
    ('runtime.newCondition({status: "True"})', "'type' is required"),
    ('runtime.newCondition({type: "A"})', "'status' is required"),
    ('runtime.newCondition({type: "A", status: "Maybe"})', "'status' must be one of"),
    ('runtime.newCondition({type: "", status: "True"})', "'type' must not be empty"),
    ("runtime.newCondition(x)", "argument must be a map literal"),
]


@pytest.mark.parametrize(
    ("expression", "message"), NEW_CONDITION_ERRORS, ids=[e[1] for e in NEW_CONDITION_ERRORS]
)
def test_new_condition_literal_rules(expression: str, message: str) -> None:
    with pytest.raises(CelCompileError) as info:
        ENV.compile(expression)
    assert info.value.message.startswith("runtime.newCondition: ")
    assert message in info.value.message


def test_new_condition_values_must_be_strings() -> None:
    with pytest.raises(CelCompileError):
        ENV.compile('runtime.newCondition({type: "A", status: 1})')


def test_new_condition_checks_computed_status_at_eval() -> None:
    assert "'status' must be one of" in error(
        'runtime.newCondition({type: "A", status: x})', "Maybe"
    )


def test_condition_fields_are_typed() -> None:
    with pytest.raises(CelCompileError, match="undefined field 'statsu'"):
        ENV.compile('runtime.condition(x, "Ready").statsu')


def test_condition_reads_are_reported() -> None:
    compiled = ENV.compile('runtime.condition(x, "Ready").status == "True"')
    assert [(r.root, r.type) for r in compiled.condition_reads] == [("x", "Ready")]


def test_condition_on_missing_path_is_empty() -> None:
    assert value('runtime.condition(x, "Ready")', {}, json=True) == {
        "type": "",
        "status": "",
        "reason": "",
        "message": "",
    }


def test_missing_data_is_pending_not_error() -> None:
    assert isinstance(run("x.status.ready", {}), DataPending)
