"""Property tests: dependency paths and evaluation agree with the data they describe."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kro.cel import CelEnvironment, DataPending, Value

ENV = CelEnvironment(declarations={"res": None})
KEYWORDS = {"in", "as", "if", "for", "let", "var", "true", "false", "null", "break", "const",
            "continue", "else", "function", "import", "loop", "package", "return", "void",
            "while"}  # fmt: skip
NAMES = st.from_regex(r"[a-z][a-zA-Z0-9]{0,6}", fullmatch=True).filter(lambda n: n not in KEYWORDS)


@settings(max_examples=60, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=5), st.integers(min_value=-5, max_value=5))
def test_field_chain_dependency_and_value(path: list[str], leaf: int) -> None:
    expression = "res." + ".".join(path)
    compiled = ENV.compile(expression)
    assert [tuple(d) for d in compiled.dependencies] == [("res", ".".join(path))]
    data: Any = leaf
    for name in reversed(path):
        data = {name: data}
    assert compiled.evaluate(ENV.bind({"res": data})) == Value(leaf)
    assert isinstance(compiled.evaluate(ENV.bind({"res": {}})), DataPending)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=-100, max_value=100), max_size=8))
def test_list_library_agrees_with_python(items: list[int]) -> None:
    activation = ENV.bind({"res": items})
    assert ENV.compile("res.sum()").evaluate(activation) == Value(sum(items))
    assert ENV.compile("res.isSorted()").evaluate(activation) == Value(items == sorted(items))
    assert ENV.compile("res.map(v, v * 2)").evaluate(activation) == Value([v * 2 for v in items])
