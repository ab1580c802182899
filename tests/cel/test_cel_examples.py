"""Every `${...}` expression in the shared example RGDs compiles in kro's environment.

Full template parsing (string templates, schema-aware typing of each field) is the graph
compiler's job; here each expression is compiled on its own with `schema` and every
resource id declared `dyn`, which is enough to catch syntax, unknown functions and
unsupported features.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.cel import CelEnvironment, CelOptions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# `${` ... `}` with double-quoted strings and one level of `{...}` inside (C-01 subset).
EXPRESSION = re.compile(r'\$\{((?:[^{}"]|"(?:\\.|[^"\\])*"|\{[^{}]*\})*)\}')


def _rgds() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "ResourceGraphDefinition":
                out.append((f"{path.relative_to(EXAMPLES)}:{doc['metadata']['name']}", doc))
    return out


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def _cases() -> list[tuple[str, str, tuple[str, ...]]]:
    cases = []
    for name, rgd in _rgds():
        spec = rgd.get("spec", {})
        ids = tuple(r["id"] for r in spec.get("resources", []) if "id" in r)
        for text in _strings(spec):
            for match in EXPRESSION.finditer(text):
                cases.append((name, match.group(1), ids))
    return cases


CASES = _cases()


def test_examples_are_found() -> None:
    assert len(CASES) > 50


@pytest.mark.parametrize(("rgd", "expression", "ids"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_example_expression_compiles(rgd: str, expression: str, ids: tuple[str, ...]) -> None:
    env = _env(ids)
    compiled = env.compile(expression.strip())
    assert compiled.roots <= {"schema", *ids}, rgd


_ENVS: dict[tuple[str, ...], CelEnvironment] = {}


def _env(ids: tuple[str, ...]) -> CelEnvironment:
    env = _ENVS.get(ids)
    if env is None:
        env = CelEnvironment(
            CelOptions(omit_function=True), {name: None for name in ("schema", *ids)}
        )
        _ENVS[ids] = env
    return env
