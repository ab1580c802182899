"""Data-pending classification: one test per engine-text pattern (_engine_compat.error_text)."""

from __future__ import annotations

import pytest

from kro.cel import CelDataPendingError, CelEnvironment, CelEvaluationError, bind
from kro.cel._engine_compat.error_text import PENDING_PATTERNS, classify
from kro.cel.results import DataPending, ExpressionError, Value

ENV = CelEnvironment(declarations={"x": None, "late": None})


def evaluate(expression: str, values: dict[str, object]) -> object:
    return ENV.compile(expression).evaluate(bind(values))


def test_missing_map_key_is_no_such_key() -> None:
    result = evaluate("x.status.ready", {"x": {"status": {}}})
    assert isinstance(result, DataPending)
    assert result.reason == "no such key"
    assert result.message == 'Key not found in map : "ready"'


def test_unbound_variable_is_no_such_attribute() -> None:
    result = evaluate("late.status", {"x": {}})
    assert isinstance(result, DataPending)
    assert result.reason == "no such attribute"


def test_short_list_is_index_out_of_bounds() -> None:
    result = evaluate("x.items[3]", {"x": {"items": [1]}})
    assert isinstance(result, DataPending)
    assert result.reason == "index out of bounds"


def test_negative_index_is_index_out_of_bounds() -> None:
    result = evaluate("x.items[-1]", {"x": {"items": [1]}})
    assert isinstance(result, DataPending)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("INVALID_ARGUMENT: no_such_field : foo", "no such field"),
        ("no such field 'foo'", "no such field"),
        ("no such key: foo", "no such key"),
        ("no such attribute: foo", "no such attribute"),
        ("index out of bounds: 3", "index out of bounds"),
        ('NOT_FOUND: Key not found in map : "a"', "no such key"),
        ('UNKNOWN: No value with name "svc" found in Activation', "no such attribute"),
        ("UNKNOWN: Index error: index=3 size=1", "index out of bounds"),
    ],
)
def test_pending_texts(text: str, reason: str) -> None:
    result = classify("e", text)
    assert isinstance(result, DataPending)
    assert result.reason == reason


def test_every_pattern_is_exercised() -> None:
    texts = [
        'Key not found in map : "a"',
        'No value with name "svc" found in Activation',
        "Index error: index=3 size=1",
        "no_such_field",
        "no such key",
        "no such attribute",
        "index out of bounds",
    ]
    for pattern, _ in PENDING_PATTERNS:
        assert any(pattern.search(t) for t in texts), pattern.pattern


@pytest.mark.parametrize(
    "text",
    [
        "INVALID_ARGUMENT: divide by zero",
        "UNKNOWN: No matching overloads found : _+_(int64, string)",
        "OUT_OF_RANGE: lists.setAtIndex: index 5 out of bounds [0, 2)",
        "INVALID_ARGUMENT: Applying SELECT to non-message type",
    ],
)
def test_other_errors_are_expression_errors(text: str) -> None:
    result = classify("e", text)
    assert isinstance(result, ExpressionError)
    assert result.code
    assert not result.message.startswith(result.code)


def test_unwrap() -> None:
    assert Value(1).unwrap() == 1
    with pytest.raises(CelDataPendingError):
        DataPending("e", "m", "no such key").unwrap()
    with pytest.raises(CelEvaluationError) as info:
        ExpressionError("e", "boom").unwrap()
    assert not isinstance(info.value, CelDataPendingError)
    assert info.value.expression == "e"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "INTERNAL: Iteration budget exceeded [INTERNAL]",
            "evaluation budget exceeded: more than 10000 comprehension iterations in one "
            "evaluation (the engine's fixed limit)",
        ),
        (
            "UNKNOWN: evaluation budget exceeded: the expression ran longer than the time "
            "budget of 100ms (in a comprehension)",
            "evaluation budget exceeded: the expression ran longer than the time budget of "
            "100ms (in a comprehension)",
        ),
        (
            "UNKNOWN: random.seededString: length 9 exceeds the limit of 8 (8 bytes per value)",
            "random.seededString: length 9 exceeds the limit of 8 (8 bytes per value)",
        ),
    ],
    ids=["engine-iterations", "budget", "value-size"],
)
def test_limit_texts_are_resource_exhausted(text: str, message: str) -> None:
    assert classify("e", text) == ExpressionError(
        expression="e", message=message, code="RESOURCE_EXHAUSTED"
    )


def test_a_limit_message_is_never_data_pending() -> None:
    text = "evaluation budget exceeded: ... (Key not found in map : x)"
    assert isinstance(classify("e", text), ExpressionError)
