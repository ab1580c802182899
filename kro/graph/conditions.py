"""kro.graph.conditions: the author-defined status conditions block (K-01..K-03, C-32, C-33;
upstream `pkg/graph/conditions.go`, `buildConditions`).

`spec.schema.status.conditions` is a list of standalone expressions, each returning
`runtime.newCondition({...})`, a list of them, or `dyn`. They are the only expressions that may
use `runtime`. What can be decided at build time is decided here, so a broken block never
reaches an instance:

* K-01 the result type; K-03 a literal `type` declared by two different entries (one entry may
  repeat a type, e.g. in both branches of a ternary), literal `status`/empty `type` (checked by
  kro.cel while compiling the `newCondition` literal);
* C-33 `runtime.condition(schema, "X")` reads kro's built-in conditions only: reading an author
  type would make conditions depend on each other in an order nobody declared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kro.api.names import INSTANCE_BUILTIN_CONDITIONS
from kro.cel import CelEnvironment, CompiledExpression
from kro.graph.build_errors import ConditionsError
from kro.graph.environment import SCHEMA_VARIABLE
from kro.graph.expressions import OMIT_ONLY_IN_TEMPLATES, ExpressionProblem, compile_checked

CONDITION_TYPE: Final = "kro.run.Condition"
_RESULT_TYPES: Final = frozenset({CONDITION_TYPE, f"list({CONDITION_TYPE})", "dyn", "list(dyn)"})
CROSS_REFERENCE: Final = "custom conditions cannot reference each other"
UNKNOWN_TYPE: Final = (
    "unknown condition type; only kro's built-in types "
    f"({', '.join(INSTANCE_BUILTIN_CONDITIONS)}) can be read from schema"
)


def _error(detail: str, rule: str, rgd: str, index: int, expression: str) -> ConditionsError:
    path = f"status.conditions[{index}]"
    return ConditionsError(
        f"{path}: {detail}", rule=rule, rgd=rgd, field_path=path, expression=expression
    )


def _compile(
    env: CelEnvironment, expression: str, index: int, readable: frozenset[str], rgd: str
) -> CompiledExpression:
    try:
        compiled = compile_checked(env, expression, allowed=readable, runtime_allowed=True)
    except ExpressionProblem as problem:
        rule = "K-02" if problem.kind != "compile" else "K-01"
        raise _error(problem.detail, rule, rgd, index, expression) from problem
    if compiled.uses_omit:
        raise _error(OMIT_ONLY_IN_TEMPLATES, "C-31", rgd, index, expression)
    output = compiled.output_type.cel_name
    if output not in _RESULT_TYPES:
        raise _error(
            "condition expressions must return runtime.newCondition(...) or a list of them, "
            f'got "{output}"',
            "K-01",
            rgd,
            index,
            expression,
        )
    return compiled


def _check_literal_types(compiled: Sequence[CompiledExpression], rgd: str) -> frozenset[str]:
    """K-03: each literal type belongs to one entry; returns every author-declared type."""
    owner: dict[str, int] = {}
    for index, expression in enumerate(compiled):
        for condition in expression.new_conditions:
            if condition.type is None:
                continue
            first = owner.setdefault(condition.type, index)
            if first != index:
                raise _error(
                    f'condition type "{condition.type}" is declared by more than one '
                    "conditions entry",
                    "K-03",
                    rgd,
                    index,
                    expression.expression,
                )
    return frozenset(owner)


def _check_reads(
    compiled: Sequence[CompiledExpression], author_types: frozenset[str], rgd: str
) -> None:
    """C-33: `runtime.condition(schema, X)` may only read kro's built-in types."""
    for index, expression in enumerate(compiled):
        for read in expression.condition_reads:
            if read.root != SCHEMA_VARIABLE or read.type is None:
                continue
            if read.type in INSTANCE_BUILTIN_CONDITIONS:
                continue
            detail = CROSS_REFERENCE if read.type in author_types else UNKNOWN_TYPE
            raise _error(detail, "C-33", rgd, index, expression.expression)


def compile_conditions(
    expressions: Sequence[str],
    env: CelEnvironment,
    *,
    resource_ids: frozenset[str],
    rgd: str,
) -> tuple[CompiledExpression, ...]:
    """Compile and check the author-conditions block, in declaration order."""
    readable = resource_ids | {SCHEMA_VARIABLE}
    compiled = [_compile(env, e, i, readable, rgd) for i, e in enumerate(expressions)]
    author_types = _check_literal_types(compiled, rgd)
    _check_reads(compiled, author_types, rgd)
    return tuple(compiled)
