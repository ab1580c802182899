"""Nested loops past the engine's 10,000-iteration cap (kro.cel._engine_compat.split).

Upstream (cel-go) sets no cap on comprehension iterations; cel-expr-python stops an
evaluation at 10,000 in total, which a `filter` with an `exists` over 150 items already
passes. Such an expression is evaluated again with each inner loop in an evaluation of its
own. What a user sees: the result upstream gives, the same result and the same error (text,
code, pending or not) as a single evaluation where both can evaluate, kro's functions
included, and the same CEL cost; limits still stop hostile expressions.

Equivalence is checked by forcing the split form on expressions under the cap (the path an
expression takes once the cap stopped it: `Splitter.needed`) and comparing with the single
evaluation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import pytest

from kro.cel import (
    CelEnvironment,
    CelOptions,
    CompiledExpression,
    DataPending,
    EvaluationLimits,
    ExpressionError,
    Value,
)
from kro.cel._engine_compat import split
from kro.cel._engine_compat.optionals import creates_optionals
from kro.cel.types import CelType
from tests.cel.test_cel_k8s_libraries import CASES as K8S_CASES
from tests.cel.test_cel_k8s_libraries import ERRORS as K8S_ERRORS
from tests.cel.test_cel_kro_functions import ERRORS as KRO_ERRORS
from tests.cel.test_cel_kro_functions import VALUES as KRO_VALUES

NO_TIME = EvaluationLimits(time_budget_s=None, memory_budget_bytes=None)
CAP = (
    "evaluation budget exceeded: more than 10000 comprehension iterations in one "
    "evaluation (the engine's fixed limit)"
)
CLAIMS = "schema.spec.claims.filter(c, schema.spec.claims.exists(d, d.priority > c.priority))"
ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "p": {"type": "integer"},
        "created": {"type": "string", "format": "date-time"},
    },
}
SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": ITEM},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "groups": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
            },
        },
    },
}


def _claims(priorities: list[int]) -> list[dict[str, Any]]:
    return [{"name": f"claim-{i}", "priority": p} for i, p in enumerate(priorities)]


def _strict(value: Any) -> Any:
    """`value` with the type of every scalar in it (1, 1.0 and True compare equal)."""
    if isinstance(value, list):
        return [_strict(v) for v in value]
    if isinstance(value, dict):
        return {_strict(k): _strict(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _holds_map(value: Any) -> bool:
    if isinstance(value, list):
        return any(_holds_map(v) for v in value)
    return isinstance(value, dict)


def _same(single: Any, split_form: Any) -> None:
    if isinstance(single, Value) and isinstance(split_form, Value):
        assert _strict(split_form.value) == _strict(single.value)
    else:
        assert split_form == single


@pytest.fixture
def spied() -> Iterator[list[str]]:
    """Records each split evaluation's outcome: "served" or "refused"."""
    outcomes: list[str] = []
    original = split.run_split

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            result = original(*args, **kwargs)
        except split.Refused:
            outcomes.append("refused")
            raise
        outcomes.append("served")
        return result

    split.run_split = spy  # type: ignore[assignment]
    yield outcomes
    split.run_split = original  # type: ignore[assignment]


def _split_evaluation(compiled: CompiledExpression, values: dict[str, Any], env: Any) -> Any:
    """Evaluate `compiled` as it is once the cap has stopped it: split form first."""
    compiled._program.split.needed = True
    try:
        return compiled.evaluate(env.bind(values))
    finally:
        compiled._program.split.needed = False


def _moves(compiled: CompiledExpression) -> bool:
    return compiled._program.split.moves_loops()


# --- what the cap stopped --------------------------------------------------------------------


@pytest.mark.parametrize("typed", [False, True], ids=["dyn", "typed"])
def test_a_filter_with_an_exists_over_150_claims_is_served(typed: bool) -> None:
    claim = {"type": "object", "properties": {"name": {"type": "string"},
                                               "priority": {"type": "integer"}}}  # fmt: skip
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "claims": {"type": "array", "items": claim}}}}}  # fmt: skip
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"schema": schema if typed else None})
    compiled = env.compile(f"{CLAIMS}.map(c, c.name)")
    # Equal priorities: no `exists` stops early, 150 x 150 = 22,500 iterations.
    flat = env.bind({"schema": {"spec": {"claims": _claims([3] * 150)}}})
    assert compiled.evaluate(flat) == Value([])
    priorities = [(i * 37) % 150 for i in range(150)]  # a permutation: one maximum
    ranked = env.bind({"schema": {"spec": {"claims": _claims(priorities)}}})
    top = max(priorities)
    expected = [f"claim-{i}" for i, p in enumerate(priorities) if p != top]
    assert compiled.evaluate(ranked) == Value(expected)


def test_three_nested_loops_are_served() -> None:
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"n": None})
    compiled = env.compile(
        "lists.range(n).filter(a, lists.range(n).exists(b, "
        "lists.range(n).exists(c, a + b + c == 3 * (n - 1))))"
    )
    assert compiled.evaluate(env.bind({"n": 30})) == Value([29])  # 27,000 iterations at most


def test_one_loop_past_the_cap_still_fails_with_the_cap_message() -> None:
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"n": None})
    result = env.compile("lists.range(n).all(i, i >= 0)").evaluate(env.bind({"n": 10_001}))
    assert result == ExpressionError(
        expression="lists.range(n).all(i, i >= 0)", message=CAP, code="RESOURCE_EXHAUSTED"
    )


def test_a_loop_handing_back_maps_stays_in_place_and_the_loop_inside_it_moves(
    spied: list[str],
) -> None:
    # The middle `filter` hands back claims: maps cannot cross between evaluations exactly,
    # so it is refused, then the list around it; both stay where they are. The `exists`
    # inside it still runs in evaluations of its own, which is enough here.
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"schema": None})
    compiled = env.compile(
        "lists.range(3).map(i, schema.spec.claims.filter(c, "
        "schema.spec.claims.exists(d, d.priority > c.priority + i)))"
    )
    claims = _claims([1] * 59 + [5])  # every `exists` scans all 60: 10,800 iterations
    result = compiled.evaluate(env.bind({"schema": {"spec": {"claims": claims}}}))
    assert result == Value([claims[:59]] * 3)
    assert spied == ["refused", "refused", "served"]


def test_a_time_budget_still_stops_a_hostile_nested_expression() -> None:
    limits = EvaluationLimits(time_budget_s=1e-9)
    env = CelEnvironment(CelOptions(limits=limits), {"n": None})
    compiled = env.compile("lists.range(n).map(i, lists.range(n).map(j, i + j)).size()")
    result = compiled.evaluate(env.bind({"n": 200}))
    assert isinstance(result, ExpressionError)
    assert result.message == (
        "evaluation budget exceeded: the expression ran longer than the time budget of 0ms "
        "(in a comprehension)"
    )


def test_the_cost_limit_counts_every_iteration_of_the_split_evaluation() -> None:
    # Cost of `lists.range(n).filter(a, lists.range(n).exists(b, a < 0))` in cel-go's units:
    # fixed part 16 (range 3, filter's [] 10, its result 1, ...) plus per outer iteration
    # the filter's condition and step with the exists' fixed part, plus per inner
    # iteration the exists' condition and step. Measured below at n = 20 (under the cap)
    # and extrapolated: the split form must charge exactly the single evaluation's count.
    expression = "lists.range(n).filter(a, lists.range(n).exists(b, a < 0)).size()"

    def cost_at(n: int) -> int:
        low, high = 1, 1_000_000
        while low < high:  # the smallest limit that runs
            middle = (low + high) // 2
            env = CelEnvironment(
                CelOptions(limits=EvaluationLimits(time_budget_s=None, cost_limit=middle)),
                {"n": None},
            )
            result = env.compile(expression).evaluate(env.bind({"n": n}))
            if isinstance(result, Value):
                high = middle
            else:
                assert "actual cost limit exceeded" in result.message, result
                low = middle + 1
        return low

    small, larger = cost_at(10), cost_at(20)
    # cost(n) = fixed + outer * n + inner * n * n: solve from n = 10, 20, 30
    third = cost_at(30)
    inner = (third - 2 * larger + small) // 200
    outer = (larger - small - inner * 300) // 10
    fixed = small - outer * 10 - inner * 100
    expected = fixed + outer * 150 + inner * 150 * 150  # 22,500 inner iterations
    assert cost_at(150) == expected


# --- the same results as a single evaluation -------------------------------------------------


# Maps come from bound data: the engine iterates a map bound from Python in one order per
# Activation, but a map literal in a new order each evaluation (as cel-go does), single
# evaluations included.
DYN_DATA: dict[str, Any] = {
    "l": [
        {"name": "a1", "p": 3, "q": "1Gi", "v": "1.2.3"},
        {"name": "b22", "p": 1, "q": "512Mi", "v": "1.10.0"},
        {"name": "c333", "p": 3, "q": "2", "v": "0.9.9"},
        {"name": "d", "p": 0, "q": "1500m", "v": "1.2.3"},
    ],
    "m": {"x": 2, "y": 1, "z": 2},
    "flags": {True: 1, False: 0},  # keys cross as they are: bool stays bool
    "g": [{"items": [3, 1, 2]}, {"items": []}, {"items": [5, 5]}],
}

# (expression, what the split evaluations do): "served" stood in for the single evaluation,
# "refused" found a value that cannot cross (a map) and was tried again with it in place;
# nothing: no loop can move.
SERVED = ("served",)
DYN_CASES: list[tuple[str, tuple[str, ...]]] = [
    (f"{CLAIMS.replace('schema.spec.claims', 's.l').replace('priority', 'p')}.size()", SERVED),
    ("s.l.map(c, s.l.filter(d, d.p < c.p).size())", SERVED),
    ("s.l.map(c, s.l.map(d, d.p + c.p))", SERVED),
    ("s.l.map(c, s.l.map(d, d.name + '-' + c.name))", SERVED),
    ("s.l.map(c, s.l.exists(d, d.p > c.p) ? 1 : 0).sum()", SERVED),
    ("s.l.all(i, c, s.l.exists(j, d, j != i && d.p == c.p) || c.p < 2)", SERVED),
    ("s.l.exists_one(c, s.l.all(d, d.p <= c.p))", SERVED),
    ("s.m.map(k, s.m.exists(k2, s.m[k2] > s.m[k]))", SERVED),
    ("s.m.filter(k, s.m.all(k2, s.m[k2] <= s.m[k]))", SERVED),
    ("s.m.transformList(k, v, s.l.filter(c, c.p == v).size())", SERVED),
    ("s.flags.map(k, s.l.filter(c, (c.p > 1) == k && type(k) == bool).size())", SERVED),
    ("s.flags.all(k, v, s.l.exists(c, c.p == v + 2 || !k))", SERVED),
    ("s.l.transformList(i, c, s.l.filter(d, d.p == c.p).map(d, d.name))", ("refused", "served")),
    ("cel.bind(xs, s.l, xs.filter(c, xs.exists(d, d.p > c.p)).size())", SERVED),
    ("cel.bind(n, size(s.l), s.l.map(c, s.l.filter(d, d.p + n > c.p).size()))", SERVED),
    ("s.l.map(a, s.l.filter(b, s.l.exists(c, c.p == a.p + b.p)).size())", SERVED),
    ("s.l.map(x, s.l.map(x, x.p).size() + x.p)", SERVED),
    ("s.l.exists(x, s.l.exists(y, s.l.exists(x, x.p == y.p + 3)))", SERVED),
    ("s.g.map(grp, grp.items.map(i, grp.items.filter(j, j > i).size()))", SERVED),
    ("s.g.map(grp, grp.items.all(i, s.g.exists(h, h.items.exists(j, j == i))))", SERVED),
    ("s.l.map(c, [c.p, 1].map(i, s.l.filter(d, d.p == i).size()))", SERVED),
    ("s.l.map(c, s.l.map(d, double(d.p) / 0.0))", SERVED),
    ("s.l.map(c, s.l.map(d, null))", SERVED),
    ("s.l.map(c, s.l.map(d, bytes(d.name)))", SERVED),
    ("s.l.map(c, s.l.filter(d, d.p == c.p))", ("refused", "refused")),  # maps stay
    # kro's and Kubernetes' functions in the moved loop
    ("s.l.map(c, s.l.filter(d, quantity(d.q).isGreaterThan(quantity(c.q))).size())", SERVED),
    ("s.l.map(c, s.l.map(d, quantity(d.q)).filter(q, q.isLessThan(quantity(c.q))).size())", SERVED),
    ("s.l.map(c, s.l.exists(d, semver(d.v).isGreaterThan(semver(c.v))))", SERVED),
    ("s.l.map(c, s.l.map(d, (d.name + c.name).find('[0-9]+')))", SERVED),
    ("s.l.map(c, s.l.map(d, json.marshal([c.p, d.p, d.name])))", SERVED),
    ("s.l.map(c, s.l.map(d, base64.encode(hash.sha256(c.name + d.name))))", SERVED),
    ("s.l.map(c, s.l.map(d, random.seededString(4, c.name + d.name)))", SERVED),
    ("s.l.map(c, s.l.map(d, c.name.upperAscii().split('')[0] + d.name.substring(1)))", SERVED),
    ("s.l.map(c, s.l.map(d, d.p).indexOf(c.p))", SERVED),
    ("s.l.map(c, lists.range(c.p).map(i, s.l.map(d, d.p * i).max()))", SERVED),
    ("s.l.map(c, s.l.map(d, url('https://h/' + d.name).getEscapedPath()))", SERVED),
    ("s.l.map(c, s.l.map(d, ip('10.0.0.' + string(d.p)).isLoopback()))", SERVED),
    # errors, pending data and their absorption
    ("s.l.map(c, s.l.exists(d, d.missing == c.p))", SERVED),
    ("s.l.map(c, s.l.map(d, 1 / (d.p - c.p)))", SERVED),
    ("s.l.map(c, s.l.map(d, s.l[d.p + 10]))", SERVED),
    ("s.l.exists(c, s.l.exists(d, d.missing > 0) || c.p == 3)", SERVED),
    ("s.l.all(c, s.l.exists(d, d.p / c.p > 0))", SERVED),
    ("s.l.map(c, s.l.map(d, int(d.name)))", SERVED),
    ("s.l.map(c, s.l.map(d, quantity(d.name)))", SERVED),
    # values that cannot cross stay in place: the results are the single evaluation's
    ("s.l.map(c, s.l.map(d, d.?name.orValue('x')))", ()),
    ("s.l.map(c, [1u, 2u].map(u, u + uint(c.p)))", ()),
    ("s.l.map(c, s.l.map(d, timestamp('2024-01-01T00:00:00.123456789Z')))", ()),
    ("s.l.map(c, s.l.map(d, duration(string(d.p) + 'ns')))", ()),
    ("s.l.map(c, s.m.transformMap(k, v, v + c.p))", ()),
    ("cel.bind(xs, s.l.filter(c, c.p > 0), xs.map(c, xs.exists(d, d.p > c.p)))", ()),
]


@pytest.mark.parametrize(("expression", "outcomes"), DYN_CASES, ids=[c[0] for c in DYN_CASES])
def test_split_form_gives_the_single_evaluations_result(
    expression: str, outcomes: tuple[str, ...], spied: list[str]
) -> None:
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"s": None})
    compiled = env.compile(expression)
    single = compiled.evaluate(env.bind({"s": DYN_DATA}))
    assert _moves(compiled) is bool(outcomes)
    _same(single, _split_evaluation(compiled, {"s": DYN_DATA}, env))
    assert spied == list(outcomes)


def test_errors_are_the_single_evaluations_errors() -> None:
    # Pending data, real errors and limits, each as the single evaluation reports it.
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"s": None})
    for expression, expected in [
        ("s.l.map(c, s.l.exists(d, d.missing == c.p))", DataPending),
        ("s.l.map(c, s.l.map(d, 1 / (d.p - c.p)))", ExpressionError),
    ]:
        compiled = env.compile(expression)
        single = compiled.evaluate(env.bind({"s": DYN_DATA}))
        assert isinstance(single, expected)
        assert _split_evaluation(compiled, {"s": DYN_DATA}, env) == single


TYPED_DATA: dict[str, Any] = {
    "items": [
        {"name": "a", "p": 2, "created": "2024-01-01T00:00:00.000000001Z"},
        {"name": "b", "p": 1, "created": "2024-01-01T00:00:00.000000002Z"},
        {"name": "c", "p": 2, "created": "2024-01-01T00:00:00.000000001Z"},
    ],
    "labels": {"app": "x", "tier": "y", "team": "x"},
    "groups": [{"items": [3, 1]}, {"items": [2]}],
}
TYPED_CASES = [
    "spec.items.filter(c, spec.items.exists(d, d.created > c.created)).map(c, c.name)",
    "spec.items.map(c, spec.items.filter(d, d.created == c.created).size())",
    "spec.items.map(c, spec.items.map(d, string(d.created)))",  # nanoseconds re-derived
    "spec.labels.map(k, spec.labels.exists(k2, k2 > k))",
    "spec.labels.all(k, v, spec.labels.exists(k2, v2, k2 != k && v2 == v) || v == 'y')",
    "spec.groups.map(g, g.items.map(i, g.items.exists(j, j < i)))",
    "spec.items.all(i, c, spec.items.exists(j, d, i != j && d.p == c.p) || c.p == 1)",
]


@pytest.mark.parametrize("expression", TYPED_CASES)
def test_split_form_gives_the_single_evaluations_result_on_typed_values(expression: str) -> None:
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"spec": SPEC})
    compiled = env.compile(expression)
    single = compiled.evaluate(env.bind({"spec": TYPED_DATA}))
    assert isinstance(single, Value)
    assert _moves(compiled)
    _same(single, _split_evaluation(compiled, {"spec": TYPED_DATA}, env))


def _movable(cel_type: CelType, compiled: CompiledExpression) -> bool:
    """The rule a moved loop's result follows (see loop_scopes)."""
    if cel_type.kind in ("bool", "int", "double", "string", "bytes", "null", "opaque"):
        return True
    if cel_type.kind == "list":
        return _movable(cel_type.params[0], compiled)
    makes_uint = re.search(r"\du\b|uint\(", compiled.expression) is not None
    return cel_type.kind == "dyn" and not creates_optionals(compiled.functions) and not makes_uint


LIBRARY = [e for e, _ in (*KRO_VALUES, *K8S_CASES)] + [e for e, _ in (*KRO_ERRORS, *K8S_ERRORS)]


@pytest.mark.parametrize("expression", LIBRARY)
def test_every_library_function_gives_the_same_result_in_a_moved_loop(
    expression: str, spied: list[str]
) -> None:
    env = CelEnvironment(CelOptions(limits=NO_TIME, omit_function=True), {"x": None})
    compiled = env.compile(f"[0, 1].map(i, [0, 1].map(j, {expression}))")
    x = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "AllGood"}]}}
    single = compiled.evaluate(env.bind({"x": x}))
    movable = _movable(env.compile(f"[0, 1].map(j, {expression})").output_type, compiled)
    assert _moves(compiled) is movable
    _same(single, _split_evaluation(compiled, {"x": x}, env))
    if not movable:
        assert spied == []
    elif isinstance(single, Value) and _holds_map(single.value):
        # A map cannot cross: each expression around the loop that could move is tried and
        # refused in turn; the single evaluation stands.
        assert spied
        assert set(spied) == {"refused"}
    else:
        assert spied == ["served"]


def test_floats_keep_their_exact_value_through_a_moved_loop() -> None:
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"s": None})
    compiled = env.compile("[1].map(i, s.map(x, x * 1.0))")
    data = {"s": [0.1, -0.0, math.inf, 1e-300]}
    result = _split_evaluation(compiled, data, env)
    assert isinstance(result, Value)
    (values,) = result.value
    assert [math.copysign(1.0, v) if v == 0 else v for v in values] == [0.1, -1.0, math.inf, 1e-300]
