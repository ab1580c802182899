"""kro.cel.engine: the one adapter over cel-expr-python. Nothing else imports the engine
for evaluation.

Two kinds of engine environment, one library set (docs/design in cel-engine.md):

- a *check* environment per `CelEnvironment`: variables typed from OpenAPI schemas through
  synthetic protobuf descriptors (`types`), library functions typed precisely (`library`).
  Compiling there parses, type-checks and yields the checked tree, from which we read the
  output type and dependencies once;
- one process-wide *evaluation* environment: no variable declarations, runtime library
  implementations only. Checked expressions are deserialized into it, so every compiled
  expression, whatever environment checked it, runs against the same kind of `Activation`
  — built once per reconcile and shared by all expressions (binding a large object is the
  expensive part; each evaluation after that is a few microseconds).

Evaluation returns `Value | DataPending | ExpressionError` (see `results`) and never
raises for data problems.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cel_expr_python import cel

from kro.cel import (
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
from kro.cel.checked_ast import Call, Tree, decode, walk
from kro.cel.convert import InputConverter, to_json_value
from kro.cel.deps import Dependency, dependencies
from kro.cel.errors import (
    CelCompileError,
    CelConversionError,
    CelDeclarationError,
    UnsupportedFunctionError,
)
from kro.cel.lib_conditions import ConditionRead, NewCondition
from kro.cel.library import Overload, check_extension, runtime_extension
from kro.cel.opaque import LIBRARY_POOL, new_pool
from kro.cel.results import EvalResult, ExpressionError, Value, classify
from kro.cel.types import DYN, CelType, SchemaTranslator, engine_type, parse_engine_type

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
_IDENTIFIER: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPTIONAL_VAR: Final = "kro_optional__"
_MAP_INSERT: Final = "cel.@mapInsert"


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
        self.eval_env = cel.NewEnv(
            LIBRARY_POOL,
            config=_config(),
            extensions=[runtime_extension("kro-runtime", LIBRARY_OVERLOADS)],
        )

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
    """

    omit_function: bool = False


@dataclass(frozen=True, slots=True)
class _Declaration:
    cel_type: CelType
    engine_type: Any
    proto_file: bytes
    messages: Mapping[str, Mapping[str, Any]]
    converter: InputConverter
    hint: str = ""


class Activation:
    """The variables of one evaluation context (normally: one reconcile of one instance).

    Build it once and evaluate every expression against it: the engine converts each bound
    object lazily on first use and keeps the result for later evaluations.
    """

    __slots__ = ("_engine", "values")

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)
        self._engine = _Engine.get().eval_env.Activation(self.values)


def bind(values: Mapping[str, Any]) -> Activation:
    """An Activation of raw values (no schema-aware conversion, as upstream's readyWhen)."""
    return Activation(values)


@dataclass(frozen=True, slots=True, eq=False)
class CompiledExpression:
    """A checked expression, ready to evaluate any number of times.

    expression: the source as written (without `${}`).
    output_type: the checked result type (`.cel_name`, `.to_openapi()`).
    dependencies: (root, path) reads, comprehension variables excluded.
    functions: names of every function and operator called (`random.seededString`, `_+_`).
    uses_omit: calls `omit()` (only legal in resource templates, C-31).
    new_conditions / condition_reads: `runtime.newCondition` / `runtime.condition` calls.
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

    @property
    def roots(self) -> frozenset[str]:
        """The variables the expression reads (upstream's "references")."""
        return frozenset(d.root for d in self.dependencies)

    def evaluate(self, activation: Activation) -> EvalResult:
        """Evaluate to a CEL-native Python value (timestamps are datetimes, bytes bytes)."""
        try:
            result = self._program.eval(activation._engine)
        except RuntimeError as err:  # e.g. a library function returned an unusable value
            return classify(self.expression, str(err))
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
_UNCONVERTIBLE: Final = (
    "the result contains a value the engine cannot hand over (an optional nested in a list "
    "or map); use [?x] / {?k: v} or orValue()"
)
# Result kinds whose successful plain value can be a str (dyn and opaque included).
_MAY_BE_STRING: Final = frozenset({"string", "dyn", "opaque", "object", "error", "type"})


def evaluate(compiled: CompiledExpression, activation: Activation) -> EvalResult:
    return compiled.evaluate(activation)


class CelEnvironment:
    """Declared variables plus kro's libraries: the context expressions are compiled in.

    Declare every variable first, then compile; a declaration after a compile rebuilds the
    checking environment (about a millisecond). Compiles are cached per source text.
    """

    def __init__(
        self,
        options: CelOptions | None = None,
        declarations: Mapping[str, Mapping[str, Any] | CelType | None] | None = None,
    ) -> None:
        self.options = options or CelOptions()
        self._declarations: dict[str, _Declaration] = {}
        self._check_env: Any = None
        self._messages: dict[str, Mapping[str, Any]] = {}
        self._cache: dict[str, CompiledExpression] = {}
        for name, schema in (declarations or {}).items():
            self.declare(name, schema)

    # ----------------------------------------------------------------- declarations

    def declare(self, name: str, schema: Mapping[str, Any] | CelType | None = None) -> CelType:
        """Declare a variable from an OpenAPI v3 schema, a CelType, or None (`dyn`)."""
        if not _IDENTIFIER.match(name):
            raise CelDeclarationError(name=name, message="not a CEL identifier")
        if schema is None:
            declaration = _Declaration(DYN, cel.Type.DYN, b"", {}, InputConverter(None))
        elif isinstance(schema, CelType):
            declaration = _Declaration(schema, engine_type(schema), b"", {}, InputConverter(None))
        elif isinstance(schema, Mapping):
            declaration = _translate(name, schema)
        else:
            raise CelDeclarationError(name=name, message=f"unsupported schema {type(schema)}")
        self._declarations[name] = declaration
        self._check_env = None
        self._cache.clear()
        return declaration.cel_type

    def extend(
        self, declarations: Mapping[str, Mapping[str, Any] | CelType | None]
    ) -> CelEnvironment:
        """A new environment with this one's variables plus (or overriding) `declarations`."""
        child = CelEnvironment(self.options)
        child._declarations = dict(self._declarations)
        for name, schema in declarations.items():
            child.declare(name, schema)
        return child

    @property
    def variables(self) -> Mapping[str, CelType]:
        return {name: d.cel_type for name, d in self._declarations.items()}

    def _env(self) -> Any:
        if self._check_env is None:
            files = list(
                dict.fromkeys(d.proto_file for d in self._declarations.values() if d.proto_file)
            )
            self._messages = {
                k: v for d in self._declarations.values() for k, v in d.messages.items()
            }
            self._check_env = cel.NewEnv(
                new_pool(*files),
                config=_config(),
                extensions=[_Engine.get().check_extension],
                variables={n: d.engine_type for n, d in self._declarations.items()},
            )
        return self._check_env

    # --------------------------------------------------------------------- compile

    def compile(self, expression: str) -> CompiledExpression:
        """Parse and type-check; raises CelCompileError (or UnsupportedFunctionError)."""
        cached = self._cache.get(expression)
        if cached is not None:
            return cached
        env = self._env()
        source, new_conditions = expression, tuple[NewCondition, ...]()
        if "newCondition" in expression:
            parse = self._engine_compile(env, expression, parse_only=True)
            parsed = decode(parse.serialize(), with_positions=True)
            source, new_conditions = lib_conditions.rewrite_new_conditions(expression, parsed)
        checked = self._engine_compile(env, source, original=expression)
        serialized = checked.serialize()
        tree = decode(serialized)
        functions = _functions(tree)
        if _MAP_INSERT in functions:
            raise _unsupported(expression)
        uses_omit = lib_omit.check_omit(
            tree, enabled=self.options.omit_function, expression=expression
        )
        output_type = parse_engine_type(checked.return_type().name(), self._messages)
        unwrap = output_type.kind == "optional"
        if unwrap:
            wrapper = (
                f"cel.bind({_OPTIONAL_VAR}, {source}, {_OPTIONAL_VAR}.hasValue() ? "
                f"[{_OPTIONAL_VAR}.value()] : [])"
            )
            serialized = self._engine_compile(env, wrapper, original=expression).serialize()
        compiled = CompiledExpression(
            expression=expression,
            output_type=output_type,
            dependencies=dependencies(tree),
            functions=functions,
            uses_omit=uses_omit,
            new_conditions=new_conditions,
            condition_reads=lib_conditions.condition_reads(tree),
            _program=_Engine.get().eval_env.deserialize(serialized),
            _unwrap_optional=unwrap,
            _string_result=output_type.kind in _MAY_BE_STRING,
        )
        self._cache[expression] = compiled
        return compiled

    @staticmethod
    def _engine_compile(
        env: Any, source: str, *, parse_only: bool = False, original: str | None = None
    ) -> Any:
        try:
            return env.compile(source, disable_check=parse_only)
        except RuntimeError as err:
            raise _compile_error(original or source, str(err)) from None

    # ------------------------------------------------------------------------ bind

    def bind(self, values: Mapping[str, Any]) -> Activation:
        """An Activation with schema-aware input conversion for declared variables (C-34)."""
        converted: dict[str, Any] = {}
        for name, value in values.items():
            declaration = self._declarations.get(name)
            converted[name] = value if declaration is None else declaration.converter.convert(value)
        return Activation(converted)


_DECLARATION_CACHE_SIZE: Final = 512
_declarations: OrderedDict[int, tuple[Mapping[str, Any], _Declaration]] = OrderedDict()


def _type_hint(name: str, schema: Mapping[str, Any]) -> str:
    """Name synthetic messages after the kind when the schema says which kind it is, so one
    translation serves every variable of that kind (`kro.t3.deployment_spec`)."""
    gvks = schema.get("x-kubernetes-group-version-kind")
    if isinstance(gvks, list) and len(gvks) == 1 and isinstance(gvks[0], Mapping):
        kind = str(gvks[0].get("kind") or "")
        if _IDENTIFIER.match(kind):
            return kind.lower()
    return name


def _translate(name: str, schema: Mapping[str, Any]) -> _Declaration:
    """Translate a schema once per schema object: a resolver hands out the same object for a
    kind every time, and translation (protobuf descriptors, input converter, probe) is the
    expensive part of building a graph. Kind-named schemas are shared by every variable."""
    hint = _type_hint(name, schema)
    key = id(schema)
    cached = _declarations.get(key)
    if cached is not None and cached[0] is schema and (hint != name or cached[1].hint == name):
        _declarations.move_to_end(key)
        return cached[1]
    declaration = _translate_uncached(hint, schema)
    if hint != name:  # only kind-named translations are reusable across variable names
        _declarations[key] = (schema, declaration)
        if len(_declarations) > _DECLARATION_CACHE_SIZE:
            _declarations.popitem(last=False)
    return declaration


def _translate_uncached(name: str, schema: Mapping[str, Any]) -> _Declaration:
    translator = SchemaTranslator(name)
    engine, cel_type = translator.translate(schema)
    proto_file = b""
    if translator.file.message_type:
        proto_file = translator.file.SerializeToString()
        _probe_descriptors(name, translator)
    return _Declaration(
        cel_type, engine, proto_file, translator.messages, InputConverter(schema), name
    )


def _probe_descriptors(name: str, translator: SchemaTranslator) -> None:
    """Fail now if the engine's C++ protobuf rejects the synthetic file.

    A rejected file is only logged by the engine and its types silently become opaque, which
    would turn every later field selection into a confusing compile error.
    """
    first = translator.file.message_type[0]
    if not first.field:
        return
    try:
        pool = new_pool(translator.file.SerializeToString())
        probe = cel.NewEnv(
            pool, variables={"probe": cel.Type(f"{translator.package}.{first.name}")}
        )
        probe.compile(f"probe.{first.field[0].name}")
    except (RuntimeError, TypeError, ValueError) as err:
        raise CelDeclarationError(name=name, message=f"schema not representable: {err}") from None


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
