"""The adapter itself: compile once, one Activation for every expression (kro.cel.engine)."""

from __future__ import annotations

import threading

import pytest

from kro.cel import (
    CelCompileError,
    CelEnvironment,
    CelType,
    Value,
    bind,
    evaluate,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "metadata": {
            "type": "object",
            "properties": {"creationTimestamp": {"type": "string", "format": "date-time"}},
        },
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    },
}


def test_compile_is_cached_per_source() -> None:
    env = CelEnvironment(declarations={"x": None})
    assert env.compile("x.a") is env.compile("x.a")


def test_one_activation_serves_expressions_from_different_environments() -> None:
    typed = CelEnvironment(declarations={"schema": SCHEMA})
    loose = CelEnvironment(declarations={"schema": None, "deployment": None})
    activation = typed.bind({"schema": {"spec": {"replicas": 2}}, "deployment": {"x": 1}})
    assert typed.compile("schema.spec.replicas + 1").evaluate(activation) == Value(3)
    assert loose.compile("deployment.x + schema.spec.replicas").evaluate(activation) == Value(3)
    assert evaluate(loose.compile("deployment.x"), activation) == Value(1)


def test_raw_bind_keeps_formatted_strings() -> None:
    """readyWhen sees the raw object upstream (C-34 exception): no timestamp conversion."""
    env = CelEnvironment(declarations={"schema": None})
    compiled = env.compile("schema.metadata.creationTimestamp")
    raw = {"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}}
    assert compiled.evaluate(bind({"schema": raw})) == Value("2024-01-01T00:00:00Z")


def test_compile_error_fields() -> None:
    env = CelEnvironment(declarations={"x": None})
    with pytest.raises(CelCompileError) as info:
        env.compile("x +")
    assert info.value.expression == "x +"
    assert "Syntax error" in info.value.message
    assert "INVALID_ARGUMENT" not in info.value.message


def test_declared_types_are_listed() -> None:
    env = CelEnvironment(declarations={"schema": SCHEMA, "x": None})
    assert env.variables["x"] == CelType("dyn")
    assert env.variables["schema"].kind == "object"


def test_concurrent_evaluations_share_programs() -> None:
    env = CelEnvironment(declarations={"x": None})
    compiled = env.compile("x.n * 2")
    failures: list[int] = []

    def worker(n: int) -> None:
        activation = env.bind({"x": {"n": n}})
        for _ in range(200):
            if compiled.evaluate(activation) != Value(n * 2):
                failures.append(n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert failures == []
