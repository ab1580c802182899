"""kro.graph.expressions: compile one expression in its context and say precisely why it fails.

Every expression of an RGD is compiled in a typed environment (G-18) and may read only what its
context allows: templates read `schema`, other resources and their own iterators; readyWhen
reads only its own resource (or `each`); status reads resources and `schema`; only conditions
may call `runtime.*` (C-15). Upstream reports names that are not available with its
inspector's wording (`references unknown identifiers: [x]`, `uses unknown functions: [f]`,
G-13) rather than with the type checker's, so this module turns the engine's "undeclared
reference" diagnostics into those lists, and applies the per-context allow-list to what a
successful compile reads.

`ExpressionProblem` is internal currency: the caller knows the resource and the context and
turns it into the stage's error class with upstream's prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from kro.cel import CelCompileError, CelEnvironment, CompiledExpression, UnsupportedFunctionError

ProblemKind = Literal["unknown_identifiers", "unknown_functions", "runtime", "compile"]

RUNTIME: Final = "runtime"
RUNTIME_ONLY_IN_CONDITIONS: Final = "runtime is only available in status.conditions expressions"
OMIT_ONLY_IN_TEMPLATES: Final = "omit() can only be used in resource template expressions"
_UNDECLARED: Final = re.compile(r"<input>:(\d+):(\d+): undeclared reference to '([^']+)'")
_NEW_CONDITION_PREFIX: Final = "runtime.newCondition"


class ExpressionProblem(Exception):
    """Why an expression cannot be used here; `detail` is upstream's wording."""

    def __init__(
        self, kind: ProblemKind, detail: str, *, expression: str, names: tuple[str, ...] = ()
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.expression = expression
        self.names = names


def go_list(names: Iterable[str]) -> str:
    """Go's `%v` of a []string: `[a b]`."""
    return "[" + " ".join(names) + "]"


@dataclass(frozen=True, slots=True)
class _Undeclared:
    identifiers: tuple[str, ...]
    functions: tuple[str, ...]


def _offset(expression: str, line: int, column: int) -> int:
    lines = expression.split("\n")
    return sum(len(text) + 1 for text in lines[: line - 1]) + column - 1


def _undeclared(expression: str, message: str) -> _Undeclared:
    """Read the checker's "undeclared reference" errors: a name reported at a `(` is a call."""
    identifiers: dict[str, int] = {}
    functions: dict[str, None] = {}
    for match in _UNDECLARED.finditer(message):
        offset = _offset(expression, int(match.group(1)), int(match.group(2)))
        name = match.group(3)
        if expression[offset : offset + 1] == "(":
            functions[name] = None
        else:
            identifiers.setdefault(name.split(".")[0], offset)
    for root, offset in list(identifiers.items()):
        # `math.greatest(1, 2)`: the "unknown identifier" is the namespace of a function.
        call = re.match(rf"{re.escape(root)}\s*\.\s*([A-Za-z_]\w*)\s*\(", expression[offset:])
        if call and call.group(1) in functions:
            del identifiers[root]
            del functions[call.group(1)]
            functions[f"{root}.{call.group(1)}"] = None
    return _Undeclared(tuple(identifiers), tuple(functions))


def _unknown(expression: str, identifiers: tuple[str, ...]) -> ExpressionProblem:
    if RUNTIME in identifiers:
        return ExpressionProblem(
            "runtime",
            f"references unknown identifiers: {go_list(identifiers)}",
            expression=expression,
            names=identifiers,
        )
    return ExpressionProblem(
        "unknown_identifiers",
        f"references unknown identifiers: {go_list(identifiers)}",
        expression=expression,
        names=identifiers,
    )


def uses_runtime(compiled: CompiledExpression) -> bool:
    """True if the expression calls `runtime.newCondition` or `runtime.condition`."""
    return any(function.startswith(RUNTIME + ".") for function in compiled.functions)


def compile_checked(
    env: CelEnvironment,
    expression: str,
    *,
    allowed: frozenset[str] | None = None,
    runtime_allowed: bool = False,
) -> CompiledExpression:
    """Compile `expression` in `env`; it may read only `allowed` roots (None: any declared).

    Raises ExpressionProblem: unknown identifiers (undeclared, or declared but not allowed
    here), unknown functions, `runtime.*` outside conditions, or any other compile error.
    """
    try:
        compiled = env.compile(expression)
    except UnsupportedFunctionError as err:
        raise ExpressionProblem("compile", err.message, expression=expression) from None
    except CelCompileError as err:
        undeclared = _undeclared(expression, err.message)
        if undeclared.identifiers:
            raise _unknown(expression, undeclared.identifiers) from None
        if undeclared.functions:
            raise ExpressionProblem(
                "unknown_functions",
                f"uses unknown functions: {go_list(undeclared.functions)}",
                expression=expression,
                names=undeclared.functions,
            ) from None
        if not runtime_allowed and err.message.startswith(_NEW_CONDITION_PREFIX):
            raise _unknown(expression, (RUNTIME,)) from None
        raise ExpressionProblem("compile", err.message, expression=expression) from None
    if allowed is not None:
        extra = tuple(sorted(compiled.roots - allowed, key=expression.find))
        if extra:
            raise _unknown(expression, extra)
    if not runtime_allowed and uses_runtime(compiled):
        raise _unknown(expression, (RUNTIME,))
    return compiled
