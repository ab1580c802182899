"""kro.cel: the one adapter over the CEL engine (cel-expr-python) and kro's function libraries.

Only this package imports the engine. Results are classified as a value, data pending (the
data an expression reads does not exist yet) or an expression error. What kro does only because
of the engine version it runs on (cel-expr-python 0.1.3) lives in `kro.cel._engine_compat`,
whose docstring lists each workaround.

Must not import: kro.graph, kro.runtime, aiohttp, kubernetes_asyncio, prometheus_client.

Entry points:

- `CelEnvironment(options)`: declare variables from OpenAPI v3 schemas (or `CelType`s, or
  None for `dyn`), then `compile(source)` -> `CompiledExpression` with `.output_type`
  (`CelType`: `.cel_name`, `.to_openapi()`), `.dependencies` ((root, path) pairs),
  `.functions`, `.uses_omit`, `.new_conditions`, `.condition_reads`. Invalid expressions
  raise `CelCompileError` (`.expression`, `.message`). `UnsupportedFunctionError` is the
  subclass for a function upstream has but this engine cannot run (none at present).
  `env.extend({...})` derives an environment with extra variables (iterators, `each`).
- `env.bind(values)` -> `Activation`: one per reconcile, shared by every expression, with
  schema-aware conversion of declared variables (date-time -> timestamp, byte -> bytes).
  `bind(values)` makes one from raw values (upstream's readyWhen context).
- `compiled.evaluate(activation)` / `compiled.evaluate_json(activation)` ->
  `Value | DataPending | ExpressionError`; `to_json_value()` is the C-35 output conversion
  and `OMIT` the marker `omit()` produces; `to_cel_value()` makes an `evaluate` result
  bindable again as it is (a forEach row: bytes stay bytes).
- `EvaluationLimits` (set through `CelOptions(limits=...)`): what one evaluation may cost
  (time, memory, sizes of generated values). Going over a limit is an `ExpressionError`
  with code `RESOURCE_EXHAUSTED` whose message names the limit; upstream has no limits.

Example::

    env = CelEnvironment(CelOptions(omit_function=False))
    env.declare("schema", {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}})
    env.declare("deployment")                     # no schema: dyn
    ready = env.compile("deployment.status.availableReplicas >= schema.spec.replicas")
    ready.dependencies   # (Dependency('deployment', 'status.availableReplicas'),
                         #  Dependency('schema', 'spec.replicas'))
    activation = env.bind({"schema": instance, "deployment": observed})
    match ready.evaluate(activation):
        case Value(value=ok): ...
        case DataPending(): ...                   # retry later
        case ExpressionError(message=msg): ...    # report

Each name is imported when first used (kro._lazy), so the engine loads with the first name
that needs it.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kro.cel.convert import InputConverter as InputConverter
    from kro.cel.convert import to_cel_value as to_cel_value
    from kro.cel.convert import to_json_value as to_json_value
    from kro.cel.deps import Dependency as Dependency
    from kro.cel.engine import Activation as Activation
    from kro.cel.engine import CelEnvironment as CelEnvironment
    from kro.cel.engine import CelOptions as CelOptions
    from kro.cel.engine import CompiledExpression as CompiledExpression
    from kro.cel.engine import bind as bind
    from kro.cel.engine import evaluate as evaluate
    from kro.cel.errors import CelCompileError as CelCompileError
    from kro.cel.errors import CelConversionError as CelConversionError
    from kro.cel.errors import CelDataPendingError as CelDataPendingError
    from kro.cel.errors import CelDeclarationError as CelDeclarationError
    from kro.cel.errors import CelError as CelError
    from kro.cel.errors import CelEvaluationError as CelEvaluationError
    from kro.cel.errors import UnsupportedFunctionError as UnsupportedFunctionError
    from kro.cel.lib_conditions import ConditionRead as ConditionRead
    from kro.cel.lib_conditions import NewCondition as NewCondition
    from kro.cel.limits import EvaluationLimits as EvaluationLimits
    from kro.cel.opaque import OMIT as OMIT
    from kro.cel.results import DataPending as DataPending
    from kro.cel.results import EvalResult as EvalResult
    from kro.cel.results import ExpressionError as ExpressionError
    from kro.cel.results import Value as Value
    from kro.cel.types import CelType as CelType
else:
    from kro._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            ".convert": ("InputConverter", "to_cel_value", "to_json_value"),
            ".deps": ("Dependency",),
            ".engine": (
                "Activation",
                "CelEnvironment",
                "CelOptions",
                "CompiledExpression",
                "bind",
                "evaluate",
            ),
            ".errors": (
                "CelCompileError",
                "CelConversionError",
                "CelDataPendingError",
                "CelDeclarationError",
                "CelError",
                "CelEvaluationError",
                "UnsupportedFunctionError",
            ),
            ".lib_conditions": ("ConditionRead", "NewCondition"),
            ".limits": ("EvaluationLimits",),
            ".opaque": ("OMIT",),
            ".results": ("DataPending", "EvalResult", "ExpressionError", "Value"),
            ".types": ("CelType",),
        },
    )

__all__ = [
    "OMIT",
    "Activation",
    "CelCompileError",
    "CelConversionError",
    "CelDataPendingError",
    "CelDeclarationError",
    "CelEnvironment",
    "CelError",
    "CelEvaluationError",
    "CelOptions",
    "CelType",
    "CompiledExpression",
    "ConditionRead",
    "DataPending",
    "Dependency",
    "EvalResult",
    "EvaluationLimits",
    "ExpressionError",
    "InputConverter",
    "NewCondition",
    "UnsupportedFunctionError",
    "Value",
    "bind",
    "evaluate",
    "to_cel_value",
    "to_json_value",
]
