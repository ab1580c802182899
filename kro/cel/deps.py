"""kro.cel.deps: which variables, and which paths inside them, an expression reads.

The graph compiler builds its DAG from these pairs (upstream `pkg/cel/ast/inspector.go`):
a node depends on every resource id that appears as a root. The path says how deep the
expression reaches, e.g. `deployment.status.availableReplicas >= 1` gives
`Dependency("deployment", "status.availableReplicas")`.

Rules, all read from the checked tree (never from the source text):
- a chain of field selections, constant indexes (`data["k"]`, `items[0]`) and optional
  selections (`a.?b`, `m[?"k"]`) is one dependency on its root identifier;
- a computed index ends the path there (`containers[i].name` depends on `containers`),
  and the index expression is inspected on its own;
- comprehension variables (`map(c, ...)`, two-variable forms, `cel.bind`) are local, so
  they are never reported, even when they shadow a variable name.
"""

from __future__ import annotations

from typing import NamedTuple

from kro.cel.checked_ast import Call, Comprehension, Const, Ident, Node, Select, Tree, children

_INDEX_FUNCTIONS = frozenset({"_[_]", "_[?_]"})
_OPTIONAL_SELECT = "_?._"


class Dependency(NamedTuple):
    """One read: `root` is a declared variable, `path` the field path below it ("" = all)."""

    root: str
    path: str


def dependencies(tree: Tree) -> tuple[Dependency, ...]:
    """The distinct reads of an expression, in source order."""
    out: dict[Dependency, None] = {}
    _visit(tree.root, frozenset(), out)
    return tuple(out)


def _visit(node: Node, local: frozenset[str], out: dict[Dependency, None]) -> None:
    chain = _chain(node)
    if chain is not None:
        root, segments, extra = chain
        if root not in local:
            out[Dependency(root, _join(segments))] = None
        for sub in extra:
            _visit(sub, local, out)
        return
    kind = node.kind
    if isinstance(kind, Comprehension):
        _visit(kind.iter_range, local, out)
        _visit(kind.accu_init, local, out)
        inner = local | {v for v in (kind.iter_var, kind.iter_var2, kind.accu_var) if v}
        for sub in (kind.loop_condition, kind.loop_step, kind.result):
            _visit(sub, inner, out)
        return
    for child in children(node):
        _visit(child, local, out)


def _chain(node: Node) -> tuple[str, list[str], list[Node]] | None:
    """Follow selections and constant indexes down to an identifier, if there is one."""
    segments: list[str] = []
    extra: list[Node] = []
    current = node
    while True:
        kind = current.kind
        if isinstance(kind, Ident):
            segments.reverse()
            return kind.name, segments, extra
        if isinstance(kind, Select):
            segments.append(kind.field)
            current = kind.operand
            continue
        if isinstance(kind, Call) and kind.target is None and len(kind.args) == 2:
            base, index = kind.args
            if kind.function in _INDEX_FUNCTIONS or kind.function == _OPTIONAL_SELECT:
                segment = _constant_segment(index)
                if segment is None:
                    # A computed index: the path stops above it; the index is read separately.
                    segments.clear()
                    extra.append(index)
                else:
                    segments.append(segment)
                current = base
                continue
        # The chain starts at a call or a literal, not at a variable: the caller walks the
        # children instead, which reaches that base and every index expression.
        return None


def _constant_segment(index: Node) -> str | None:
    kind = index.kind
    if isinstance(kind, Const):
        if isinstance(kind.value, str):
            return kind.value
        if isinstance(kind.value, int) and not isinstance(kind.value, bool):
            return f"[{kind.value}]"
    return None


def _join(segments: list[str]) -> str:
    path = ""
    for segment in segments:
        if segment.startswith("[") or not path:
            path += segment
        else:
            path += "." + segment
    return path
