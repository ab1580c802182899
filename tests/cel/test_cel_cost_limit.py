"""`--cel-cost-limit` (V-10): a per-expression budget in CEL's runtime cost units.

The expected costs are cel-go's documented cost constants (`common.SelectAndIdentCost` 1, a
call 1, `ListCreateBaseCost` 10, `MapCreateBaseCost` 30, constants free, a comprehension's
body once per iteration): an expression at exactly the limit runs, one unit over it fails
with cel-go's words, as a limit error (never "data pending"), for every kind of expression
the graph evaluates. Limit 0 (the flag's default) is no limit.
"""

from __future__ import annotations

from typing import Any

import pytest

from kro.cel import CelEnvironment, CelOptions, EvaluationLimits, ExpressionError, Value
from kro.cli.controller import app_options
from kro.cli.flags import parse_controller_args
from kro.graph.builder import build_graph
from kro.graph.evaluate import EvaluationError, InstanceEvaluation
from kro.graph.options import BuildOptions
from kro.graph.resolver import OfflineSchemaResolver

CANCELLED = "evaluation budget exceeded: operation cancelled: actual cost limit exceeded"
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "items": {"type": "array", "items": {"type": "integer"}},
    },
}


def _evaluate(expression: str, limit: int | None, **values: Any) -> Any:
    env = CelEnvironment(
        CelOptions(limits=EvaluationLimits(cost_limit=limit)), declarations={"spec": SCHEMA}
    )
    return env.compile(expression).evaluate(env.bind({"spec": values}))


# (expression, spec, cost in cel-go's units)
COSTS = [
    ("'a literal'", {}, 0),
    ("spec.name", {"name": "x"}, 2),  # identifier + selection
    ("spec.name + '-x'", {"name": "x"}, 3),  # + one call
    ("[1, 2, 3]", {}, 10),  # a list literal
    ('{"a": 1}', {}, 30),  # a map literal
    ("size(spec.items)", {"items": [1, 2]}, 3),
    # map over n items: range (2) + [] (10) + result (1) once; per item the step
    # `__result__ + [x * 2]` = + (1) + __result__ (1) + [..] (10) + * (1) + x (1) = 14
    ("spec.items.map(x, x * 2)", {"items": [1, 2, 3]}, 13 + 3 * 14),
    ("spec.items.map(x, x * 2)", {"items": list(range(40))}, 13 + 40 * 14),
]


@pytest.mark.parametrize(
    ("expression", "spec", "cost"),
    COSTS,
    ids=["literal", "select", "call", "list", "map", "size", "map-3", "map-40"],
)
def test_an_expression_at_its_cost_runs_and_one_unit_less_fails(
    expression: str, spec: dict[str, Any], cost: int
) -> None:
    assert isinstance(_evaluate(expression, cost or 1, **spec), Value)
    if cost == 0:
        return
    failed = _evaluate(expression, cost - 1, **spec)
    assert isinstance(failed, ExpressionError)
    assert failed.code == "RESOURCE_EXHAUSTED"
    assert failed.expression == expression
    assert failed.message.startswith(CANCELLED)
    assert f"the CEL cost limit is {cost - 1}" in failed.message


def test_the_cost_of_a_loop_grows_with_the_data_it_runs_over() -> None:
    expression = "spec.items.all(x, spec.items.exists(y, y == x))"
    assert isinstance(_evaluate(expression, 1000, items=[1, 2, 3]), Value)
    failed = _evaluate(expression, 1000, items=list(range(30)))
    assert isinstance(failed, ExpressionError)
    assert failed.message.startswith(CANCELLED)


def test_no_limit_when_none_is_set() -> None:
    result = _evaluate("spec.items.map(x, x * 2)", None, items=list(range(500)))
    assert isinstance(result, Value)


# -- through the graph, as the controller evaluates it ----------------------------------------

EXPENSIVE = "schema.spec.items.map(x, x * 2).size() > 0"


def _graph(limit: int) -> Any:
    rgd = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "costly"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "Costly",
                "spec": {"items": "[]integer"},
            },
            "resources": [
                {
                    "id": "config",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "data": {"any": "${string(" + EXPENSIVE + ")}"},
                    },
                },
                {
                    "id": "gated",
                    "includeWhen": ["${" + EXPENSIVE + "}"],
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-gated"},
                    },
                },
            ],
        },
    }
    return build_graph(
        rgd, OfflineSchemaResolver.from_files(), options=BuildOptions(cel_cost_limit=limit)
    )


def _instance(items: list[int]) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Costly",
        "metadata": {"name": "demo", "namespace": "default", "uid": "u-1"},
        "spec": {"items": items},
    }


def test_an_instance_within_the_limit_renders() -> None:
    evaluation = InstanceEvaluation(_graph(1000), _instance([1, 2, 3]))
    (config,) = evaluation.desired("config")  # type: ignore[misc]
    assert config["data"]["any"] == "true"
    assert evaluation.check_ignored("gated") is False


def test_a_template_expression_over_the_limit_is_an_error_naming_it() -> None:
    evaluation = InstanceEvaluation(_graph(1000), _instance(list(range(200))))
    with pytest.raises(EvaluationError) as caught:
        evaluation.desired("config")
    error = caught.value
    assert (error.resource_id, error.field_path) == ("config", "data.any")
    assert str(error).startswith(
        f'node "config": failed to evaluate expression "string({EXPENSIVE})" in path '
        f'"data.any": {CANCELLED}'
    )


def test_an_include_when_over_the_limit_is_an_error_naming_it() -> None:
    evaluation = InstanceEvaluation(_graph(1000), _instance(list(range(200))))
    with pytest.raises(EvaluationError) as caught:
        evaluation.check_ignored("gated")
    assert caught.value.expression == EXPENSIVE
    assert str(caught.value).startswith(
        f'node "gated": failed to evaluate expression "{EXPENSIVE}" in includeWhen: {CANCELLED}'
    )


def test_the_same_instance_renders_without_the_limit() -> None:
    evaluation = InstanceEvaluation(_graph(0), _instance(list(range(200))))
    (config,) = evaluation.desired("config")  # type: ignore[misc]
    assert config["data"]["any"] == "true"


@pytest.mark.parametrize(("argv", "limit"), [([], 0), (["--cel-cost-limit=5000"], 5000)])
def test_the_flag_reaches_the_graph_build(argv: list[str], limit: int) -> None:
    assert app_options(parse_controller_args(argv)).rgd.build.cel_cost_limit == limit


def test_a_negative_limit_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as caught:
        parse_controller_args(["--cel-cost-limit=-1"])
    assert caught.value.code == 2
