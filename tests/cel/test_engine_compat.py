"""The engine workarounds (kro.cel._engine_compat), pinned to the engine they were written for.

The first test fails loudly when another cel-expr-python than the pinned one is installed: every
workaround reads or rewrites what that exact version produces. The others exercise each
workaround through what a user sees (a compiled and evaluated expression), and check that the
engine gap it fills is still there, so an upgrade shows which workaround it makes unnecessary.
Expected values follow upstream kro (cel-go) behaviour.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from cel_expr_python import cel

from kro.cel import (
    CelCompileError,
    CelEnvironment,
    CelOptions,
    DataPending,
    EvaluationLimits,
    ExpressionError,
    Value,
)
from kro.cel._engine_compat import ENGINE_DISTRIBUTION, ENGINE_VERSION, installed_engine_version
from kro.cel._engine_compat.ast_decode import decode
from kro.cel._engine_compat.checked_types import checked_facts
from kro.cel._engine_compat.error_text import classify
from kro.cel._engine_compat.rewrite import replace_root, root_expr
from kro.cel._engine_compat.wire import encode_fields, read_fields
from kro.cel.checked_ast import Call, Comprehension, Const, Ident, Select, walk

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
ENV = CelEnvironment(declarations={"schema": None})


def _eval(expression: str, **values: Any) -> Any:
    return ENV.compile(expression).evaluate(ENV.bind({"schema": values}))


def test_the_installed_engine_is_the_one_the_workarounds_were_written_for() -> None:
    assert installed_engine_version() == ENGINE_VERSION, (
        f"{ENGINE_DISTRIBUTION} {installed_engine_version()!r} is installed, but "
        f"kro.cel._engine_compat was written for {ENGINE_VERSION}: review every workaround "
        "in that package against the new version before changing the pin"
    )
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    assert f"{ENGINE_DISTRIBUTION}=={ENGINE_VERSION}" in dependencies


# --- reading the engine's output: wire, ast_decode --------------------------------------------


def _raw_compiled(expression: str) -> bytes:
    serialized: bytes = cel.NewEnv().compile(expression, disable_check=True).serialize()
    return serialized


def test_the_engine_still_hands_out_expressions_only_as_serialized_protos() -> None:
    serialized = _raw_compiled("a.b + 1")
    assert isinstance(serialized, bytes)
    assert b"type.googleapis.com/cel.expr." in serialized


def test_the_wire_codec_reencodes_an_engine_expression_byte_for_byte() -> None:
    raw = _raw_compiled('[1, 2].map(x, {"k": x * 2.5, "s": b"\\x00"})')
    assert encode_fields(read_fields(raw)) == raw
    assert replace_root(raw, lambda expr: expr) == raw
    assert root_expr(raw) in raw


def test_the_decoder_reads_the_checked_tree() -> None:
    tree = ENV.compile('schema.spec.replicas + 1 > 2 && schema.names.exists(n, n == "a")')
    nodes = list(walk(tree.checked_tree().root))
    assert any(isinstance(n.kind, Select) and n.kind.field == "replicas" for n in nodes)
    assert any(isinstance(n.kind, Ident) and n.kind.name == "schema" for n in nodes)
    assert any(isinstance(n.kind, Const) and n.kind.value == "a" for n in nodes)
    assert any(isinstance(n.kind, Comprehension) for n in nodes)
    assert {n.kind.function for n in nodes if isinstance(n.kind, Call)} >= {
        "_+_",
        "_>_",
        "_&&_",
        "_==_",
    }


def test_the_decoder_keeps_source_positions_of_parsed_trees() -> None:
    tree = decode(_raw_compiled("a + bb"), with_positions=True)
    positions = sorted(tree.positions.values())
    assert positions[0] == 0
    assert 4 in positions


def test_the_checkers_maps_give_each_node_its_type_and_overloads() -> None:
    env = CelEnvironment(
        declarations={
            "obj": {
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string"}}},
            }
        }
    )
    compiled = env.compile('obj.names.map(n, n + "!")')
    facts = checked_facts(compiled._checked, {})
    types = {str(t.cel_name) for t in facts.types.values()}
    assert {"list(string)", "string"} <= types
    assert ("add_string",) in facts.overloads.values()


# --- error_text: the engine's texts, as upstream's reasons ------------------------------------


@pytest.mark.parametrize(
    ("expression", "values", "reason"),
    [
        ('schema.m["missing"]', {"m": {}}, "no such key"),
        ("schema.items[3]", {"items": [1]}, "index out of bounds"),
        ("schema.absent.x", {}, "no such key"),
    ],
    ids=["map-key", "index", "field-of-dyn"],
)
def test_missing_data_is_pending_with_upstreams_reason(
    expression: str, values: dict[str, Any], reason: str
) -> None:
    result = _eval(expression, **values)
    assert isinstance(result, DataPending), result
    assert result.reason == reason


def test_a_real_error_stays_an_error() -> None:
    # cel-go says "division by zero"; cel-cpp's wording passes through (docs/compatibility.md).
    assert _eval("1 / schema.zero", zero=0) == ExpressionError(
        expression="1 / schema.zero", message="divide by zero", code="INVALID_ARGUMENT"
    )


def test_the_engines_iteration_limit_is_reported_as_a_budget() -> None:
    assert classify("e", "RESOURCE_EXHAUSTED: Iteration budget exceeded") == ExpressionError(
        expression="e",
        message=(
            "evaluation budget exceeded: more than 10000 comprehension iterations in one "
            "evaluation (the engine's fixed limit)"
        ),
        code="RESOURCE_EXHAUSTED",
    )


# --- changing what runs: lowering, optionals, instrument, lib_comprehensions ------------------


def test_lowering_compares_quantities_by_amount() -> None:
    assert _eval('quantity("1Gi") == quantity("1024Mi")') == Value(True)


def test_lowering_reads_properties_whose_names_are_not_identifiers() -> None:
    env = CelEnvironment(
        declarations={
            "obj": {
                "type": "object",
                "properties": {"a-b": {"type": "string"}, "in": {"type": "string"}},
            }
        }
    )
    compiled = env.compile("obj.a__dash__b + obj.__in__")
    assert compiled.evaluate(env.bind({"obj": {"a-b": "x", "in": "y"}})) == Value("xy")


def test_optionals_in_results_cross_into_python() -> None:
    assert _eval("[schema.?a, schema.?b]", a=1) == Value([1, None])
    assert _eval("schema.?a", a="x") == Value("x")


def test_the_engine_still_cannot_hand_over_an_optional() -> None:
    env = cel.NewEnv(config=cel.NewEnvConfigFromYaml('{"extensions": [{"name": "optional"}]}'))
    result = env.compile("optional.of(1)").eval(env.Activation({}))
    with pytest.raises((SystemError, RuntimeError, TypeError)):
        result.plain_value()


def test_instrumented_loops_keep_their_results_and_their_budget() -> None:
    assert _eval("lists.range(4).map(i, i * 2)") == Value([0, 2, 4, 6])
    env = CelEnvironment(CelOptions(limits=EvaluationLimits(time_budget_s=1e-9)))
    result = env.compile("lists.range(1000).map(i, i).size()").evaluate(env.bind({}))
    assert isinstance(result, ExpressionError)
    assert "time budget" in result.message


def test_transform_map_runs_although_the_engine_lacks_its_helper() -> None:
    assert _eval("schema.m.transformMap(k, v, v + 1)", m={"a": 1}) == Value({"a": 2})


# --- syntax: what cel-cpp's parser accepts and upstream's refuses -----------------------------


def test_backtick_names_are_refused_as_upstream_refuses_them() -> None:
    assert cel.NewEnv().compile("x.`a-b`", disable_check=True) is not None  # cel-cpp accepts
    with pytest.raises(CelCompileError, match="unsupported syntax"):
        ENV.compile("schema.`a-b`")
