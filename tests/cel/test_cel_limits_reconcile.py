"""A failed evaluation limit reaches the instance the way every expression error does: through
kro.graph.evaluate, as an EvaluationError whose message names the expression, where it sits
and the limit, and whose fields name the resource (the instance controller writes the message
into ResourcesReady, through the credential redaction every condition passes). Built with the
real builder and the offline schema bundle."""

from __future__ import annotations

from typing import Any

import pytest

from kro.graph.builder import build_graph
from kro.graph.evaluate import EvaluationError, InstanceEvaluation
from kro.graph.model import Graph
from kro.graph.resolver import OfflineSchemaResolver
from kro.runtime.redact import CONDITION_MESSAGE_LIMIT, scrub

SEEDED = 'random.seededString(schema.spec.n, "seed")'
NESTED = "schema.spec.items.map(a, schema.spec.items.map(b, a + b)).size() > 0"
REGEX = 'schema.spec.text.find("(a+)+$")'


def _graph() -> Graph:
    rgd = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "hostile"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "Hostile",
                "spec": {"n": "integer", "items": "[]string", "text": "string"},
            },
            "resources": [
                {
                    "id": "config",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "data": {"password": "${" + SEEDED + "}", "match": "${" + REGEX + "}"},
                    },
                },
                {
                    "id": "gated",
                    "includeWhen": ["${" + NESTED + "}"],
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-gated"},
                    },
                },
            ],
        },
    }
    return build_graph(rgd, OfflineSchemaResolver.from_files())


GRAPH = _graph()


def _instance(**spec: Any) -> dict[str, Any]:
    defaults: dict[str, Any] = {"n": 8, "items": ["a"], "text": "a" * 40 + "!"}
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Hostile",
        "metadata": {"name": "demo", "namespace": "default", "uid": "u-1"},
        "spec": {**defaults, **spec},
    }


@pytest.mark.timeout(30)
def test_healthy_values_render() -> None:
    evaluation = InstanceEvaluation(GRAPH, _instance())
    (config,) = evaluation.desired("config")  # type: ignore[misc]
    assert config["data"]["match"] == ""
    assert len(config["data"]["password"]) == 8
    assert evaluation.check_ignored("gated") is False


@pytest.mark.timeout(30)
def test_oversized_value_names_resource_path_expression_and_limit() -> None:
    evaluation = InstanceEvaluation(GRAPH, _instance(n=30_000_000))
    with pytest.raises(EvaluationError) as caught:
        evaluation.desired("config")
    error = caught.value
    assert (error.resource_id, error.field_path, error.expression) == (
        "config",
        "data.password",
        SEEDED,
    )
    assert str(error) == (
        f'node "config": failed to evaluate expression "{SEEDED}" in path "data.password": '
        "random.seededString: length 30000000 exceeds the limit of 3145728 (3MiB per value)"
    )
    assert scrub(str(error), CONDITION_MESSAGE_LIMIT) == str(error)  # nothing looks secret


@pytest.mark.timeout(60)
def test_nested_comprehension_budget_names_the_limit() -> None:
    # 2,000 x 2,000 iterations: far past any budget. (200 x 200 used to stop at the engine's
    # iteration cap; nested loops now run past it, as upstream's do, within the budget.)
    evaluation = InstanceEvaluation(GRAPH, _instance(items=[str(i) for i in range(2000)]))
    with pytest.raises(EvaluationError) as caught:
        evaluation.check_ignored("gated")
    error = caught.value
    assert (error.resource_id, error.expression) == ("gated", NESTED)
    assert str(error).startswith(
        f'node "gated": failed to evaluate expression "{NESTED}" in includeWhen: '
        "evaluation budget exceeded: "
    )
