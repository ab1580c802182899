"""Value conversion across the engine boundary (C-34 inputs, C-35 outputs)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kro.cel import (
    CelConversionError,
    CelEnvironment,
    ExpressionError,
    InputConverter,
    Value,
    to_json_value,
)
from kro.cel.convert import (
    format_go_duration,
    go_duration_from_ns,
    parse_go_duration,
    parse_timestamp,
)
from kro.cel.lib_json import go_float, marshal

ENV = CelEnvironment(declarations={"x": None})


def json_of(expression: str, x: Any = None) -> Any:
    return ENV.compile(expression).evaluate_json(ENV.bind({"x": x}))


OUTPUTS = [
    ('timestamp("2024-01-01T10:00:00Z")', "2024-01-01T10:00:00Z"),
    ('timestamp("2024-01-01T10:00:00+02:00")', "2024-01-01T08:00:00Z"),
    ('duration("1h")', "1h0m0s"),
    ('duration("90s")', "1m30s"),
    ('duration("1.5s")', "1.5s"),
    ('duration("300ms")', "300ms"),
    ('duration("0s")', "0s"),
    ('duration("-90m")', "-1h30m0s"),
    ("optional.none()", None),
    ("null", None),
    ("9223372036854775807u", 9223372036854775807),
    ('{"a": [1, 2.5, true, "s", null]}', {"a": [1, 2.5, True, "s", None]}),
    ('quantity("1024Mi")', "1Gi"),
    ('ip("::1")', "::1"),
]


@pytest.mark.parametrize(("expression", "expected"), OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_output_conversion(expression: str, expected: Any) -> None:
    assert json_of(expression) == Value(expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("18446744073709551615u", "overflows int64"),
        ("{1: 2}", "map key must be string"),
        ('b"x"', "bytes value cannot be used directly"),
        ('[b"x"]', "bytes value cannot be used directly"),
    ],
)
def test_output_conversion_errors(expression: str, message: str) -> None:
    result = json_of(expression)
    assert isinstance(result, ExpressionError)
    assert message in result.message


def test_conversion_error_has_a_path() -> None:
    with pytest.raises(CelConversionError) as info:
        to_json_value({"a": [1, b"x"]})
    assert info.value.path == "a[1]"


def test_naive_datetime_is_utc() -> None:
    assert to_json_value(dt.datetime(2024, 1, 1)) == "2024-01-01T00:00:00Z"


# inputs -----------------------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {
            "type": "object",
            "properties": {
                "creationTimestamp": {"type": "string", "format": "date-time"},
                "name": {"type": "string"},
            },
        },
        "data": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
        "spec": {
            "type": "object",
            "properties": {
                "timeout": {"type": "string", "format": "duration"},
                "day": {"type": "string", "format": "date"},
                "events": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"at": {"type": "string", "format": "date-time"}},
                    },
                },
                "port": {"x-kubernetes-int-or-string": True},
            },
        },
    },
}
TYPED = CelEnvironment(declarations={"obj": SCHEMA})
OBJ = {
    "metadata": {"name": "n", "creationTimestamp": "2024-01-01T00:00:00Z"},
    "data": {"password": "aHVudGVyMg=="},
    "spec": {
        "timeout": "1m30s",
        "day": "2024-02-03",
        "events": [{"at": "2024-01-01T00:00:01.5Z"}],
        "port": "http",
    },
}

INPUTS = [
    ("string(obj.data.password)", "hunter2"),
    ('obj.metadata.creationTimestamp + duration("1h")', "2024-01-01T01:00:00Z"),
    ('obj.metadata.creationTimestamp < timestamp("2025-01-01T00:00:00Z")', True),
    ("obj.spec.timeout", "1m30s"),
    ("obj.spec.timeout.getSeconds()", 90),
    ("obj.spec.day.getDayOfMonth()", 2),
    ("obj.spec.events[0].at.getMilliseconds()", 500),
    ("obj.spec.port", "http"),
    ("obj.metadata.creationTimestamp", "2024-01-01T00:00:00Z"),
]


@pytest.mark.parametrize(("expression", "expected"), INPUTS, ids=[i[0] for i in INPUTS])
def test_schema_aware_inputs(expression: str, expected: Any) -> None:
    result = TYPED.compile(expression).evaluate_json(TYPED.bind({"obj": OBJ}))
    assert result == Value(expected)


def test_input_conversion_copies_instead_of_mutating() -> None:
    original = json.loads(json.dumps(OBJ))
    InputConverter(SCHEMA).convert(original)
    assert original == OBJ


def test_schema_without_formats_is_identity() -> None:
    converter = InputConverter({"type": "object", "properties": {"a": {"type": "string"}}})
    value = {"a": "b"}
    assert converter.is_identity
    assert converter.convert(value) is value


def test_malformed_formatted_strings_stay_strings() -> None:
    converted = InputConverter(SCHEMA).convert(
        {"metadata": {"creationTimestamp": "yesterday"}, "data": {"k": "!!"}}
    )
    assert converted == {"metadata": {"creationTimestamp": "yesterday"}, "data": {"k": "!!"}}


@pytest.mark.parametrize(
    ("text", "seconds", "nanos"),
    [
        ("2024-01-01T00:00:00Z", 1704067200, 0),
        ("2024-01-01T00:00:00.123456789Z", 1704067200, 123456789),
        ("2024-01-01T01:00:00+01:00", 1704067200, 0),
        ("2024-01-01", 1704067200, 0),
    ],
)
def test_parse_timestamp(text: str, seconds: int, nanos: int) -> None:
    stamp = parse_timestamp(text)
    assert stamp is not None
    assert (stamp.seconds, stamp.nanos) == (seconds, nanos)


@pytest.mark.parametrize("text", ["", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00", "now"])
def test_parse_timestamp_rejects(text: str) -> None:
    assert parse_timestamp(text) is None


@pytest.mark.parametrize("text", ["", "1", "1x", "h", "1h 2m"])
def test_parse_go_duration_rejects(text: str) -> None:
    assert parse_go_duration(text) is None


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_go_duration_round_trips(ns: int) -> None:
    text = go_duration_from_ns(ns)
    parsed = parse_go_duration(text)
    assert parsed is not None
    assert parsed.seconds * 1_000_000_000 + parsed.nanos == ns


@given(st.timedeltas(min_value=dt.timedelta(days=-1000), max_value=dt.timedelta(days=1000)))
def test_format_go_duration_matches_total(value: dt.timedelta) -> None:
    parsed = parse_go_duration(format_go_duration(value))
    assert parsed is not None
    assert parsed.ToTimedelta() == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_go_float_round_trips(value: float) -> None:
    assert float(go_float(value)) == value
    assert not go_float(value).endswith(".0")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_marshal_is_json_with_sorted_keys(value: Any) -> None:
    text = marshal(value)
    assert json.loads(text) == value
    assert text == json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace(
        "\u2028", "\\u2028"
    ).replace("\u2029", "\\u2029")


SPACES_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "created": {"type": "string", "format": "date-time"},
        },
    },
}


def test_bind_each_gives_every_row_its_iterator_and_the_same_shared_values() -> None:
    """A forEach pass binds the node values once and each row's iterator on top: every row
    sees its own item (typed, a timestamp compares as one) and the one shared list."""
    env = CelEnvironment(declarations={"spaces": SPACES_SCHEMA, "space": SPACES_SCHEMA["items"]})
    spaces = [
        {"name": "a", "created": "2026-01-01T00:00:00Z"},
        {"name": "b", "created": "2026-02-01T00:00:00Z"},
        {"name": "c", "created": "2026-03-01T00:00:00Z"},
    ]
    older = env.compile("spaces.filter(s, s.created < space.created).map(s, s.name).join(',')")
    activations = list(env.bind_each({"spaces": spaces}, [{"space": s} for s in spaces]))
    assert [older.evaluate_json(a).value for a in activations] == ["", "a", "a,b"]
    shared = {id(a.values["spaces"]) for a in activations}
    assert len(shared) == 1  # converted once for all rows, not once per row
    assert env.compile("space.name").evaluate_json(activations[2]).value == "c"
