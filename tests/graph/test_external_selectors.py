"""externalRef selectors since v0.10 (V-12) and optionals compared directly (V-13).

A selector is a literal label selector or one `${...}` expression that yields one. A literal
of the wrong shape fails the build; an expression whose result has the wrong shape fails the
evaluation naming the expression (the instance reports it in ResourcesReady), and is never
read as "no requirements", which would select every object of the kind.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_builder_fixtures import build, build_error, configmap, rgd

from kro.graph.evaluate import EvaluationError, InstanceEvaluation
from kro.graph.model import Graph, NodeType

SELECTOR_SPEC = {"name": "string", "selector": "object", "tier": "string"}


def selecting(selector: Any, rid: str = "cms") -> dict[str, Any]:
    return {
        "id": rid,
        "externalRef": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"namespace": "team", "selector": selector},
        },
    }


def graph_of(selector: Any) -> Graph:
    return build(rgd(selecting(selector), spec=SELECTOR_SPEC))


def rendered_selector(graph: Graph, spec: dict[str, Any]) -> Any:
    instance = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "App",
        "metadata": {"name": "a", "namespace": "team"},
        "spec": spec,
    }
    desired = InstanceEvaluation(graph, instance).desired("cms")
    assert isinstance(desired, list)
    return desired[0]["metadata"]["selector"]


@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": {"tier": "db"}},
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db", "cache"]}]},
        {"matchExpressions": [{"key": "example.com/tier", "operator": "Exists"}]},
        {"matchLabels": {"tier": "db"}, "matchExpressions": []},
        {},
    ],
    ids=["match-labels", "in", "exists-with-prefix", "both", "empty-selects-everything"],
)
def test_an_expression_yielding_a_label_selector_is_rendered_as_it_is(selector: Any) -> None:
    graph = graph_of("${schema.spec.selector}")
    assert graph.nodes["cms"].type is NodeType.EXTERNAL_COLLECTION
    assert rendered_selector(graph, {"name": "a", "selector": selector}) == selector


def test_a_literal_selector_still_takes_expressions_in_its_values() -> None:
    graph = graph_of({"matchLabels": {"tier": "${schema.spec.tier}"}})
    assert rendered_selector(graph, {"name": "a", "tier": "db"}) == {"matchLabels": {"tier": "db"}}


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ({"matchLabel": {"tier": "db"}}, 'unknown field "matchLabel"'),
        ({"tier": "db"}, 'unknown field "tier"'),
        ("tier=db", "expected a label selector (a map with matchLabels and/or "
         "matchExpressions), got string"),
        (7, "got number"),
        (None, "got null"),
        ({"matchLabels": ["tier"]}, "matchLabels must be a map of label values, got list"),
        ({"matchLabels": {"tier": 3}}, 'matchLabels["tier"]: a label value must be a string'),
        ({"matchExpressions": [{"key": "tier", "operator": "Equals", "values": ["db"]}]},
         "matchExpressions[0].operator must be one of In, NotIn, Exists, DoesNotExist"),
        ({"matchExpressions": [{"key": "tier", "operator": "In"}]},
         "matchExpressions[0]: operator In needs at least one value"),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["db"]}]},
         "matchExpressions[0]: operator Exists takes no values"),
        ({"matchLabels": {"not a key": "db"}}, 'invalid label key "not a key"'),
    ],
    ids=["misspelled-field", "bare-label-map", "string", "number", "null", "labels-as-list",
         "label-value-not-a-string", "unknown-operator", "in-without-values",
         "exists-with-values", "bad-label-key"],
)  # fmt: skip
def test_an_expression_yielding_another_shape_is_an_evaluation_error_naming_it(
    selector: Any, problem: str
) -> None:
    graph = graph_of("${schema.spec.selector}")
    with pytest.raises(EvaluationError) as caught:
        rendered_selector(graph, {"name": "a", "selector": selector})
    message = str(caught.value)
    assert message.startswith(
        'node "cms": selector expression "schema.spec.selector" did not yield a label selector: '
    )
    assert problem in message
    assert (caught.value.resource_id, caught.value.expression) == ("cms", "schema.spec.selector")


def test_a_literal_selector_whose_rendered_value_is_wrong_names_its_expressions() -> None:
    graph = graph_of({"matchExpressions": "${schema.spec.selector}"})
    with pytest.raises(EvaluationError) as caught:
        rendered_selector(graph, {"name": "a", "selector": {"tier": "db"}})
    assert str(caught.value) == (
        'node "cms": selector expression "schema.spec.selector" did not yield a label '
        "selector: matchExpressions must be a list, got map"
    )


@pytest.mark.parametrize(
    ("selector", "detail"),
    [
        ({"matchLabel": {"tier": "db"}}, 'unknown field "matchLabel"'),
        ({"tier": "db"}, 'unknown field "tier"'),
        ("tier=db", "must be a label selector or one ${...} expression that yields one, "
         "got string 'tier=db'"),
        ("tier=${schema.spec.tier}", "must be a label selector or one ${...} expression"),
        ({"matchExpressions": [{"key": "tier", "operator": "Equals", "values": ["db"]}]},
         "matchExpressions[0].operator must be one of In, NotIn, Exists, DoesNotExist"),
    ],
    ids=["misspelled-field", "bare-label-map", "literal-string", "string-template",
         "unknown-operator"],
)  # fmt: skip
def test_a_literal_selector_of_the_wrong_shape_fails_the_build(selector: Any, detail: str) -> None:
    err = build_error(rgd(selecting(selector), spec=SELECTOR_SPEC))
    assert 'resource "cms": externalRef.metadata.selector' in str(err)
    assert detail in str(err)


def test_name_and_selector_together_fail_the_build_now_that_admission_allows_them() -> None:
    entry = selecting("${schema.spec.selector}")
    entry["externalRef"]["metadata"]["name"] = "cfg"
    err = build_error(rgd(entry, spec=SELECTOR_SPEC))
    assert 'resource "cms": exactly one of name or selector must be provided' in str(err)


@pytest.mark.parametrize(
    "expression",
    ['cfg.data.?mode == "fast"', 'cfg.data.?mode + "-x"'],
    ids=["comparison", "arithmetic"],
)
def test_an_optional_used_directly_in_an_operator_fails_the_build(expression: str) -> None:
    """V-13: unwrap with orValue() or hasValue(); the type error is cel-go's."""
    cfg = {
        "id": "cfg",
        "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}},
    }
    user = configmap("user", data={"mode": f"${{string({expression})}}"})
    err = build_error(rgd(cfg, user))
    operator = "_==_" if "==" in expression else "_+_"
    assert (
        f"found no matching overload for '{operator}' applied to '(optional_type(string), string)'"
        in str(err)
    )


def test_an_unwrapped_optional_builds() -> None:
    cfg = {
        "id": "cfg",
        "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}},
    }
    user = configmap("user", data={"mode": '${string(cfg.data.?mode.orValue("slow") == "fast")}'})
    assert "user" in build(rgd(cfg, user)).nodes
