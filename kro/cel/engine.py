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

Every evaluation that can cost more than a few microseconds (it has a comprehension, calls
`lists.range` or one of kro's functions) runs under a `budget` (`EvaluationLimits`, from
`CelOptions.limits`): its checked tree is rewritten once, at compile time, to call budget
hooks in every loop (`instrument`), and the bound variables it reads are converted before
the budget starts, so a large observed object is never charged to the expression that
happens to read it first.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cel_expr_python import cel

from kro.cel import (
    budget,
    instrument,
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
)
from kro.cel.checked_ast import Call, Ident, Tree, decode, walk
from kro.cel.convert import to_json_value
from kro.cel.declarations import Declaration, declaration_of
from kro.cel.deps import Dependency, dependencies
from kro.cel.errors import CelCompileError, CelConversionError, UnsupportedFunctionError
from kro.cel.lib_conditions import ConditionRead, NewCondition
from kro.cel.library import Overload, check_extension, runtime_extension
from kro.cel.limits import DEFAULT_LIMITS, EvaluationLimits
from kro.cel.opaque import LIBRARY_POOL, new_pool
from kro.cel.results import EvalResult, ExpressionError, Value, classify
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
# Functions upstream supports that this engine cannot run, detected from the engine's own
# compile error, with the reason shown to the author.
UNSUPPORTED: Final[Mapping[str, str]] = {
    "transformMap": "cel-expr-python 0.1.3 lacks the runtime helper cel.@mapInsert",
    "transformMapEntry": "cel-expr-python 0.1.3 lacks the runtime helper cel.@mapInsert",
}
_UNSUPPORTED_CALL: Final = re.compile(r"\.\s*(transformMapEntry|transformMap)\s*\(")
_OPTIONAL_VAR: Final = "kro_optional__"
_MAP_INSERT: Final = "cel.@mapInsert"
# Functions implemented in Python: an expression calling one runs under a budget.
_PYTHON_FUNCTIONS: Final = frozenset(o.function for o in LIBRARY_OVERLOADS)


def _config() -> Any:
    return cel.NewEnvConfigFromYaml(
        "extensions:\n" + "".join(f'  - name: "{n}"\n' for n in ENGINE_EXTENSIONS)
    )


class _Engine:
    """Process-wide engine state: the evaluation environment and the shared extensions."""

    _lock = threading.Lock()
    _instance: _Engine | None = None

    def __init__(self) -> None:
        self.check_extension = check_extension("kro-check", LIBRARY_OVERLOADS)
        self.config = _config()
        # Parses only (no variables): the same syntax and macros as every check environment.
        self.parse_env = cel.NewEnv(
            LIBRARY_POOL, config=self.config, extensions=[self.check_extension]
        )
        self.eval_env = cel.NewEnv(
            LIBRARY_POOL,
            config=self.config,
            extensions=[
                runtime_extension("kro-runtime", LIBRARY_OVERLOADS),
                instrument.extension(),
            ],
        )
        self._touch: dict[str, Any] = {}

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

    __slots__ = ("_converted", "_engine", "_memory", "values")

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)
        self._engine = _Engine.get().eval_env.Activation(self.values)
        self._converted: set[str] = set()
        self._memory = budget.MemoryAccount()

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
                with contextlib.suppress(*_ENGINE_FAILURES):  # the evaluation reports it
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
    """

    expression: str
    output_type: CelType
    dependencies: tuple[Dependency, ...]
    functions: frozenset[str]
    uses_omit: bool
    new_conditions: tuple[NewCondition, ...]
    condition_reads: tuple[ConditionRead, ...]
    _program: Any = field(repr=False)
    _unwrap_optional: bool = field(repr=False)
    _string_result: bool = field(repr=False)
    _checked: bytes = field(default=b"", repr=False)
    limits: EvaluationLimits | None = field(default=None, repr=False)
    roots: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roots", frozenset(d.root for d in self.dependencies))

    def checked_tree(self) -> Tree:
        """The checked expression tree as written (before budget instrumentation)."""
        return decode(self._checked)

    def evaluate(self, activation: Activation) -> EvalResult:
        """Evaluate to a CEL-native Python value (timestamps are datetimes, bytes bytes)."""
        if self.limits is None:
            return self._evaluate(activation)
        activation.prepare(self.roots)
        previous = budget.begin(self.limits, activation._memory)
        try:
            return self._evaluate(activation)
        finally:
            budget.end(previous)

    def _evaluate(self, activation: Activation) -> EvalResult:
        try:
            result = self._program.eval(activation._engine)
        except _ENGINE_FAILURES as err:  # a library function returned an unusable value, or
            return classify(self.expression, str(err))  # a C++ exception inside the engine
        # An error comes back as a value whose plain form is its message (a str). Asking for
        # the type costs a third of an evaluation, so only string-typed results pay for it.
        try:
            value = result.plain_value()
        except (SystemError, RuntimeError, TypeError):
            return ExpressionError(expression=self.expression, message=_UNCONVERTIBLE)
        if isinstance(value, str) and (not self._string_result or result.type() == _ERROR):
            return classify(self.expression, value)
        if self._unwrap_optional:
            return Value(value[0] if value else None)
        return Value(value)

    def evaluate_json(self, activation: Activation) -> EvalResult:
        """Evaluate and convert to a JSON value storable in an object (C-35)."""
        result = self.evaluate(activation)
        if not isinstance(result, Value):
            return result
        try:
            return Value(to_json_value(result.value))
        except CelConversionError as err:
            return ExpressionError(expression=self.expression, message=str(err))


_ERROR: Final = cel.Type.ERROR
# What pybind11 turns C++ exceptions into (std::length_error -> ValueError, ...).
_ENGINE_FAILURES: Final = (RuntimeError, ValueError, IndexError, OverflowError, MemoryError)
_UNCONVERTIBLE: Final = (
    "the result contains a value the engine cannot hand over (an optional nested in a list "
    "or map); use [?x] / {?k: v} or orValue()"
)
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

    __slots__ = ("_env", "_messages", "_universe", "compiled", "files", "variables")

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

    def remember(self, key: tuple[CelOptions, str], compiled: CompiledExpression) -> None:
        if len(self.compiled) >= _COMPILED_PER_SET:
            self.compiled.clear()
        self.compiled[key] = compiled


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
        """Parse and type-check; raises CelCompileError (or UnsupportedFunctionError)."""
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
        converted: dict[str, Any] = {}
        for name, value in values.items():
            declaration = self._declarations.get(name)
            converted[name] = value if declaration is None else declaration.converter.convert(value)
        return Activation(converted)


def _compile(target: _CheckSet, expression: str, options: CelOptions) -> CompiledExpression:
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
    if _MAP_INSERT in functions:
        raise _unsupported(expression)
    uses_omit = lib_omit.check_omit(tree, enabled=options.omit_function, expression=expression)
    output_type = parse_engine_type(checked.return_type().name(), target.messages)
    unwrap = output_type.kind == "optional"
    program_bytes = serialized
    if unwrap:
        wrapper = (
            f"cel.bind({_OPTIONAL_VAR}, {source}, {_OPTIONAL_VAR}.hasValue() ? "
            f"[{_OPTIONAL_VAR}.value()] : [])"
        )
        program_bytes = _engine_compile(env, wrapper, original=expression).serialize()
    hooked = instrument.needs_instrumenting(tree)
    if hooked:
        program_tree = tree if program_bytes is serialized else decode(program_bytes)
        program_bytes = instrument.instrument(program_bytes, program_tree)
    budgeted = hooked or not functions.isdisjoint(_PYTHON_FUNCTIONS)
    return CompiledExpression(
        expression=expression,
        output_type=output_type,
        dependencies=dependencies(tree),
        functions=functions,
        uses_omit=uses_omit,
        new_conditions=new_conditions,
        condition_reads=lib_conditions.condition_reads(tree),
        _program=_Engine.get().eval_env.deserialize(program_bytes),
        _unwrap_optional=unwrap,
        _string_result=output_type.kind in _MAY_BE_STRING,
        _checked=serialized,
        limits=options.limits if budgeted else None,
    )


def _engine_compile(
    env: Any, source: str, *, parse_only: bool = False, original: str | None = None
) -> Any:
    try:
        return env.compile(source, disable_check=parse_only)
    except RuntimeError as err:
        raise _compile_error(original or source, str(err)) from None


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


_ENGINE_PREFIX: Final = re.compile(r"^[A-Z_]+: ")
_ENGINE_SUFFIX: Final = re.compile(r"\s*\[[A-Z_]+\]\s*$")


def _unsupported(expression: str) -> UnsupportedFunctionError:
    match = _UNSUPPORTED_CALL.search(expression)
    function = match.group(1) if match else "transformMap"
    return UnsupportedFunctionError(
        expression=expression, function=function, reason=UNSUPPORTED[function]
    )


def _compile_error(expression: str, text: str) -> CelCompileError:
    if _MAP_INSERT in text:
        return _unsupported(expression)
    message = _ENGINE_SUFFIX.sub("", _ENGINE_PREFIX.sub("", text, count=1))
    return CelCompileError(expression=expression, message=message)
