"""kro.graph.foreach: compile a collection's `forEach` dimensions and check its identity rule
(F-01, G-19, G-20; upstream `validateAndCompileForEach`).

Each dimension `{name: "${listExpr}"}` is compiled in the resource environment *without* the
iterators: dimensions are independent (their cartesian product is taken), so one iterator may
not read another. The expression must return a list; its element type becomes the iterator's
type in the template environment, so `${item.port + 1}` is checked like any other field.

Every iterator must appear in `metadata.name` — or `metadata.namespace` for namespaced kinds —
otherwise two items would render the same object and collide at apply time (G-20, F-05).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kro.api.names import ANNOTATION_TARGET_CLUSTER
from kro.cel import CelEnvironment, CelType, CompiledExpression
from kro.graph.build_errors import DependencyGraphError, ResourceValidationError
from kro.graph.errors import TemplateError
from kro.graph.expressions import (
    OMIT_ONLY_IN_TEMPLATES,
    ExpressionProblem,
    compile_checked,
    go_list,
)
from kro.graph.model import ForEachDimension, TemplateField
from kro.graph.template import parse_standalone

_IDENTITY_FIELDS = ("name", "namespace")


@dataclass(frozen=True, slots=True)
class CompiledForEach:
    """The dimensions in declaration order and each iterator's type (None: `dyn`)."""

    dimensions: tuple[ForEachDimension, ...]
    iterator_types: Mapping[str, CelType | None]


def _invalid(detail: str, rule: str, resource_id: str, rgd: str, **fields: Any) -> Exception:
    return ResourceValidationError(
        f'node "{resource_id}": {detail}', rule=rule, rgd=rgd, resource_id=resource_id, **fields
    )


def _problem(
    problem: ExpressionProblem, name: str, names: Sequence[str], resource_id: str, rgd: str
) -> Exception:
    where = {"field_path": f"forEach.{name}", "expression": problem.expression}
    others = [n for n in problem.names if n in names and n != name]
    if others:
        return _invalid(
            f'forEach iterator "{name}" cannot reference other iterators {go_list(others)} - '
            "forEach iterators are independent (cartesian product)",
            "G-19",
            resource_id,
            rgd,
            **where,
        )
    if problem.kind == "compile":
        return _invalid(
            f'forEach iterator "{name}": failed to type-check expression '
            f'"{problem.expression}": {problem.detail}',
            "G-19",
            resource_id,
            rgd,
            **where,
        )
    return DependencyGraphError(
        f'node "{resource_id}": forEach iterator "{name}": {problem.detail}',
        rule="G-13",
        rgd=rgd,
        resource_id=resource_id,
        **where,
    )


def _element_type(output: CelType) -> CelType | str | None:
    """The iterator's type, None for `dyn`, or the offending type name if not a list."""
    if output.kind == "dyn":
        return None
    if output.kind != "list":
        return output.cel_name
    element = output.params[0] if output.params else None
    return None if element is None or element.kind == "dyn" else element


def _compile_dimension(
    name: str,
    raw: Any,
    env: CelEnvironment,
    names: Sequence[str],
    *,
    resource_id: str,
    allowed: frozenset[str],
    rgd: str,
) -> CompiledExpression:
    where: dict[str, Any] = {"field_path": f"forEach.{name}"}
    try:
        expression = parse_standalone(raw) if isinstance(raw, str) else None
    except TemplateError as err:
        detail = f'forEach iterator "{name}": {err}'
        raise _invalid(detail, "C-07", resource_id, rgd, expression=raw, **where) from err
    if expression is None:
        detail = f'forEach iterator "{name}": only standalone expressions are allowed'
        raise _invalid(detail, "C-07", resource_id, rgd, **where)
    where["expression"] = expression
    try:
        compiled = compile_checked(env, expression, allowed=allowed)
    except ExpressionProblem as problem:
        raise _problem(problem, name, names, resource_id, rgd) from problem
    if resource_id in compiled.roots:
        raise DependencyGraphError(
            f'resource "{resource_id}": self references are not allowed',
            rule="G-14",
            rgd=rgd,
            resource_id=resource_id,
            **where,
        )
    if compiled.uses_omit:
        detail = f'forEach iterator "{name}": {OMIT_ONLY_IN_TEMPLATES}'
        raise _invalid(detail, "C-31", resource_id, rgd, **where)
    return compiled


def compile_for_each(
    dimensions: Sequence[tuple[str, Any]],
    env: CelEnvironment,
    *,
    resource_id: str,
    allowed: frozenset[str],
    rgd: str,
) -> CompiledForEach:
    """G-19: every dimension is a standalone list expression reading no other iterator."""
    names = [name for name, _ in dimensions]
    compiled_dims: list[ForEachDimension] = []
    types: dict[str, CelType | None] = {}
    for name, raw in dimensions:
        compiled = _compile_dimension(
            name, raw, env, names, resource_id=resource_id, allowed=allowed, rgd=rgd
        )
        element = _element_type(compiled.output_type)
        if isinstance(element, str):
            raise _invalid(
                f'forEach iterator "{name}" must return a list, got "{element}"',
                "G-19",
                resource_id,
                rgd,
                field_path=f"forEach.{name}",
                expression=compiled.expression,
            )
        types[name] = element
        compiled_dims.append(ForEachDimension(name, compiled, element))
    return CompiledForEach(tuple(compiled_dims), types)


_TARGET_PATH: Final = ("metadata", "annotations", ANNOTATION_TARGET_CLUSTER)


def check_identity(
    fields: Sequence[TemplateField],
    iterators: Sequence[str],
    *,
    namespaced: bool,
    resource_id: str,
    rgd: str,
) -> None:
    """G-20: every iterator reaches `metadata.name` (or the namespace of a namespaced kind), or
    the target cluster (M-11: the same name in every member fanned out to is one object each)."""
    used: set[str] = set()
    for field in fields:
        segments = field.path.segments
        if segments == _TARGET_PATH:
            used.update(*(e.roots for e in field.expressions))
            continue
        if len(segments) != 2 or segments[0] != "metadata" or segments[1] not in _IDENTITY_FIELDS:
            continue
        if segments[1] == "namespace" and not namespaced:
            continue
        for expression in field.expressions:
            used |= expression.roots
    missing = [name for name in iterators if name not in used]
    if missing:
        raise _invalid(
            "all forEach dimensions must be used to produce a unique resource identity, "
            f"missing: {go_list(missing)}",
            "G-20",
            resource_id,
            rgd,
            field_path="metadata.name",
        )
