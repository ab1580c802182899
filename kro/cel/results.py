"""kro.cel.results: the three outcomes of an evaluation, and the one place engine text is read.

kro distinguishes "the data is not there yet" (a status field not populated, a resource not
observed, a list too short: wait and retry) from a real error (a bad conversion, a division
by zero: report it). The engine signals both as an error *value* whose only distinguishing
feature is its message, so this module classifies messages. Upstream does the same with
cel-go texts (`pkg/runtime/errors.go`: `no such key`, `no such field`, `no such attribute`,
`index out of bounds`); the table below maps cel-cpp's wording onto those four reasons.
Every pattern has a test in tests/cel/test_cel_results.py: an engine upgrade that changes a
text fails there, not in a reconcile.

Failures of an evaluation limit (kro.cel.limits) are expression errors with the code
`RESOURCE_EXHAUSTED`; the engine's own iteration limit is reworded to say which limit it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from kro.cel.budget import BUDGET_EXCEEDED
from kro.cel.errors import CelDataPendingError, CelEvaluationError
from kro.cel.limits import ENGINE_MAX_ITERATIONS

# (pattern, upstream reason). Searched, not anchored: the engine prefixes a status code.
PENDING_PATTERNS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"Key not found in map"), "no such key"),
    (re.compile(r"No value with name \"[^\"]*\" found in Activation"), "no such attribute"),
    (re.compile(r"Index error: index=-?\d+ size=\d+"), "index out of bounds"),
    (re.compile(r"no_such_field|no such field"), "no such field"),
    # Upstream's own words, for messages raised by kro's library functions.
    (re.compile(r"no such key"), "no such key"),
    (re.compile(r"no such attribute"), "no such attribute"),
    (re.compile(r"index out of bounds"), "index out of bounds"),
)

_STATUS_PREFIX: Final = re.compile(r"^(?P<code>[A-Z][A-Z_]+): ")
_ENGINE_ITERATION_LIMIT: Final = re.compile(r"Iteration budget exceeded")
ITERATION_LIMIT_MESSAGE: Final = (
    f"{BUDGET_EXCEEDED}: more than {ENGINE_MAX_ITERATIONS} comprehension iterations in one "
    "evaluation (the engine's fixed limit)"
)
_LIMIT_MESSAGE: Final = re.compile(rf"^{BUDGET_EXCEEDED}: |^[\w.]+: .* exceeds the limit of ")
LIMIT_CODE: Final = "RESOURCE_EXHAUSTED"


@dataclass(frozen=True, slots=True)
class Value:
    """A successful evaluation."""

    value: Any

    def unwrap(self) -> Any:
        return self.value


@dataclass(frozen=True, slots=True)
class DataPending:
    """The expression read something that does not exist yet; `reason` is upstream's term."""

    expression: str
    message: str
    reason: str

    def unwrap(self) -> NoReturn:
        raise CelDataPendingError(expression=self.expression, message=self.message)


@dataclass(frozen=True, slots=True)
class ExpressionError:
    """The expression failed; `code` is the engine's status code (e.g. INVALID_ARGUMENT)."""

    expression: str
    message: str
    code: str = ""

    def unwrap(self) -> NoReturn:
        raise CelEvaluationError(expression=self.expression, message=self.message)


EvalResult = Value | DataPending | ExpressionError


def classify(expression: str, engine_text: str) -> DataPending | ExpressionError:
    """Turn an engine error text into DataPending or ExpressionError."""
    code = ""
    message = engine_text
    prefix = _STATUS_PREFIX.match(engine_text)
    if prefix is not None:
        code = prefix.group("code")
        message = engine_text[prefix.end() :]
    if _ENGINE_ITERATION_LIMIT.search(message):
        return ExpressionError(
            expression=expression, message=ITERATION_LIMIT_MESSAGE, code=LIMIT_CODE
        )
    if _LIMIT_MESSAGE.search(message):
        return ExpressionError(expression=expression, message=message, code=LIMIT_CODE)
    for pattern, reason in PENDING_PATTERNS:
        if pattern.search(message):
            return DataPending(expression=expression, message=message, reason=reason)
    return ExpressionError(expression=expression, message=message, code=code)


def is_pending(result: EvalResult) -> bool:
    return isinstance(result, DataPending)
