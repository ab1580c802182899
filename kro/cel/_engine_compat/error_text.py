"""_engine_compat.error_text: what the engine's error texts mean.

The engine signals "the data is not there yet" and a real error alike, as an error *value*
whose only distinguishing feature is its message, and raises C++ exceptions as Python ones
whose type says little; so kro reads the text. Upstream does the same with cel-go texts
(`pkg/runtime/errors.go`: `no such key`, `no such field`, `no such attribute`, `index out of
bounds`); the table below maps cel-cpp's wording onto those four reasons. Every pattern has a
test in tests/cel/test_cel_results.py and tests/cel/test_engine_compat.py: an engine upgrade
that changes a text fails there, not in a reconcile.
"""

from __future__ import annotations

import re
from typing import Final

from kro.cel.budget import BUDGET_EXCEEDED
from kro.cel.errors import CelCompileError
from kro.cel.limits import ENGINE_MAX_ITERATIONS
from kro.cel.results import LIMIT_CODE, DataPending, ExpressionError

# What pybind11 turns C++ exceptions into (std::length_error -> ValueError, ...).
ENGINE_FAILURES: Final = (RuntimeError, ValueError, IndexError, OverflowError, MemoryError)

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


_ENGINE_PREFIX: Final = re.compile(r"^[A-Z_]+: ")
_ENGINE_SUFFIX: Final = re.compile(r"\s*\[[A-Z_]+\]\s*$")


def compile_error(expression: str, text: str) -> CelCompileError:
    """A compile error of the engine (`INVALID_ARGUMENT: <message> [CODE]`) as kro's."""
    message = _ENGINE_SUFFIX.sub("", _ENGINE_PREFIX.sub("", text, count=1))
    return CelCompileError(expression=expression, message=message)
