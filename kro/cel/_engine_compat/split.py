"""_engine_compat.split: an expression evaluated again, each inner loop in an evaluation of
its own, after the engine's iteration cap stopped it.

cel-expr-python 0.1.3 stops an evaluation after 10,000 comprehension iterations in total and
cannot be told otherwise; upstream (cel-go) sets no cap. Nested loops reach it with modest
data (a `filter` with an `exists` over the same 150 items runs 22,500 iterations), so an
expression that hits it is evaluated once more in split form, where no single engine
evaluation runs more than one loop's iterations:

- every expression `loop_scopes` moves (an inner loop, or the nearest expression around it
  that can cross) is replaced by `kro.@nested(k, [positions])`, whose Python
  implementation evaluates program `k` (that expression, with the loops inside it moved in
  turn) against the same engine Activation (the engine allows re-entering it from a
  callback, and the bound objects it already converted are shared) and hands the result
  back. Its variables from the loops around it are re-derived in that evaluation from the
  positions (`kro.@var(i)`): the outer range evaluated again and indexed;
- a one-variable loop whose position is needed gets a position variable (it becomes a
  two-variable loop, which iterates the same elements in the same order);
- a moved expression's error reaches the enclosing evaluation at the same place, standing
  for the original text (an exception raised in a callback becomes an error value with a
  status prefix of its own), and is restored when it is the result, so the outcome is
  classified exactly as the single evaluation's would be.

Everything else is unchanged: the budget hooks are already in the program (`instrument`),
so time, memory and the CEL cost limit count the same iterations with the same costs.
The split form is built on first need and kept with the compiled expression; expressions
that never hit the cap never pay for it. Where nothing can move, or a value turns out at run
time not to convert exactly, the original "iteration cap" error stands.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from cel_expr_python import cel

from kro.cel._engine_compat.ast_decode import decode
from kro.cel._engine_compat.checked_types import checked_facts
from kro.cel._engine_compat.error_text import ENGINE_FAILURES, classify
from kro.cel._engine_compat.loop_scopes import Analysis, analyze, source
from kro.cel._engine_compat.rewrite import (
    COMPREHENSION,
    ITER_RANGE,
    ITER_VAR,
    ITER_VAR2,
    LOOP_CONDITION,
    LOOP_STEP,
    STRUCT,
    Ids,
    bind,
    call,
    const_int,
    expr_of,
    ident,
    list_of,
    max_id,
    replace_root,
    root_expr,
    transform,
)
from kro.cel._engine_compat.wire import LENGTH_DELIMITED, Field, encode_fields, read_fields
from kro.cel.opaque import MESSAGE_CLASSES
from kro.cel.results import EvalResult, ExpressionError

NESTED: Final = "kro.@nested"
VAR: Final = "kro.@var"
_INDEX, _EQ, _TERNARY = "_[_]", "_==_", "_?_:_"
_ERROR: Final = cel.Type.ERROR
_TOKEN: Final = "kro.@nested error "
_CROSSING: Final[tuple[type, ...]] = (
    bool, int, float, str, bytes, bytearray, *MESSAGE_CLASSES.values(),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Inner:
    program: Any
    check: bool  # the result type says dyn: look at each value before it crosses
    node: int  # the moved expression's node id


@dataclass(frozen=True, slots=True)
class SplitProgram:
    """The split form: the main program and the programs of the moved expressions."""

    main: Any
    inner: tuple[_Inner, ...]


class Unavailable:
    """The split form could not stand in (nothing can move, or a value cannot cross)."""

    __slots__ = ()


UNAVAILABLE: Final = Unavailable()


class Splitter:
    """The split form of one program, built on first need (None: nothing can move).

    It keeps only the engine program, whose serialized form it reads back when needed:
    most programs never hit the cap, and compiled expressions are cached by the thousand.
    An expression whose `dyn` result once could not cross exactly (it held a map) is pinned:
    the form is built again with it left in place, the loops inside it still moved.
    """

    __slots__ = ("_built", "_eval_env", "_main", "_pinned", "needed")

    def __init__(self, main: Any, eval_env: Any) -> None:
        self._main = main
        self._eval_env = eval_env
        self._pinned: frozenset[int] = frozenset()
        self._built: SplitProgram | Unavailable | None = None  # None: not built yet
        self.needed = False
        """The cap stopped an evaluation of this program and the split form stood in: later
        evaluations (the next reconcile, over data of about the same size) start with the
        split form instead of running into the cap first."""

    def get(self) -> SplitProgram | None:
        found = self._built
        if found is None:  # two threads may both build it; either result is the same
            found = self._built = self._build(self._pinned) or UNAVAILABLE
        return None if isinstance(found, Unavailable) else found

    def moves_loops(self) -> bool:
        """True if the split form, pins aside, evaluates some loop on its own (diagnostics)."""
        return self._build(frozenset()) is not None

    def pin(self, node_id: int) -> None:
        """Leave the expression `node_id` in place from now on."""
        self._pinned |= {node_id}
        self._built = None

    def _build(self, pinned: frozenset[int]) -> SplitProgram | None:
        try:
            return build(self._main.serialize(), self._eval_env, pinned)
        except (RecursionError, *ENGINE_FAILURES):  # nests deeper than the engine reads
            return None


def build(
    program: bytes, eval_env: Any, pinned: frozenset[int] = frozenset()
) -> SplitProgram | None:
    """The split form of `program` (a serialized, instrumented CheckedExpr), or None."""
    analysis = analyze(decode(program), checked_facts(program, {}).types, pinned)
    if not analysis.moved:
        return None
    builder = _Builder(analysis, Ids(max_id(root_expr(program))))
    main = replace_root(program, lambda expr: transform(expr, builder.hook))
    inner = []
    for node_id in builder.order:
        serialized = replace_root(program, _constant(builder.program_expr(node_id)))
        inner.append(
            _Inner(eval_env.deserialize(serialized), node_id in analysis.checked_results, node_id)
        )
    return SplitProgram(eval_env.deserialize(main), tuple(inner))


@dataclass(slots=True)
class _Builder:
    """One post-order pass over the program: moved expressions become `kro.@nested` calls
    (their rewritten bytes kept as the bodies of their programs), loops whose position is
    needed get a position variable, and the ranges and initialisers to re-derive from are
    kept."""

    analysis: Analysis
    ids: Ids
    bodies: dict[int, bytes] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    sources: dict[int, bytes] = field(default_factory=dict)
    _wanted: set[int] = field(default_factory=set)
    _rewritten: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._rewritten = self.analysis.rewritten()
        for needs in self.analysis.moved.values():
            for loop_id, roles in needs.roles.items():
                loop = self.analysis.loops[loop_id]
                for role in roles:
                    node = source(loop, self.analysis.modes.get(loop_id), role)
                    if node is not None:
                        self._wanted.add(node.id)

    def hook(self, node_id: int, kind: int, payload: bytes) -> bytes | None:
        if node_id in self._wanted:  # loop-free: the pass leaves it as it is
            self.sources[node_id] = expr_of(node_id, kind, payload)
        expr = None
        if node_id in self._rewritten:  # a loop
            expr = self._with_position(node_id, payload)
        if node_id in self.analysis.moved:
            self.bodies[node_id] = expr or expr_of(node_id, kind, payload)
            self.order.append(node_id)
            atoms = [ident(self.ids, self.analysis.atom(n)) for n in self._positions(node_id)]
            index = const_int(self.ids, len(self.order) - 1)
            return call(self.ids, NESTED, [index, list_of(self.ids, atoms)])
        return expr

    def _positions(self, node_id: int) -> list[int]:
        """The loops whose positions a moved expression receives, outermost first."""
        roles = self.analysis.moved[node_id].roles
        loops = self.analysis.loops
        return sorted((n for n in roles if not loops[n].is_bind), key=lambda n: loops[n].depth)

    def _with_position(self, loop_id: int, payload: bytes) -> bytes:
        """A one-variable loop as a two-variable one whose first variable is the position.
        Over a list the element keeps its name; over a `dyn` range both get fresh names and
        the original variable is bound in the condition and step to the key (a map) or the
        element (a list), the range being bound once around the loop to look at its type."""
        loop = self.analysis.loops[loop_id].kind
        atom = self.analysis.atom(loop_id)
        if self.analysis.modes[loop_id] == "list":
            return expr_of(
                loop_id,
                COMPREHENSION,
                _set_fields(payload, {ITER_VAR: atom.encode(), ITER_VAR2: loop.iter_var.encode()}),
            )
        ids = self.ids
        range_var, value_var = f"@kro_r{loop_id}", f"@kro_v{loop_id}"

        def pick() -> bytes:
            return _by_range_type(ids, range_var, ident(ids, atom), ident(ids, value_var))

        fields = {n: v for n, _, v in read_fields(payload) if isinstance(v, bytes)}
        condition = bind(ids, loop.iter_var, pick(), fields[LOOP_CONDITION])
        step = bind(ids, loop.iter_var, pick(), fields[LOOP_STEP])
        changed = {
            ITER_VAR: atom.encode(),
            ITER_VAR2: value_var.encode(),
            ITER_RANGE: ident(ids, range_var),
            LOOP_CONDITION: condition,
            LOOP_STEP: step,
        }
        body = expr_of(loop_id, COMPREHENSION, _set_fields(payload, changed))
        return bind(ids, range_var, fields[ITER_RANGE], body)

    def program_expr(self, node_id: int) -> bytes:
        """A moved expression's program: the variables it reads from the loops around it
        bound, outermost first, then the expression."""
        ids = self.ids
        analysis = self.analysis
        needs = analysis.moved[node_id].roles
        positions = self._positions(node_id)
        steps: list[tuple[str, bytes]] = []
        for outer_id in sorted(needs, key=lambda n: analysis.loops[n].depth):
            outer = analysis.loops[outer_id]
            roles = needs[outer_id]
            if outer.is_bind:
                steps.append((outer.kind.accu_var, self.sources[outer.kind.accu_init.id]))
                continue
            atom = analysis.atom(outer_id)
            steps.append((atom, call(ids, VAR, [const_int(ids, positions.index(outer_id))])))
            mode = analysis.modes[outer_id]
            loop_range = outer.kind.iter_range.id
            if mode == "two_var" and "iter2" in roles:
                element = call(ids, _INDEX, [self.sources[loop_range], ident(ids, atom)])
                steps.append((outer.kind.iter_var2, element))
            elif mode == "list" and "iter" in roles:
                element = call(ids, _INDEX, [self.sources[loop_range], ident(ids, atom)])
                steps.append((outer.kind.iter_var, element))
            elif mode == "dyn" and "iter" in roles:
                range_var = f"@kro_r{outer_id}"
                steps.append((range_var, self.sources[loop_range]))
                element = call(ids, _INDEX, [ident(ids, range_var), ident(ids, atom)])
                picked = _by_range_type(ids, range_var, ident(ids, atom), element)
                steps.append((outer.kind.iter_var, picked))
        expr = self.bodies[node_id]
        for name, init in reversed(steps):
            expr = bind(ids, name, init, expr)
        return expr


def _constant(expr: bytes) -> Callable[[bytes], bytes]:
    return lambda _: expr


def _by_range_type(ids: Ids, range_var: str, if_map: bytes, if_list: bytes) -> bytes:
    """`type(range) == type({}) ? if_map : if_list` (not `== map`: a bound variable of
    that name would be read instead of the type)."""
    map_type = call(ids, "type", [expr_of(ids.next(), STRUCT, b"")])
    is_map = call(ids, _EQ, [call(ids, "type", [ident(ids, range_var)]), map_type])
    return call(ids, _TERNARY, [is_map, if_map, if_list])


def _set_fields(payload: bytes, changed: dict[int, bytes]) -> bytes:
    """A message with the length-delimited fields in `changed` set (added when absent)."""
    out: list[Field] = []
    for number, wire, value in read_fields(payload):
        if number not in changed:
            out.append((number, wire, value))
    out += [(number, LENGTH_DELIMITED, value) for number, value in changed.items()]
    return encode_fields(out)


# ------------------------------------------------------------------------- evaluating


class Refused(Exception):
    """The split form cannot stand in for the single evaluation: the result of the moved
    expression `node` (its node id, None if unknown) could not cross exactly."""

    def __init__(self, node: int | None = None) -> None:
        super().__init__(node)
        self.node = node


@dataclass(slots=True)
class _Run:
    """One split evaluation: what the callbacks of this thread evaluate against."""

    split: SplitProgram
    activation: Any
    positions: list[list[Any]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    refused: Refused | None = None

    def stand_in(self, text: str) -> str:
        """The message standing for engine error `text` in the enclosing evaluation."""
        _, _, message = text.partition(": ")
        if message in self.errors:
            return message
        token = f"{_TOKEN}{len(self.errors)}"
        self.errors[token] = text
        return token


_local: Final = threading.local()


def run_split(
    split: SplitProgram,
    activation: Any,
    expression: str,
    run: Callable[[Any], EvalResult | None],
) -> EvalResult | None:
    """Evaluate the split form with `run` (the adapter's one evaluation of a program, None
    meaning as there); raises Refused if it cannot stand in for the single evaluation."""
    current = _Run(split, activation)
    previous = getattr(_local, "run", None)
    _local.run = current
    try:
        outcome = run(split.main)
    finally:
        _local.run = previous
    if current.refused is not None:
        raise current.refused
    if isinstance(outcome, ExpressionError) and outcome.message in current.errors:
        return classify(expression, current.errors[outcome.message])
    return outcome


def _nested(index: int, positions: list[Any]) -> Any:
    current: _Run | None = getattr(_local, "run", None)
    if current is None:  # only split programs call this, always inside run_split
        raise RuntimeError("kro: a split program ran outside its evaluation")
    inner = current.split.inner[index]
    current.positions.append(positions)
    try:
        result = inner.program.eval(current.activation)
    except ENGINE_FAILURES as err:
        raise RuntimeError(current.stand_in(str(err))) from None
    finally:
        current.positions.pop()
    if result.type() == _ERROR:
        raise RuntimeError(current.stand_in(str(result.plain_value())))
    try:
        value = result.plain_value()
        if inner.check:
            _check_crossing(value)
    except (Refused, SystemError, RuntimeError, TypeError):
        current.refused = Refused(inner.node)
        raise RuntimeError("kro: a value cannot cross between split evaluations") from None
    return value


def _var(index: int) -> Any:
    current: _Run | None = getattr(_local, "run", None)
    if current is None or not current.positions:
        raise RuntimeError("kro: a split program ran outside its evaluation")
    return current.positions[-1][index]


def _check_crossing(value: Any) -> None:  # raises Refused
    """Refuse a value of a `dyn` result that would not come back exactly: a map (its
    iteration order changes), a timestamp or duration (nanoseconds), a type."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif not (item is None or isinstance(item, _CROSSING)):
            raise Refused


def extension() -> Any:
    """The callbacks of split programs, for the evaluation environment only."""
    t = cel.Type
    return cel.CelExtension(
        "kro-split",
        [
            cel.FunctionDecl(
                NESTED,
                [cel.Overload("kro_nested", t("dyn"), [t("int"), t("list<dyn>")], impl=_nested)],
            ),
            cel.FunctionDecl(VAR, [cel.Overload("kro_var", t("dyn"), [t("int")], impl=_var)]),
        ],
    )
