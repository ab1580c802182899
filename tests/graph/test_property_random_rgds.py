"""Random RGDs and instances through the builder and per-instance evaluation: every case ends
in a graph or a clear build error, and every evaluation step in a value, `Pending` or an
`EvaluationError` — never an unexpected exception, and never a rendered object that cannot be
sent to the API server (it must survive JSON encoding).

The generators mix valid and broken input on purpose: SimpleSchema types with and without
markers (and some that do not parse), expressions built from a small grammar over the spec's
fields (comprehensions, kro and Kubernetes library calls, optionals, regexes; sometimes
ill-typed or unbalanced), resources that read each other, forEach collections, includeWhen
and readyWhen, and instances whose values match their schema or not.

`max_examples` is 200; set KRO_PROPERTY_EXAMPLES (e.g. 10000, as bench/bench_property.py
does) for a longer run.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from functools import cache
from typing import Any, Final

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kro.api.v1alpha1 import InvalidObjectError, parse_resource_graph_definition
from kro.graph.builder import build_graph
from kro.graph.errors import GraphError
from kro.graph.evaluate import EvaluationError, InstanceEvaluation, Pending
from kro.graph.model import Graph, NodeType
from kro.graph.resolver import OfflineSchemaResolver

EXAMPLES: Final = int(os.environ.get("KRO_PROPERTY_EXAMPLES", "200"))
SETTINGS: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FIELD_TYPES: Final = {
    "string": "string",
    "string | default=x": "string",
    "integer": "integer",
    "integer | default=3": "integer",
    "boolean": "boolean",
    "float": "number",
    "[]string": "list",
    "[]string | maxItems=5": "list",
    "[]integer": "ints",
    "map[string]string": "map",
    "strin": "broken",  # does not parse: a SimpleSchema error
}
FIELD_NAMES: Final = ("name", "size", "tags", "labels", "port", "text", "count", "flag")
# Hypothesis favours the first entries of a sampled list: the broken type sits in the middle.
_VALID_TYPES: Final = [t for t, kind in FIELD_TYPES.items() if kind != "broken"] * 3
_FIELD_TYPE: Final = st.sampled_from(
    [*_VALID_TYPES[: len(_VALID_TYPES) // 2], "strin", *_VALID_TYPES[len(_VALID_TYPES) // 2 :]]
)
OUTCOMES: Final[Counter[str]] = Counter()
"""How each example ended (read by bench/bench_property.py)."""


@cache
def _resolver() -> OfflineSchemaResolver:
    return OfflineSchemaResolver.from_files()


# --- expressions: a small typed grammar (S string, I int, B bool, L list of strings) -----------


def _paths(fields: dict[str, str], kind: str) -> list[str]:
    return [f"schema.spec.{n}" for n, t in sorted(fields.items()) if FIELD_TYPES[t] == kind]


_FORMS: Final[dict[str, tuple[str, list[str]]]] = {
    # kind: (operand kinds, forms over them)
    "string": (
        "string string int list map",
        ["{0} + {1}", "{0}.upperAscii()", "{0}.find({1})", "{0}.find(\"[a-z]+\")",
         "random.seededString(size({0}) + 1, {1})", "base64.encode(hash.sha256({0}))",
         "string(hash.fnv64a({0}).size())", "json.marshal([{0}, {1}])", "{0}.split(\",\")[0]",
         "cel.bind(v, {0}, v + v)", "{0}.replace(\"a\", {1})", "string(size({0}))",
         "({0} == {1} ? {0} : {1})", "json.unmarshal(json.marshal({0}))",
         "string(quantity(\"1Gi\").add(size({0})).asInteger())", "{0}.substring(1)",
         "string({2})", "{3}.join(\",\")", "{3}[0]", "{4}[\"k\"]", "json.marshal({4})"],
    ),
    "int": (
        "int string",
        ["{0} + {0}", "{0} * 3", "{0} / {0}", "size({1})", "{1}.size() - {0}",
         "random.seededInt(0, 10, {1})", "[{0}, 2].sum()", "[{0}, 1].max()"],
    ),
    "list": (
        "list string int",
        ["{0}.map(x, x + {1})", "{0}.filter(x, x != {1})", "{1}.split(\",\")",
         "{1}.findAll(\"a*\")", "{0} + [{1}]", "lists.range({2}).map(n, string(n))",
         "{0}.map(a, {0}.map(b, a + b)).map(r, r.join(\"\"))", "{0}.sort()",
         "lists.setAtIndex({0}, 0, {1})", "{0}.transformList(n, x, string(n) + x)"],
    ),
    "bool": (
        "string int list",
        ["{0} == {0}", "{1} < 3", "{2}.exists(x, x == {0})", "{2}.all(x, size(x) < {1})",
         "has(schema.metadata.labels)", "{0} in {2}", "!({1} > 0)",
         "{0}.matches(\"^a\") || {1} == 0", "{2}.exists_one(x, x == {0})", "{0}.startsWith(\"a\")"],
    ),
    "map": ("map string", ['{0}.merge({{"x": {1}}})', '{{"k": {1}}}', "{0}.deepMerge({0})"]),
}  # fmt: skip
_DEPTH: Final = 3


def _grammar(fields: dict[str, str], reads: list[str]) -> dict[str, st.SearchStrategy[str]]:
    """Strategies for well-typed expressions of each kind, at most `_DEPTH` calls deep, over
    the instance's fields and `reads` of the ConfigMaps declared before. Some still
    fail at run time on purpose (missing keys, out-of-range indexes, division by zero, huge
    lengths, catastrophic patterns)."""
    leaves = {
        "string": [*_paths(fields, "string"), '"a"', '"(a+)+$"', "schema.metadata.name",
                   'schema.metadata.labels[?"app"].orValue("d")',
                   *reads],
        "int": [*_paths(fields, "integer"), "0", "1", "-2", "7"],
        "list": [*_paths(fields, "list"), '["a", "b"]', '["a"].filter(x, false)'],
        "bool": [*_paths(fields, "boolean"), "true", "false"],
        "map": [*_paths(fields, "map"), '{"k": "v"}'],
    }  # fmt: skip
    levels: list[dict[str, st.SearchStrategy[str]]] = [
        {kind: st.sampled_from(values) for kind, values in leaves.items()}
    ]
    for _ in range(_DEPTH):
        below = levels[-1]
        level: dict[str, st.SearchStrategy[str]] = {}
        for kind, (operands, forms) in _FORMS.items():
            args = [below[k] for k in operands.split()]
            level[kind] = levels[0][kind] | st.builds(_fill, st.sampled_from(forms), *args)
        levels.append(level)
    return levels[-1]


def _fill(form: str, *operands: str) -> str:
    """`form` with each operand parenthesised, so precedence never changes the meaning."""
    return form.format(*(f"({o})" for o in operands))


def _wild(fields: dict[str, str]) -> st.SearchStrategy[str]:
    """Untyped combinations: mostly compile errors, the builder must say so clearly."""
    leaf = st.sampled_from([*_paths(fields, "string"), "1", '"a"', "[]", "null", "schema"])
    forms = st.sampled_from(["{0} + {1}", "{0}.map(x, {1})", "{0}[{1}]", "({0}", "{0}.?x", "-{0}"])
    return st.recursive(
        leaf, lambda inner: st.builds(str.format, forms, inner, inner), max_leaves=4
    )


def _expression(fields: dict[str, str], reads: list[str], kind: str) -> st.SearchStrategy[str]:
    typed, wild = _grammar(fields, reads)[kind], _wild(fields)
    return st.integers(0, 11).flatmap(lambda pick: wild if pick == 6 else typed)


# --- RGDs and instances -----------------------------------------------------------------------


@st.composite
def _case(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    fields = draw(st.dictionaries(st.sampled_from(FIELD_NAMES), _FIELD_TYPE, max_size=4))
    count = draw(st.integers(min_value=1, max_value=3))
    resources = []
    reads: list[str] = []  # how later expressions read each earlier ConfigMap
    for index in range(count):
        rid = f"cfg{index}"
        expressions = draw(
            st.lists(_expression(fields, list(reads), "string"), min_size=1, max_size=3)
        )
        data = {f"k{i}": _template(draw, e) for i, e in enumerate(expressions)}
        resource: dict[str, Any] = {
            "id": rid,
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "${schema.metadata.name}-" + rid},
                "data": data,
            },
        }
        lists = [n for n, t in fields.items() if FIELD_TYPES[t] == "list"]
        if lists and draw(st.booleans()):
            resource["forEach"] = [{"elem": "${schema.spec." + draw(st.sampled_from(lists)) + "}"}]
            resource["template"]["metadata"]["name"] = "${schema.metadata.name}-" + rid + "-${elem}"
        if draw(st.booleans()):
            resource["includeWhen"] = ["${" + draw(_expression(fields, list(reads), "bool")) + "}"]
        if draw(st.booleans()):
            resource["readyWhen"] = ['${each.data.k0 != ""}' if "forEach" in resource else
                                     "${" + rid + ".data.k0 != \"\"}"]  # fmt: skip
        resources.append(resource)
        reads.append(f"{rid}[0].data.k0" if "forEach" in resource else f"{rid}.data.k0")
    kind = draw(st.sampled_from(list(_STATUS)))
    summary = _STATUS[kind].format(draw(_expression(fields, reads, kind)))
    status = {"summary": "${" + summary + "}"} if draw(st.booleans()) else {}
    rgd = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "random"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "Random",
                "spec": fields,
                **({"status": status} if status else {}),
            },
            "resources": resources,
        },
    }
    spec = {name: draw(_value(FIELD_TYPES[kind_of])) for name, kind_of in fields.items()}
    instance = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Random",
        "metadata": {"name": "demo", "namespace": "default", "uid": "uid-1"},
        "spec": {k: v for k, v in spec.items() if v is not _ABSENT},
    }
    return rgd, instance


_STATUS: Final = {  # a status field must read schema or a resource
    "string": "schema.metadata.name + ({})",
    "int": "size(schema.metadata.name) + ({})",
    "bool": 'schema.metadata.name != "" && ({})',
    "list": "[schema.metadata.name] + ({})",
    "map": '{{"n": schema.metadata.name}}.merge({})',
}


def _template(draw: st.DrawFn, expression: str) -> str:
    if draw(st.booleans()):
        return "${" + expression + "}"
    return "prefix-${" + expression + "}-suffix"


_ABSENT: Final = object()
_JSON: Final = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)


def _value(kind: str) -> st.SearchStrategy[Any]:
    matching: dict[str, st.SearchStrategy[Any]] = {
        "string": st.text(max_size=40) | st.just("a" * 40 + "!"),
        "integer": st.integers(-(2**31), 2**31) | st.just(30_000_000),
        "boolean": st.booleans(),
        "number": st.floats(allow_nan=False, allow_infinity=False, width=32),
        "list": st.lists(st.text(max_size=6), max_size=6),
        "ints": st.lists(st.integers(-10, 10), max_size=6),
        "map": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=4),
        "broken": _JSON,
    }
    return st.one_of(matching[kind], matching[kind], matching[kind], _JSON, st.just(_ABSENT))


# --- the property ------------------------------------------------------------------------------


def _build(rgd: dict[str, Any]) -> Graph | str:
    """The graph, or the name of the error class that explains why there is none."""
    failure: InvalidObjectError | GraphError
    try:
        parse_resource_graph_definition(rgd)
        return build_graph(rgd, _resolver())
    except (InvalidObjectError, GraphError) as error:
        failure = error
    assert str(failure), "errors must say what is wrong"
    return type(failure).__name__


def _reconcile(graph: Graph, instance: dict[str, Any]) -> str:
    """One pass as the instance controller runs it, observed objects being the desired ones;
    returns how it ended."""
    evaluation = InstanceEvaluation(graph, instance)
    outcome = "rendered"
    for node_id in graph.topological_order:
        try:
            outcome = _node(graph, evaluation, node_id) or outcome
        except EvaluationError as error:
            failure, failed_node = error, node_id
            break
    else:
        json.dumps(evaluation.status_fields())
        return outcome
    assert str(failure), "errors must say what is wrong"
    assert failure.resource_id == failed_node
    return "evaluation error"


def _node(graph: Graph, evaluation: InstanceEvaluation, node_id: str) -> str | None:
    """includeWhen, render, observe, readiness of one node; "pending" if it has to wait."""
    ignored = evaluation.check_ignored(node_id)
    if ignored is not False:
        return "pending" if isinstance(ignored, Pending) else None
    desired = evaluation.desired(node_id)
    if isinstance(desired, Pending):
        assert desired.reason
        return "pending"
    json.dumps(desired)  # what would be applied must be JSON
    node = graph.node(node_id)
    evaluation.observe(node_id, desired if node.type is NodeType.COLLECTION else desired[0])
    evaluation.readiness(node_id)
    return None


@SETTINGS
@given(_case())
def test_random_rgds_end_in_a_value_or_a_clear_error(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    rgd, instance = case
    graph = _build(rgd)
    outcome = f"build error: {graph}" if isinstance(graph, str) else _reconcile(graph, instance)
    OUTCOMES[outcome] += 1
    event(outcome)
