"""Random nested loops: the split form (each inner loop in an evaluation of its own) gives the
single evaluation's result, error or pending data for every generated expression.

Expressions are drawn from a small grammar over `dyn` data: loops of every macro kind over
lists, maps, ranges and an outer variable's list, nested in each other's bodies, ranges and
`cel.bind`s, reusing variable names (shadowing), with reads that fail (a missing key, a
division by zero) so errors and their absorption by `||` / `&&` are compared too.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cel_nested_loops import NO_TIME, _same, _split_evaluation

from kro.cel import CelCompileError, CelEnvironment, CelOptions

DATA: dict[str, Any] = {
    "l": [
        {"p": 2, "n": "a", "items": [1, 2]},
        {"p": 0, "n": "bb", "items": []},
        {"p": 2, "n": "c", "items": [3]},
    ],
    "m": {"x": 1, "y": 0, "z": 2},
    "k": 1,
}
NAMES = ("a", "b", "c", "a")  # `a` twice: inner loops shadow outer ones


@st.composite
def _int(draw: st.DrawFn, scope: tuple[tuple[str, str], ...], depth: int) -> str:
    elems = [n for n, kind in scope if kind == "elem"]
    ints = [n for n, kind in scope if kind == "int"]
    keys = [n for n, kind in scope if kind == "key"]
    options = ["lit", "k"]
    if elems:
        options += ["p", "items_size"]
    if ints:
        options.append("var")
    if keys:
        options.append("m_at")
    if depth > 0:
        options += ["loop_size", "sum", "div", "plus"]
    choice = draw(st.sampled_from(options))
    if choice == "lit":
        return str(draw(st.integers(0, 3)))
    if choice == "k":
        return "s.k"
    if choice == "p":
        return f"{draw(st.sampled_from(elems))}.{draw(st.sampled_from(['p', 'p', 'missing']))}"
    if choice == "items_size":
        return f"size({draw(st.sampled_from(elems))}.items)"
    if choice == "var":
        return draw(st.sampled_from(ints))
    if choice == "m_at":
        return f"s.m[{draw(st.sampled_from(keys))}]"
    if choice == "loop_size":
        source, var, kind = draw(_range(scope, depth - 1))
        body = draw(_bool((*scope, (var, kind)), depth - 1))
        return f"{source}.filter({var}, {body}).size()"
    if choice == "sum":
        source, var, kind = draw(_range(scope, depth - 1))
        body = draw(_int((*scope, (var, kind)), depth - 1))
        return f"{source}.map({var}, {body}).sum()"
    left, right = draw(_int(scope, depth - 1)), draw(_int(scope, depth - 1))
    return f"({left} / {right})" if choice == "div" else f"({left} + {right})"


@st.composite
def _bool(draw: st.DrawFn, scope: tuple[tuple[str, str], ...], depth: int) -> str:
    options = ["compare"]
    if depth > 0:
        options += ["exists", "all", "exists_one", "two_var", "or", "and"] * 2
    choice = draw(st.sampled_from(options))
    if choice == "compare":
        op = draw(st.sampled_from([">", "==", "<="]))
        return f"{draw(_int(scope, 0))} {op} {draw(_int(scope, 0))}"
    if choice in ("or", "and"):
        op = "||" if choice == "or" else "&&"
        return f"({draw(_bool(scope, depth - 1))} {op} {draw(_bool(scope, depth - 1))})"
    source, var, kind = draw(_range(scope, depth - 1))
    if choice == "two_var":
        first = draw(st.sampled_from(["i", "j"]))
        if kind == "key":  # over a map: the key, then its value
            inner = (*scope, (first, "key"), (var, "int"))
        else:  # over a list: the index, then the element
            inner = (*scope, (first, "int"), (var, kind))
        return f"{source}.all({first}, {var}, {draw(_bool(inner, depth - 1))})"
    body = draw(_bool((*scope, (var, kind)), depth - 1))
    return f"{source}.{choice}({var}, {body})"


@st.composite
def _range(draw: st.DrawFn, scope: tuple[tuple[str, str], ...], depth: int) -> tuple[str, str, str]:
    """(a range expression, its loop variable's name, the variable's kind)."""
    elems = [n for n, kind in scope if kind == "elem"]
    options = ["l", "m", "range"]
    options += (["items"] if elems else []) + (["filtered"] if depth > 0 else [])
    choice = draw(st.sampled_from(options))
    var = draw(st.sampled_from(NAMES))
    if choice == "l":
        return "s.l", var, "elem"
    if choice == "m":
        return "s.m", var, "key"
    if choice == "range":
        return f"lists.range({draw(st.integers(0, 3))})", var, "int"
    if choice == "items":
        return f"{draw(st.sampled_from(elems))}.items", var, "int"
    inner = draw(st.sampled_from(NAMES))
    condition = draw(_bool((*scope, (inner, "elem")), depth - 1))
    return f"s.l.filter({inner}, {condition})", var, "elem"


@st.composite
def _expression(draw: st.DrawFn) -> str:
    source, var, kind = draw(_range((), 2))
    body = draw(st.one_of(_int(((var, kind),), 3), _bool(((var, kind),), 3)))
    expression = f"{source}.map({var}, {body})"
    if draw(st.booleans()):
        expression = f"cel.bind(b, s.l, {expression.replace('s.l', 'b', 1)})"
    return expression


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_expression())
def test_the_split_form_matches_the_single_evaluation(expression: str) -> None:
    env = CelEnvironment(CelOptions(limits=NO_TIME), {"s": None})
    try:
        compiled = env.compile(expression)
    except CelCompileError:  # the grammar is loose about types; such draws say nothing
        return
    single = compiled.evaluate(env.bind({"s": DATA}))
    _same(single, _split_evaluation(compiled, {"s": DATA}, env))
