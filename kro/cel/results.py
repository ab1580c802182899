"""kro.cel.results: the three outcomes of an evaluation.

kro distinguishes "the data is not there yet" (a status field not populated, a resource not
observed, a list too short: wait and retry) from a real error (a bad conversion, a division
by zero: report it). Which one an engine error text is decides
`kro.cel._engine_compat.error_text` (the engine tells them apart only by wording).

Failures of an evaluation limit (kro.cel.limits) are expression errors with the code
`RESOURCE_EXHAUSTED`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NoReturn

from kro.cel.errors import CelDataPendingError, CelEvaluationError

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
