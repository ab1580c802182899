"""kro.graph.template.fields: find every templated field of a resource template.

A resource template is any JSON-like tree (dicts, lists, scalars). Only string *values* are
templated; map keys are always literal (C-09). The walk is iterative, in document order, so
depth is bounded by memory rather than the interpreter's recursion limit.

Public API:
    extract_fields(obj, *, base=ROOT) -> list[FieldDescriptor]
        one descriptor per string value that contains at least one `${...}`;
        raises NestedExpressionError with `field_path` set
    walk_leaves(obj, *, base=ROOT) -> Iterator[tuple[FieldPath, Any]]
        every non-container value with its path (empty dicts/lists are not leaves)
    FieldDescriptor(path, template)
        .standalone, .expressions, .text, .cel_source()  (upstream: variable.FieldDescriptor)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kro.graph.errors import TemplateError
from kro.graph.template.fieldpath import ROOT, FieldPath
from kro.graph.template.scanner import Template, parse_template


@dataclass(frozen=True, slots=True)
class FieldDescriptor:
    """One templated field: where it is and how its string splits into expressions.

    Standalone fields (`${expr}` is the whole value) are replaced by the expression's result of
    any type; string templates always produce a string (C-02, C-03).
    """

    path: FieldPath
    template: Template

    @property
    def standalone(self) -> bool:
        return self.template.is_standalone

    @property
    def expressions(self) -> tuple[str, ...]:
        return self.template.expressions

    @property
    def text(self) -> str:
        """The original string, which upstream shows in messages (`OriginalTemplate`)."""
        return self.template.text

    def cel_source(self) -> str:
        return self.template.cel_source()


def _children(node: Any, path: FieldPath) -> Iterator[tuple[FieldPath, Any]] | None:
    if isinstance(node, Mapping):
        return ((path.child(str(k)), v) for k, v in node.items())
    if isinstance(node, Sequence) and not isinstance(node, str | bytes | bytearray):
        return ((path.child(i), v) for i, v in enumerate(node))
    return None


def walk_leaves(obj: Any, *, base: FieldPath = ROOT) -> Iterator[tuple[FieldPath, Any]]:
    """Yield (path, value) for every scalar in `obj`, depth-first in document order."""
    top = _children(obj, base)
    if top is None:
        yield base, obj
        return
    stack: list[Iterator[tuple[FieldPath, Any]]] = [top]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        path, value = item
        nested = _children(value, path)
        if nested is None:
            yield path, value
        else:
            stack.append(nested)


def extract_fields(obj: Any, *, base: FieldPath = ROOT) -> list[FieldDescriptor]:
    """Every string value of `obj` holding an expression, in document order.

    `base` prefixes every path (e.g. `FieldPath(("status",))` when walking the status map).
    """
    out: list[FieldDescriptor] = []
    for path, value in walk_leaves(obj, base=base):
        if not isinstance(value, str) or "${" not in value:
            continue
        try:
            template = parse_template(value)
        except TemplateError as err:
            raise err.with_context(field_path=str(path)) from None
        if template.has_expressions:
            out.append(FieldDescriptor(path, template))
    return out
