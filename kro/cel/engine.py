"""kro.cel.engine: the one adapter over cel-expr-python. Nothing else imports the engine
for evaluation.

Two kinds of engine environment, one library set (docs/design in cel-engine.md):

- a *check* environment per set of declarations: variables typed from OpenAPI schemas
  through synthetic protobuf descriptors (`types`, translated once by `declarations`),
  library functions typed precisely (`library`). Compiling there parses, type-checks and
  yields the checked tree, from which we read the output type and dependencies once. Every
  `CelEnvironment` declaring the same set shares that environment and its compiled
  expressions (`_CheckSet`), and an `extend()`ed one reuses its parent's for expressions that
  do not name the added variables: building the checker is the costly step (milliseconds),
  compiling the cheap one (tens of microseconds);
- one process-wide *evaluation* environment: no variable declarations, runtime library
  implementations only. Checked expressions are deserialized into it, so every compiled
  expression, whatever environment checked it, runs against the same kind of `Activation`
  — built once per reconcile and shared by all expressions (binding a large object is the
  expensive part; each evaluation after that is a few microseconds).

Evaluation returns `Value | DataPending | ExpressionError` (see `results`) and never
raises for data problems.

Between checking and evaluating, the checked tree is rewritten into the program that runs
(`program`: semantics the engine's runtime lacks, optionals in results, budget hooks).

Every evaluation that can cost more than a few microseconds (it has a comprehension, calls
`lists.range` or one of kro's functions) runs under a `budget` (`EvaluationLimits`, from
`CelOptions.limits`): its checked tree is rewritten once, at compile time, to call budget
hooks in every loop (`instrument`), and the bound variables it reads are converted before
the budget starts, so a large observed object is never charged to the expression that
happens to read it first.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cel_expr_python import cel

from kro.cel import (
    budget,
    lib_conditions,
    lib_hash,
    lib_ip,
    lib_json,
    lib_kro_lists,
    lib_lists,
    lib_maps,
    lib_omit,
    lib_quantity,
    lib_random,
    lib_regex,
    lib_semver,
    lib_url,
    runtime_cost,
)
from kro.cel._engine_compat import (
    instrument,
    lib_comprehensions,
    lowering,
    optionals,
    split,
    syntax,
)
from kro.cel._engine_compat.ast_decode import decode
from kro.cel._engine_compat.error_text import (
    ENGINE_FAILURES,
    ITERATION_LIMIT_MESSAGE,
    compile_error,
)
from kro.cel._engine_compat.program import (
    TOO_DEEP,
    UNCONVERTIBLE,
    Program,
    Toolkit,
    build,
    run,
)
from kro.cel.budget import BUDGET_EXCEEDED
from kro.cel.checked_ast import Call, Ident, Tree, walk
from kro.cel.convert import to_json_value
from kro.cel.declarations import Declaration, declaration_of
from kro.cel.deps import Dependency, dependencies
from kro.cel.errors import CelConversionError
from kro.cel.lib_conditions import ConditionRead, NewCondition
from kro.cel.library import Overload, check_extension, config_functions, runtime_extension
from kro.cel.limits import DEFAULT_LIMITS, MIB, EvaluationLimits, cost_limit_message
from kro.cel.memory import return_free_memory
from kro.cel.opaque import LIBRARY_POOL, new_pool
from kro.cel.results import LIMIT_CODE, EvalResult, ExpressionError, Value
from kro.cel.types import CelType, parse_engine_type

# cel-go's BaseDeclarations() minus what kro adds itself (C-18). Not enabled upstream, so
# not here either: math, sets, regex (cel-cpp's regex.* is not k8s's find/findAll), protos.
ENGINE_EXTENSIONS: Final = (
    "optional",
    "strings",
    "lists",
    "encoders",
    "bindings",
    "two-var-comprehensions",
)
# An Activation whose evaluations grew resident memory by more than this returns what its
# arena held to the OS when it goes (a few milliseconds; most Activations grow by far less).
_RELEASE_ON_DELETE_BYTES: Final = 16 * MIB
_EVAL_EXTENSIONS: Final = tuple(n for n in ENGINE_EXTENSIONS if n != "two-var-comprehensions")
LIBRARY_OVERLOADS: Final[tuple[Overload, ...]] = (
    *lib_random.OVERLOADS,
    *lib_hash.OVERLOADS,
    *lib_json.OVERLOADS,
    *lib_maps.OVERLOADS,
    *lib_kro_lists.OVERLOADS,
    *lib_omit.OVERLOADS,
    *lib_conditions.OVERLOADS,
    *lib_lists.OVERLOADS,
    *lib_regex.OVERLOADS,
    *lib_url.OVERLOADS,
    *lib_quantity.OVERLOADS,
    *lib_ip.OVERLOADS,
    *lib_semver.OVERLOADS,
)
# Functions only the evaluation environment has: the engine's missing runtime helper of
# transformMap (the checker declares it) and the targets of kro's rewrites.
RUNTIME_OVERLOADS: Final[tuple[Overload, ...]] = (
    *lib_comprehensions.RUNTIME_OVERLOADS,
    *lowering.RUNTIME_OVERLOADS,
    *optionals.RUNTIME_OVERLOADS,
)
# Functions implemented in Python: an expression calling one runs under a budget, and an
# argument that may hold an optional is guarded (`lowering`).
_PYTHON_FUNCTIONS: Final = frozenset(o.function for o in (*LIBRARY_OVERLOADS, *RUNTIME_OVERLOADS))


def _config(*, checking: bool) -> Any:
    """The engine config: the extensions, and for checking environments the generic library
    functions (type parameters only bind when declared here, see `library`).

    The evaluation environment leaves out the two-variable comprehensions: programs arrive
    expanded, and that extension's declaration of `cel.@mapInsert` would collide with the
    implementation registered there (`lib_comprehensions`).
    """
    names = ENGINE_EXTENSIONS if checking else _EVAL_EXTENSIONS
    document: dict[str, Any] = {"extensions": [{"name": n} for n in names]}
    if checking:
        document["functions"] = config_functions(LIBRARY_OVERLOADS)
    return cel.NewEnvConfigFromYaml(json.dumps(document))  # YAML is a superset of JSON


class _Engine:
    """Process-wide engine state: the evaluation environment and the shared extensions."""

    _lock = threading.Lock()
    _instance: _Engine | None = None

    def __init__(self) -> None:
        self.check_extension = check_extension("kro-check", LIBRARY_OVERLOADS)
        self.config = _config(checking=True)
        # Parses only (no variables): the same syntax and macros as every check environment.
        self.parse_env = cel.NewEnv(
            LIBRARY_POOL, config=self.config, extensions=[self.check_extension]
        )
        self.eval_env = cel.NewEnv(
            LIBRARY_POOL,
            config=_config(checking=False),
            extensions=[
                runtime_extension("kro-runtime", (*LIBRARY_OVERLOADS, *RUNTIME_OVERLOADS)),
                instrument.extension(),
                split.extension(),
            ],
        )
        self.toolkit = Toolkit(
            eval_env=self.eval_env,
            fragments=optionals.Fragments(self.parse),
            python_functions=_PYTHON_FUNCTIONS,
        )
        self._touch: dict[str, Any] = {}

    def parse(self, source: str) -> bytes:
        """A serialized parsed (unchecked) expression: kro's own program fragments."""
        serialized: bytes = self.parse_env.compile(source, disable_check=True).serialize()
        return serialized

    def touch_program(self, name: str) -> Any:
        """`type(name)`: evaluating it makes the engine convert the bound value of `name`."""
        program = self._touch.get(name)
        if program is None:
            program = self._touch[name] = self.eval_env.compile(f"type({name})", disable_check=True)
        return program

    @classmethod
    def get(cls) -> _Engine:
        if cls._instance is None:
            with cls._lock:
                if cls._instance is None:
                    cls._instance = _Engine()
        return cls._instance


@dataclass(frozen=True, kw_only=True, slots=True)
class CelOptions:
    """Per-environment switches.

    omit_function: the CELOmitFunction feature gate (default off, like upstream). When off,
    `omit()` is a compile error; when on, the graph compiler decides where it may appear.
    limits: what one evaluation of an expression compiled here may cost (time, memory,
    value sizes); see `kro.cel.limits`. Upstream has no such limits.
    """

    omit_function: bool = False
    limits: EvaluationLimits = DEFAULT_LIMITS


class Activation:
    """The variables of one evaluation context (normally: one reconcile of one instance).

    Build it once and evaluate every expression against it: the engine converts each bound
    object lazily on first use and keeps the result for later evaluations.
    """

    __slots__ = ("_converted", "_engine_activation", "_memory", "values")

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)
        self._engine_activation: Any = None
        self._converted: set[str] = set()
        self._memory = budget.MemoryAccount()

    @property
    def _engine(self) -> Any:
        """The engine's Activation (built on first use, again after `release`)."""
        found = self._engine_activation
        if found is None:
            found = self._engine_activation = _Engine.get().eval_env.Activation(self.values)
        return found

    def release(self) -> None:
        """Free the engine's arena now and hand the memory back to the OS.

        Called after an evaluation went over its budget, whose garbage (up to a budget's
        worth) sits in the engine's arena. The engine frees an arena only with its
        Activation, and this object may live on (a reconcile keeps it for its other
        expressions; a reference cycle keeps it until a full collection, rare in the
        controller). Freeing is not enough either: malloc keeps the memory resident, the
        next evaluation reuses it unseen by the budget (which watches resident memory) and
        grows a budget beyond it, so each retry of a hostile instance would raise the
        process by another budget. The next evaluation here converts the bound values again.
        """
        self._engine_activation = None
        self._converted = set()
        self._memory = budget.MemoryAccount()
        return_free_memory()

    def __del__(self) -> None:
        # Evaluations that grew the process by much left that much free in malloc when the
        # arena goes with this object: return it, so the next evaluation's growth is real.
        memory = getattr(self, "_memory", None)  # None if __init__ failed early
        if memory is not None and memory.carried > _RELEASE_ON_DELETE_BYTES:
            self._engine_activation = None
            return_free_memory()

    def prepare(self, names: frozenset[str]) -> None:
        """Have the engine convert the bound values of `names` now, outside any budget.

        Conversion of a large object (a 1000-item collection takes a few hundred
        milliseconds) is the cost of the data, not of the expression that reads it first.
        """
        if names <= self._converted:
            return
        engine = _Engine.get()
        for name in names - self._converted:
            if name in self.values:
                with contextlib.suppress(*ENGINE_FAILURES):  # the evaluation reports it
                    engine.touch_program(name).eval(self._engine)
            self._converted.add(name)


def bind(values: Mapping[str, Any]) -> Activation:
    """An Activation of raw values (no schema-aware conversion, as upstream's readyWhen)."""
    return Activation(values)


@dataclass(frozen=True, slots=True, eq=False)
class CompiledExpression:
    """A checked expression, ready to evaluate any number of times.

    expression: the source as written (without `${}`).
    output_type: the checked result type (`.cel_name`, `.to_openapi()`).
    dependencies: (root, path) reads, comprehension variables excluded.
    roots: the variables it reads (upstream's "references"), from `dependencies`.
    functions: names of every function and operator called (`random.seededString`, `_+_`).
    uses_omit: calls `omit()` (only legal in resource templates, C-31).
    new_conditions / condition_reads: `runtime.newCondition` / `runtime.condition` calls.
    limits: the evaluation budget, or None for expressions that cannot run long (no
    comprehension, no kro function): they skip the bookkeeping.
    fixed_cost: CEL runtime cost of one evaluation without comprehension iterations
    (`runtime_cost`), charged against the cost limit before anything runs.
    """

    expression: str
    output_type: CelType
    dependencies: tuple[Dependency, ...]
    functions: frozenset[str]
    uses_omit: bool
    new_conditions: tuple[NewCondition, ...]
    condition_reads: tuple[ConditionRead, ...]
    _program: Program = field(repr=False)
    _string_result: bool = field(repr=False)
    _checked: bytes = field(default=b"", repr=False)
    limits: EvaluationLimits | None = field(default=None, repr=False)
    _limits_for_unwrapping: EvaluationLimits = field(default=DEFAULT_LIMITS, repr=False)
    fixed_cost: int = field(default=0, repr=False)
    roots: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roots", frozenset(d.root for d in self.dependencies))

    def checked_tree(self) -> Tree:
        """The checked expression tree as written (before budget instrumentation)."""
        return decode(self._checked)

    def evaluate(self, activation: Activation) -> EvalResult:
        """Evaluate to a CEL-native Python value (timestamps are datetimes, bytes bytes)."""
        cost_limit = self._limits_for_unwrapping.cost_limit
        if cost_limit is not None and self.fixed_cost > cost_limit:
            message = cost_limit_message(cost_limit, self.fixed_cost)
            return ExpressionError(
                expression=self.expression, message=f"{BUDGET_EXCEEDED}: {message}", code=LIMIT_CODE
            )
        if self.limits is None:  # no loop: the iteration cap cannot stop it
            return self._evaluate(activation)
        activation.prepare(self.roots)
        previous = budget.begin(self.limits, activation._memory, self.fixed_cost)
        try:
            splitter = self._program.split
            if splitter.needed:  # the cap stopped an earlier evaluation: skip that attempt
                retried = self._evaluate_split(activation)
                if not isinstance(retried, split.Unavailable):
                    return self._finish(retried, activation)
            outcome = self._evaluate(activation)
            if type(outcome) is ExpressionError and outcome.message == ITERATION_LIMIT_MESSAGE:
                retried = self._evaluate_split(activation)
                if not isinstance(retried, split.Unavailable):
                    splitter.needed = True
                    return self._finish(retried, activation)
            return outcome
        finally:
            if budget.end(previous):
                activation.release()

    def _evaluate(self, activation: Activation) -> EvalResult:
        program = self._program
        outcome = run(
            program.main,
            activation._engine,
            self.expression,
            string_result=self._string_result,
            check=program.check_nested,
        )
        if outcome is None:  # an optional somewhere inside a dyn result
            return self._evaluate_unwrapping(activation)
        if program.as_list and isinstance(outcome, Value):
            return Value(outcome.value[0] if outcome.value else None)
        return outcome

    def _finish(self, outcome: EvalResult | None, activation: Activation) -> EvalResult:
        """`_evaluate`'s last steps, for an outcome of the split form."""
        if outcome is None:
            return self._evaluate_unwrapping(activation)
        if self._program.as_list and isinstance(outcome, Value):
            return Value(outcome.value[0] if outcome.value else None)
        return outcome

    def _run(self, program: Any, activation: Activation) -> EvalResult | None:
        return run(
            program,
            activation._engine,
            self.expression,
            string_result=self._string_result,
            check=self._program.check_nested,
        )

    def _evaluate_split(self, activation: Activation) -> EvalResult | split.Unavailable | None:
        """The evaluation in split form (`split`): upstream has no iteration cap, and the
        engine's stopped this expression. Runs under the same budget: the time and memory an
        attempt before used stay spent, its CEL cost units are given back (the split form
        counts the same iterations again). UNAVAILABLE if nothing can move or a value cannot
        cross between the evaluations exactly."""
        splitter = self._program.split
        while (split_program := splitter.get()) is not None:
            budget.rewind_cost(self.fixed_cost)
            try:
                return split.run_split(
                    split_program,
                    activation._engine,
                    self.expression,
                    lambda program: self._run(program, activation),
                )
            except split.Refused as refused:
                if refused.node is None:
                    break
                splitter.pin(refused.node)
        return split.UNAVAILABLE

    def _evaluate_unwrapping(self, activation: Activation) -> EvalResult:
        """Run the program that unwraps nested optionals (it rebuilds the whole result, so
        it only runs once the plain program's result turned out to need it)."""
        unwrapping = self._program.nested.program()
        if unwrapping is None:
            return ExpressionError(expression=self.expression, message=TOO_DEEP)
        previous = None
        if self.limits is None:  # not yet inside a budget: the walk loops
            activation.prepare(self.roots)
            previous = budget.begin(self._limits_for_unwrapping, activation._memory)
        try:
            outcome = run(
                unwrapping, activation._engine, self.expression, string_result=True, check=True
            )
        finally:
            if self.limits is None and budget.end(previous):
                activation.release()
        return outcome or ExpressionError(expression=self.expression, message=UNCONVERTIBLE)

    def evaluate_json(self, activation: Activation) -> EvalResult:
        """Evaluate and convert to a JSON value storable in an object (C-35)."""
        result = self.evaluate(activation)
        if not isinstance(result, Value):
            return result
        try:
            return Value(to_json_value(result.value))
        except CelConversionError as err:
            return ExpressionError(expression=self.expression, message=str(err))


# Result kinds whose successful plain value can be a str (dyn and opaque included).
_MAY_BE_STRING: Final = frozenset({"string", "dyn", "opaque", "object", "error", "type"})


def evaluate(compiled: CompiledExpression, activation: Activation) -> EvalResult:
    return compiled.evaluate(activation)


class _CheckSet:
    """Variables over a set of descriptor files: the engine environment that checks against
    them (built on the first compile that needs it; 1-4 ms, most of it converting the
    variables' message types) and every expression compiled in it. Shared by every
    `CelEnvironment` with the same variables and files, across graph builds of this process
    (the RGD controller and the GraphRevision controller each build every spec)."""

    __slots__ = ("_env", "_list_types", "_messages", "_universe", "compiled", "files", "variables")

    def __init__(
        self,
        variables: Mapping[str, Declaration],
        files: tuple[bytes, ...],
        universe: Iterable[Declaration],
    ) -> None:
        self.variables = variables
        self.files = files
        self.compiled: dict[tuple[CelOptions, str], CompiledExpression] = {}
        self._universe = tuple(universe)
        self._env: Any = None
        self._messages: dict[str, Mapping[str, Any]] = {}
        self._list_types: bool | None = None

    def env(self) -> Any:
        if self._env is None:
            self._messages = {
                k: v
                for m in {id(d.messages): d.messages for d in self._universe}.values()
                for k, v in m.items()
            }
            self._env = cel.NewEnv(
                _pool(self.files),
                config=_Engine.get().config,
                extensions=[_Engine.get().check_extension],
                variables={n: d.engine_type for n, d in self.variables.items()},
            )
        return self._env

    @property
    def messages(self) -> Mapping[str, Mapping[str, Any]]:
        self.env()
        return self._messages

    @property
    def has_list_types(self) -> bool:
        """True if some declared object has a `list-type: set` or `map` field (C-34)."""
        if self._list_types is None:
            self._list_types = any(
                _is_set_or_map_list(sub)
                for schema in self.messages.values()
                for sub in (schema.get("properties") or {}).values()
            )
        return self._list_types

    def remember(self, key: tuple[CelOptions, str], compiled: CompiledExpression) -> None:
        if len(self.compiled) >= _COMPILED_PER_SET:
            self.compiled.clear()
        self.compiled[key] = compiled


def _is_set_or_map_list(schema: Any) -> bool:
    return isinstance(schema, Mapping) and schema.get("x-kubernetes-list-type") in ("set", "map")


_CHECK_SETS_SIZE: Final = 8
_COMPILED_PER_SET: Final = 8192
_SetKey = tuple[tuple[bytes, ...], tuple[tuple[str, Declaration], ...]]
_check_sets: OrderedDict[_SetKey, _CheckSet] = OrderedDict()
_check_sets_lock: Final = threading.Lock()


def _check_set(
    variables: Mapping[str, Declaration], universe: Mapping[str, Declaration]
) -> _CheckSet:
    """The shared check set declaring `variables` over the descriptor files (and message
    names) of every declaration in `universe` (declarations compare by identity)."""
    files = _files(universe)
    key = (files, tuple(sorted(variables.items(), key=_by_name)))
    with _check_sets_lock:
        found = _check_sets.get(key)
        if found is not None:
            _check_sets.move_to_end(key)
            return found
        found = _CheckSet(dict(variables), files, universe.values())
        _check_sets[key] = found
        if len(_check_sets) > _CHECK_SETS_SIZE:
            _check_sets.popitem(last=False)
        return found


def _by_name(item: tuple[str, Declaration]) -> str:
    return item[0]


def _files(declarations: Mapping[str, Declaration]) -> tuple[bytes, ...]:
    return tuple(sorted({d.proto_file for d in declarations.values() if d.proto_file}))


_POOLS_SIZE: Final = 8
_pools: OrderedDict[tuple[bytes, ...], Any] = OrderedDict()


def _pool(files: tuple[bytes, ...]) -> Any:
    """A descriptor pool of these files (about a millisecond with a large kind), shared by
    check environments over the same files: a graph's environment and its extensions."""
    with _check_sets_lock:
        found = _pools.get(files)
        if found is not None:
            _pools.move_to_end(files)
            return found
    found = new_pool(*files)
    with _check_sets_lock:
        _pools[files] = found
        if len(_pools) > _POOLS_SIZE:
            _pools.popitem(last=False)
    return found


class CelEnvironment:
    """Declared variables plus kro's libraries: the context expressions are compiled in.

    Environments that declare the same variables (the same translations) share one engine
    check environment and one compile cache, so declaring, extending and rebuilding a graph
    cost nothing once a set has been seen. Declare every variable first, then compile.
    """

    def __init__(
        self,
        options: CelOptions | None = None,
        declarations: Mapping[str, Mapping[str, Any] | CelType | None] | None = None,
    ) -> None:
        self.options = options or CelOptions()
        self._declarations: dict[str, Declaration] = {}
        self._set: _CheckSet | None = None
        # extend(): a pattern matching the names this one adds or redeclares, and the
        # parent's set. An expression naming none of them checks identically in the parent
        # (given the same descriptor files); one naming them is checked with only the
        # variables it names (`_narrowed_set`).
        self._added: re.Pattern[str] | None = None
        self._parent: _CheckSet | None = None
        self._narrowed: dict[str, _CheckSet] = {}
        for name, schema in (declarations or {}).items():
            self.declare(name, schema)

    # ----------------------------------------------------------------- declarations

    def declare(self, name: str, schema: Mapping[str, Any] | CelType | None = None) -> CelType:
        """Declare a variable from an OpenAPI v3 schema, a CelType, or None (`dyn`)."""
        declaration = declaration_of(name, schema)
        self._declarations[name] = declaration
        self._set = None
        self._added = self._parent = None
        self._narrowed = {}
        return declaration.cel_type

    def extend(
        self, declarations: Mapping[str, Mapping[str, Any] | CelType | None]
    ) -> CelEnvironment:
        """A new environment with this one's variables plus (or overriding) `declarations`."""
        child = CelEnvironment(self.options)
        child._declarations = dict(self._declarations)
        for name, schema in declarations.items():
            child.declare(name, schema)
        changed = [n for n, d in child._declarations.items() if self._declarations.get(n) is not d]
        if changed:
            names = "|".join(re.escape(n) for n in changed)
            child._added = re.compile(rf"(?<![\w.])(?:{names})(?!\w)")
            if _files(child._declarations) == _files(self._declarations):
                child._parent = self._check_set()
        return child

    @property
    def variables(self) -> Mapping[str, CelType]:
        return {name: d.cel_type for name, d in self._declarations.items()}

    def _check_set(self) -> _CheckSet:
        if self._set is None:
            self._set = _check_set(self._declarations, self._declarations)
        return self._set

    def _target(self, expression: str) -> _CheckSet:
        """Where `expression` is checked; every choice gives the result the full set would."""
        if self._added is None:
            return self._check_set()
        if self._added.search(expression) is None:
            return self._parent or self._check_set()
        found = self._narrowed.get(expression)
        if found is None:
            found = self._narrowed[expression] = self._narrowed_set(expression)
        return found

    def _narrowed_set(self, expression: str) -> _CheckSet:
        """A set declaring only the variables `expression` names, over all the files.

        The checker resolves an identifier to a variable or, failing that, to a type name in
        the descriptor files; a variable the expression never names cannot change anything.
        Leaving the others out spares converting their message types (milliseconds for a
        graph's worth of kinds, against well under one for an iterator and `schema`).
        """
        names = _identifiers(expression)
        if names is None:  # does not parse: the full set reports it
            return self._check_set()
        variables = {n: d for n, d in self._declarations.items() if n in names}
        return _check_set(variables, self._declarations)

    # --------------------------------------------------------------------- compile

    def compile(self, expression: str) -> CompiledExpression:
        """Parse, type-check and prepare the program; raises CelCompileError."""
        target = self._target(expression)
        key = (self.options, expression)
        cached = target.compiled.get(key)
        if cached is None:
            cached = _compile(target, expression, self.options)
            target.remember(key, cached)
        return cached

    # ------------------------------------------------------------------------ bind

    def bind(self, values: Mapping[str, Any]) -> Activation:
        """An Activation with schema-aware input conversion for declared variables (C-34)."""
        return Activation(self._convert(values))

    def bind_each(
        self, shared: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]
    ) -> Iterator[Activation]:
        """One Activation per row of a forEach: `shared` (the values of every node, the same
        for each row) converted once, and only each row's own iterator values per row.
        Converting everything per row made a pass over N rows that reads an N-item list
        convert N x N items."""
        common = self._convert(shared)
        for row in rows:
            yield Activation({**common, **self._convert(row)})

    def _convert(self, values: Mapping[str, Any]) -> dict[str, Any]:
        converted: dict[str, Any] = {}
        for name, value in values.items():
            declaration = self._declarations.get(name)
            converted[name] = value if declaration is None else declaration.converter.convert(value)
        return converted


def _compile(target: _CheckSet, expression: str, options: CelOptions) -> CompiledExpression:
    syntax.check(expression)
    env = target.env()
    source, new_conditions = expression, tuple[NewCondition, ...]()
    if "newCondition" in expression:
        parse = _engine_compile(env, expression, parse_only=True)
        parsed = decode(parse.serialize(), with_positions=True)
        source, new_conditions = lib_conditions.rewrite_new_conditions(expression, parsed)
    checked = _engine_compile(env, source, original=expression)
    serialized = checked.serialize()
    tree = decode(serialized)
    functions = _functions(tree)
    uses_omit = lib_omit.check_omit(tree, enabled=options.omit_function, expression=expression)
    output_type = parse_engine_type(checked.return_type().name(), target.messages)
    program = build(
        serialized,
        tree,
        expression=expression,
        functions=functions,
        output_type=output_type,
        messages=target.messages,
        list_types=target.has_list_types,
        toolkit=_Engine.get().toolkit,
        count_cost=options.limits.cost_limit is not None,
    )
    return CompiledExpression(
        expression=expression,
        output_type=output_type,
        dependencies=dependencies(tree),
        functions=functions,
        uses_omit=uses_omit,
        new_conditions=new_conditions,
        condition_reads=lib_conditions.condition_reads(tree),
        _program=program,
        _string_result=output_type.kind in _MAY_BE_STRING,
        _checked=serialized,
        limits=options.limits if program.loops_or_calls else None,
        _limits_for_unwrapping=options.limits,
        fixed_cost=runtime_cost.fixed_cost(tree.root),
    )


def _engine_compile(
    env: Any, source: str, *, parse_only: bool = False, original: str | None = None
) -> Any:
    try:
        return env.compile(source, disable_check=parse_only)
    except RuntimeError as err:
        raise compile_error(original or source, str(err)) from None


def _identifiers(expression: str) -> frozenset[str] | None:
    """Every identifier of the parsed expression (variables, iteration variables, the roots of
    qualified names), or None if it does not parse."""
    try:
        parsed = _Engine.get().parse_env.compile(expression, disable_check=True)
    except RuntimeError:
        return None
    tree = decode(parsed.serialize())
    return frozenset(n.kind.name for n in walk(tree.root) if isinstance(n.kind, Ident))


def _functions(tree: Tree) -> frozenset[str]:
    return frozenset(n.kind.function for n in walk(tree.root) if isinstance(n.kind, Call))
