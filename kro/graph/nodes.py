"""kro.graph.nodes: compile one parsed resource into a `Node` (G-13, G-14, G-19..G-24, G-28,
C-15, C-31).

Each context gets the environment and allow-list upstream gives it:

| context     | environment                           | may read                                |
|-------------|---------------------------------------|-----------------------------------------|
| template    | resources + `schema` + own iterators  | `schema`, other resources, iterators    |
| forEach     | resources + `schema`                  | `schema`, other resources               |
| includeWhen | resources + `schema`                  | `schema`, other resources               |
| readyWhen   | same; lists add `each` (one item)     | own id; collections and selector refs   |
|             |                                       | only `each` (N-33, compatibility.md)    |

Dependencies are the resource ids read by template, forEach and includeWhen expressions, never
readyWhen (G-14); reading oneself is an error. Template fields are classified static / dynamic /
iteration (G-28) so evaluation can cache what does not change between items.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kro.cel import CelCompileError, CelEnvironment, CelType, CompiledExpression
from kro.graph.build_errors import DependencyGraphError, ResourceValidationError
from kro.graph.environment import EACH_VARIABLE, SCHEMA_VARIABLE
from kro.graph.errors import TemplateError
from kro.graph.expressions import (
    OMIT_ONLY_IN_TEMPLATES,
    RUNTIME_ONLY_IN_CONDITIONS,
    ExpressionProblem,
    compile_checked,
)
from kro.graph.foreach import check_identity, compile_for_each
from kro.graph.model import Node, TemplateField, VariableKind
from kro.graph.plural import resource_plural
from kro.graph.resources import ParsedResource
from kro.graph.template import parse_standalone
from kro.graph.templatecheck import TypedField
from kro.graph.typecheck import (
    expected_type_name,
    incompatibility,
    is_string_like,
    type_mismatch_message,
)

_BOOL_TYPES: Final = frozenset({"bool", "optional_type(bool)", "dyn"})
OMIT_ON_IDENTITY: Final = (
    'omit() cannot be used at path "{path}" — the field is required and must resolve to a '
    "concrete value"
)


@dataclass(frozen=True, slots=True)
class NodeContext:
    """What every node of one RGD is compiled against."""

    rgd: str
    base: CelEnvironment
    index_of: Mapping[str, int]
    instance_namespaced: bool
    resource_ids: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource_ids", frozenset(self.index_of))


def _validation(detail: str, rule: str, rid: str, ctx: NodeContext, **fields: Any) -> Exception:
    return ResourceValidationError(detail, rule=rule, rgd=ctx.rgd, resource_id=rid, **fields)


def _self_reference(rid: str, ctx: NodeContext, expression: str) -> Exception:
    return DependencyGraphError(
        f'resource "{rid}": self references are not allowed',
        rule="G-14",
        rgd=ctx.rgd,
        resource_id=rid,
        expression=expression,
    )


def _standalone(raw: Any, where: str, rid: str, ctx: NodeContext) -> str:
    """C-07: readyWhen/includeWhen entries are exactly one `${...}`."""
    try:
        if isinstance(raw, str):
            return parse_standalone(raw)
        detail = "only standalone expressions are allowed"
    except TemplateError as err:
        detail = str(err)
    raise _validation(f'resource "{rid}" {where}: {detail}', "C-07", rid, ctx, field_path=where)


# --- template fields ---------------------------------------------------------------------------


def _field_problem(problem: ExpressionProblem, rid: str, path: str, ctx: NodeContext) -> Exception:
    where = {"field_path": path, "expression": problem.expression}
    if problem.kind == "runtime":
        return _validation(RUNTIME_ONLY_IN_CONDITIONS, "C-15", rid, ctx, **where)
    if problem.kind == "compile":
        return _validation(
            f'failed to type-check template expression "{problem.expression}" at path '
            f'"{path}": {problem.detail}',
            "G-21",
            rid,
            ctx,
            **where,
        )
    return DependencyGraphError(
        f'resource "{rid}" at path "{path}": {problem.detail}',
        rule="G-13",
        rgd=ctx.rgd,
        resource_id=rid,
        **where,
    )


def _check_omit(typed: TypedField, parsed: ParsedResource, ctx: NodeContext, expr: str) -> None:
    path = str(typed.path)
    where = {"field_path": path, "expression": expr}
    if not typed.descriptor.standalone:
        raise _validation(OMIT_ONLY_IN_TEMPLATES, "C-31", parsed.id, ctx, **where)
    identity = path == "metadata.name" or (
        path == "metadata.namespace" and parsed.resolved.namespaced and not ctx.instance_namespaced
    )
    if identity:
        raise _validation(OMIT_ON_IDENTITY.format(path=path), "C-31", parsed.id, ctx, **where)


def _check_field_type(
    typed: TypedField,
    compiled: CompiledExpression,
    env: CelEnvironment,
    rid: str,
    ctx: NodeContext,
    *,
    path: str,
) -> None:
    where = {"field_path": path, "expression": compiled.expression}
    output = compiled.output_type
    if typed.descriptor.standalone:
        reason = incompatibility(output, typed.schema)
        if reason is None:
            return
        expected = expected_type_name(typed.schema, f"__type_{rid}.{path}")
    elif is_string_like(output):
        return
    else:
        try:  # upstream compiles string templates as one concatenation (C-03)
            env.compile(typed.descriptor.cel_source())
        except CelCompileError as err:
            raise _validation(
                f'failed to type-check template expression "{typed.descriptor.text}" at path '
                f'"{path}": {err.message}',
                "C-03",
                rid,
                ctx,
                **where,
            ) from None
        reason, expected = None, "string"
    message = type_mismatch_message(
        resource_id=rid,
        path=path,
        expression=compiled.expression,
        output=output.cel_name,
        expected=expected,
        reason=reason,
    )
    raise _validation(message, "G-21", rid, ctx, **where)


def _kind(roots: frozenset[str], iterators: frozenset[str], ids: frozenset[str]) -> VariableKind:
    if roots & iterators:
        return "iteration"
    return "dynamic" if roots & ids else "static"


def compile_field(
    typed: TypedField,
    parsed: ParsedResource,
    env: CelEnvironment,
    iterators: frozenset[str],
    ctx: NodeContext,
    *,
    allowed: frozenset[str] | None = None,
) -> TemplateField:
    """Compile, scope-check and type-check one templated value of a resource; `allowed` is
    what it may read (default: every resource, `schema` and `iterators`)."""
    rid, path = parsed.id, str(typed.path)
    if allowed is None:
        allowed = ctx.resource_ids | iterators | {SCHEMA_VARIABLE}
    compiled_parts: list[CompiledExpression] = []
    roots: frozenset[str] = frozenset()
    for source in typed.descriptor.expressions:
        try:
            compiled = compile_checked(env, source, allowed=allowed)
        except ExpressionProblem as problem:
            raise _field_problem(problem, rid, path, ctx) from problem
        if rid in compiled.roots:
            raise _self_reference(rid, ctx, source)
        if compiled.uses_omit:
            _check_omit(typed, parsed, ctx, source)
        _check_field_type(typed, compiled, env, rid, ctx, path=path)
        compiled_parts.append(compiled)
        roots |= compiled.roots
    return TemplateField(
        path=typed.path,
        standalone=typed.descriptor.standalone,
        text=typed.descriptor.text,
        expressions=tuple(compiled_parts),
        kind=_kind(roots, iterators, ctx.resource_ids),
    )


# --- includeWhen / readyWhen -------------------------------------------------------------------


def _compile_condition(
    expression: str,
    env: CelEnvironment,
    allowed: frozenset[str],
    scope_env: Callable[[], CelEnvironment] | None,
) -> CompiledExpression:
    """Compile in `env`; on a compile error retry where only the allowed names exist.

    readyWhen sees only its own object upstream, so `${other.x}` there is an unknown
    identifier, not a type error on a variable this environment happens to declare. The
    narrow environment costs a schema translation, so it is built on the error path only.
    """
    try:
        return compile_checked(env, expression, allowed=allowed)
    except ExpressionProblem as problem:
        if problem.kind != "compile" or scope_env is None:
            raise
        try:
            compile_checked(scope_env(), expression, allowed=allowed)
        except ExpressionProblem as narrow:
            if narrow.kind != "compile":
                raise narrow from problem
        raise


def _condition(
    raw: Any,
    where: str,
    *,
    env: CelEnvironment,
    allowed: frozenset[str],
    rid: str,
    ctx: NodeContext,
    scope_env: Callable[[], CelEnvironment] | None = None,
) -> CompiledExpression:
    """One includeWhen/readyWhen entry: standalone, in scope, no omit(), returns bool."""
    name = where.split("[", maxsplit=1)[0]
    rule = "G-23" if name == "includeWhen" else "G-24"
    expression = _standalone(raw, where, rid, ctx)
    fields = {"field_path": where, "expression": expression}
    try:
        compiled = _compile_condition(expression, env, allowed, scope_env)
    except ExpressionProblem as problem:
        if problem.kind == "compile":
            raise _validation(
                f'failed to type-check {name} expression "{expression}": {problem.detail}',
                rule,
                rid,
                ctx,
                **fields,
            ) from problem
        detail = f'resource "{rid}" {name}: {problem.detail}'
        if name == "readyWhen":
            raise _validation(detail, rule, rid, ctx, **fields) from problem
        raise DependencyGraphError(
            detail, rule="G-13", rgd=ctx.rgd, resource_id=rid, **fields
        ) from problem
    if name == "includeWhen" and rid in compiled.roots:
        raise _self_reference(rid, ctx, expression)
    if compiled.uses_omit:
        raise _validation(OMIT_ONLY_IN_TEMPLATES, "C-31", rid, ctx, **fields)
    output = compiled.output_type.cel_name
    if output not in _BOOL_TYPES:
        raise _validation(
            f'{name} expression "{expression}" in resource "{rid}" must return bool or '
            f'optional_type(bool), but returns "{output}"',
            rule,
            rid,
            ctx,
            **fields,
        )
    return compiled


def _ready_scope_env(parsed: ParsedResource, ctx: NodeContext) -> CelEnvironment:
    """readyWhen's own environment: the object as `<id>`, or one item as `each` (lists)."""
    name = EACH_VARIABLE if parsed.type.is_list else parsed.id
    return CelEnvironment(ctx.base.options, {name: parsed.resolved.schema})


def _item_type(ctx: NodeContext, rid: str) -> CelType:
    declared = ctx.base.variables[rid]
    return declared.params[0] if declared.kind == "list" and declared.params else declared


def _dependencies(ids: set[str], ctx: NodeContext) -> tuple[str, ...]:
    return tuple(sorted(ids, key=lambda d: (ctx.index_of[d], d)))


def compile_node(parsed: ParsedResource, ctx: NodeContext) -> Node:
    """Compile every expression of one resource in its context (see the module table)."""
    rid = parsed.id
    readable = ctx.resource_ids | {SCHEMA_VARIABLE}
    for_each = compile_for_each(
        parsed.input.for_each, ctx.base, resource_id=rid, allowed=readable, rgd=ctx.rgd
    )
    extra: dict[str, CelType | None] = dict(for_each.iterator_types)
    if parsed.type.is_list and parsed.input.ready_when:
        extra[EACH_VARIABLE] = _item_type(ctx, rid)
    env = ctx.base.extend(extra) if extra else ctx.base
    iterators = frozenset(for_each.iterator_types)
    allowed = readable | iterators
    fields = [compile_field(t, parsed, env, iterators, ctx, allowed=allowed) for t in parsed.fields]
    if for_each.dimensions and not parsed.type.is_value:  # a value has no identity
        check_identity(
            fields,
            [d.name for d in for_each.dimensions],
            namespaced=parsed.resolved.namespaced,
            resource_id=rid,
            rgd=ctx.rgd,
        )
    include_when = [
        _condition(raw, f"includeWhen[{i}]", env=ctx.base, allowed=readable, rid=rid, ctx=ctx)
        for i, raw in enumerate(parsed.input.include_when)
    ]
    ready_scope = frozenset({EACH_VARIABLE} if parsed.type.is_list else {rid})
    ready_when = [
        _condition(
            raw,
            f"readyWhen[{i}]",
            env=env,
            allowed=ready_scope,
            rid=rid,
            ctx=ctx,
            scope_env=lambda: _ready_scope_env(parsed, ctx),
        )
        for i, raw in enumerate(parsed.input.ready_when)
    ]
    return Node(
        id=rid,
        index=parsed.index,
        type=parsed.type,
        gvk=parsed.gvk,
        resource=parsed.resolved.resource or resource_plural(parsed.gvk.kind),
        namespaced=parsed.resolved.namespaced,
        template=parsed.template,
        fields=tuple(fields),
        include_when=tuple(include_when),
        ready_when=tuple(ready_when),
        for_each=for_each.dimensions,
        dependencies=_dependencies(_read_ids(fields, for_each.dimensions, include_when, ctx), ctx),
        schema=parsed.resolved.schema,
        deletion_policy=parsed.input.deletion_policy,
    )


def _read_ids(
    fields: Sequence[TemplateField],
    dimensions: Sequence[Any],
    include_when: Sequence[CompiledExpression],
    ctx: NodeContext,
) -> set[str]:
    expressions = [e for f in fields for e in f.expressions]
    expressions += [d.expression for d in dimensions] + list(include_when)
    return {root for e in expressions for root in e.roots if root in ctx.index_of}
