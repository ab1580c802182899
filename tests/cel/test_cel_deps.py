"""Dependency extraction from the checked tree (kro.cel.deps)."""

from __future__ import annotations

import pytest

from kro.cel import CelEnvironment, Dependency

ENV = CelEnvironment(
    declarations={n: None for n in ("deployment", "schema", "items", "configmap", "unknownres")}
)

CASES = [
    (
        "deployment.status.availableReplicas >= deployment.spec.replicas",
        [("deployment", "status.availableReplicas"), ("deployment", "spec.replicas")],
    ),
    ("items.map(i, i.name + schema.spec.image)", [("items", ""), ("schema", "spec.image")]),
    ('configmap.data["key"]', [("configmap", "data.key")]),
    ("schema.?spec.?ingress.orValue({})", [("schema", "spec.ingress")]),
    ('cel.bind(n, schema.metadata.name, n + "-x")', [("schema", "metadata.name")]),
    ("deployment.status.conditions[0].type", [("deployment", "status.conditions[0].type")]),
    (
        "deployment.spec.containers[schema.spec.index].name",
        [("deployment", "spec.containers"), ("schema", "spec.index")],
    ),
    ("has(schema.spec.ingress)", [("schema", "spec.ingress")]),
    ('configmap.data[?"k"].orValue("")', [("configmap", "data.k")]),
    ("size(items)", [("items", "")]),
    ('schema.spec.labels.all(k, v, k == "x")', [("schema", "spec.labels")]),
    ("schema.spec.a + schema.spec.a", [("schema", "spec.a")]),
    (
        "[schema.spec.a, {schema.spec.b: deployment.x}]",
        [
            ("schema", "spec.a"),
            ("schema", "spec.b"),
            ("deployment", "x"),
        ],
    ),
    ("random.seededString(8, schema.metadata.uid)", [("schema", "metadata.uid")]),
    ("1 + 2", []),
    # A comprehension variable shadowing a declared name stays local.
    ("items.map(schema, schema.name)", [("items", "")]),
]


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_dependencies(expression: str, expected: list[tuple[str, str]]) -> None:
    deps = ENV.compile(expression).dependencies
    assert [tuple(d) for d in deps] == expected
    assert all(isinstance(d, Dependency) for d in deps)


def test_roots() -> None:
    assert ENV.compile("deployment.a + schema.b").roots == {"deployment", "schema"}


def test_functions_are_listed() -> None:
    functions = ENV.compile("random.seededString(8, schema.x).upperAscii()").functions
    assert {"random.seededString", "upperAscii"} <= functions
