"""_engine_compat.program: from a checked expression to what the evaluation environment runs, and
one run of it.

The checked tree becomes the program through rewrites of its serialized form (`rewrite`):
`lowering` gives it the semantics the engine's runtime cannot see (escaped property names,
equality of quantities, semvers and list-type fields, the zero of an empty `sum()`,
transformMap's map built in one step, optionals kept away from Python); `optionals`
unwraps the optionals a result holds; `instrument` plants the budget hooks. `engine` owns
the environments and the budget and calls `build` once per compile and `run` per
evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cel_expr_python import cel

from kro.cel._engine_compat import instrument, lowering, optionals
from kro.cel._engine_compat.ast_decode import decode
from kro.cel._engine_compat.checked_types import contains
from kro.cel._engine_compat.error_text import ENGINE_FAILURES, classify
from kro.cel._engine_compat.rewrite import Ids, max_id, replace_root, root_expr
from kro.cel._engine_compat.split import Splitter
from kro.cel.checked_ast import Tree
from kro.cel.errors import CelCompileError
from kro.cel.results import EvalResult, Value
from kro.cel.types import CelType

UNCONVERTIBLE: Final = (
    "the result holds a value the engine cannot hand over (an optional inside an optional); "
    "use orValue() or [?x] / {?k: v}"
)
TOO_DEEP: Final = (
    "the expression nests optionals in too many lists and maps for kro-py to unwrap them "
    "(the rewritten program exceeds the engine's nesting limit); unwrap them earlier with "
    "orValue() or [?x] / {?k: v}"
)
_ERROR: Final = cel.Type.ERROR


@dataclass(frozen=True, slots=True)
class Toolkit:
    """What building needs from the engine adapter (which owns these objects)."""

    eval_env: Any
    fragments: optionals.Fragments
    python_functions: frozenset[str]


class NestedOptionals:
    """The program that unwraps optionals anywhere in a result (`optionals.unwrapped`),
    built from the lowered program on first need: most results never hold one."""

    __slots__ = ("_depth", "_lowered", "_program", "_toolkit")

    def __init__(self, lowered: bytes, depth: int, toolkit: Toolkit) -> None:
        self._lowered = lowered
        self._depth = depth
        self._toolkit = toolkit
        self._program: Any = None

    def program(self) -> Any:
        """The engine program, or None if it nests deeper than the engine reads."""
        if self._program is None:
            try:
                wrapped = _unwrapping(self._lowered, self._depth, self._toolkit.fragments)
                self._program = self._toolkit.eval_env.deserialize(_instrumented(wrapped))
            except (optionals.TooDeep, RecursionError, RuntimeError):
                self._program = False
        return self._program or None


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled expression's runnable form.

    main: the engine program.
    as_list: `main` returns an optional result as `[value]` / `[]`.
    check_nested: the result may hide optionals in a `dyn` list or map (look before
        converting it, see `run`).
    nested: the fallback that unwraps them.
    loops_or_calls: the program loops or calls Python: it runs under a budget.
    split: `main` with its inner loops in evaluations of their own, for when the engine's
        iteration cap stops it (`split`).
    """

    main: Any
    as_list: bool
    check_nested: bool
    nested: NestedOptionals
    loops_or_calls: bool
    split: Splitter


def build(
    serialized: bytes,
    tree: Tree,
    *,
    expression: str,
    functions: frozenset[str],
    output_type: CelType,
    messages: Mapping[str, Mapping[str, Any]],
    list_types: bool,
    toolkit: Toolkit,
    count_cost: bool = False,
) -> Program:
    """The program for a checked expression; raises CelCompileError if a rewrite would nest
    it deeper than the engine reads. `count_cost`: charge the author's loops their CEL cost
    (there is a cost limit)."""
    creates_optionals = optionals.creates_optionals(functions)
    depths = optionals.container_depths(tree) if creates_optionals else {}
    levels = depths.get(tree.root.id, 0)
    try:
        lowered = lowering.lower(
            serialized,
            tree,
            functions=functions,
            messages=messages,
            python_functions=toolkit.python_functions,
            fragments=toolkit.fragments,
            list_types=list_types,
            creates_optionals=creates_optionals,
            depths=depths,
        )
        program, as_list = lowered, False
        if any(contains(p, "optional") for p in output_type.params):
            program = _unwrapping(lowered, levels, toolkit.fragments)
        elif output_type.kind == "optional":
            program, as_list = _replaced(lowered, optionals.as_list, toolkit.fragments), True
        # The author's loops are charged here; the rerun that unwraps nested optionals
        # (NestedOptionals) is not charged again.
        program = _instrumented(
            program, tree if program is serialized else None, source=tree if count_cost else None
        )
        main = toolkit.eval_env.deserialize(program)
    except (optionals.TooDeep, RecursionError, RuntimeError):
        raise CelCompileError(expression=expression, message=TOO_DEEP) from None
    return Program(
        main=main,
        as_list=as_list,
        # With no list or map built around an optional (`levels` 0), no map can hold one.
        check_nested=creates_optionals and levels > 0 and contains(output_type, "dyn"),
        nested=NestedOptionals(lowered, levels, toolkit),
        loops_or_calls=(
            program is not lowered
            or lowered is not serialized
            or not functions.isdisjoint(toolkit.python_functions)
        ),
        split=Splitter(main, toolkit.eval_env),
    )


def run(
    program: Any, activation: Any, expression: str, *, string_result: bool, check: bool
) -> EvalResult | None:
    """One evaluation of `program` against an engine Activation; None if the result holds
    an optional, which cannot cross into Python (`check`: look for one first, as converting
    a map that holds one crashes the process)."""
    try:
        result = program.eval(activation)
    except ENGINE_FAILURES as err:  # a library function returned an unusable value, or
        return classify(expression, str(err))  # a C++ exception inside the engine
    if check and _holds_optional(result):
        return None
    # An error comes back as a value whose plain form is its message (a str). Asking for
    # the type costs a third of an evaluation, so only string-typed results pay for it.
    try:
        value = result.plain_value()
    except (SystemError, RuntimeError, TypeError):
        return None
    if isinstance(value, str) and (not string_result or result.type() == _ERROR):
        return classify(expression, value)
    return Value(value)


def _holds_optional(result: Any) -> bool:
    """True if an optional occurs inside a list or map of `result`, found without converting
    it: the engine gives each element's type, and an optional's is ERROR (an error value
    cannot be an element)."""
    stack = [result]
    while stack:
        item = stack.pop()
        name = item.type().name()
        if name.startswith("LIST"):
            elements = item.value()
        elif name.startswith("MAP"):
            elements = list(item.value().values())
        else:
            continue
        for element in elements:
            if element.type() == _ERROR:
                return True
            stack.append(element)
    return False


Wrap = Callable[[Ids, optionals.Fragments, bytes], bytes]


def _replaced(serialized: bytes, wrap: Wrap, fragments: optionals.Fragments) -> bytes:
    """`serialized` with its expression `e` replaced by `wrap(ids, fragments, e)`."""
    ids = Ids(max_id(root_expr(serialized)))
    return replace_root(serialized, lambda expr: wrap(ids, fragments, expr))


def _unwrapping(serialized: bytes, depth: int, fragments: optionals.Fragments) -> bytes:
    """The program whose result has every optional unwrapped, `depth` levels down."""

    def wrap(ids: Ids, frags: optionals.Fragments, expr: bytes) -> bytes:
        return optionals.unwrapped(ids, frags, expr, depth)

    return _replaced(serialized, wrap, fragments)


def _instrumented(program: bytes, tree: Tree | None = None, *, source: Tree | None = None) -> bytes:
    """`program` with the budget hooks, if it loops (`tree`: its decoded form, if known;
    `source`: the expression as written, whose loops are charged their CEL cost; None: no
    cost is counted)."""
    program_tree = decode(program) if tree is None else tree
    if not instrument.needs_instrumenting(program_tree):
        return program
    costs = None if source is None else instrument.iteration_costs(source)
    return instrument.instrument(program, program_tree, costs)
