"""kro.cel.errors: everything kro.cel raises. Engine exceptions (RuntimeError) never escape.

    CelError
    ├── CelCompileError            the expression does not parse or type-check
    │   └── UnsupportedFunctionError   it calls a function this engine cannot run
    ├── CelDeclarationError        a variable cannot be declared (bad name or schema)
    ├── CelConversionError         a result has no JSON form (bytes, uint > MaxInt64, ...)
    └── CelEvaluationError         raised by `ExpressionError.unwrap()`: a failed evaluation
        └── CelDataPendingError    raised by `DataPending.unwrap()`: the data is not there yet

Evaluation failures are normally *returned* (see `kro.cel.results`), because they are an
expected outcome of every reconcile; the exceptions exist for callers that prefer to raise.
Compile and declaration errors never help on retry: the RGD must change.
"""

from __future__ import annotations


class CelError(Exception):
    """Base for every error kro.cel raises."""


class CelCompileError(CelError):
    """The expression is invalid: syntax, unknown identifier/function/field, or type mismatch.

    `message` is the engine's diagnostic (with its `<input>:line:col` caret lines) or one of
    kro's own messages; the caller prefixes the resource id and field path.
    """

    def __init__(self, *, expression: str, message: str) -> None:
        super().__init__(message)
        self.expression = expression
        self.message = message


class UnsupportedFunctionError(CelCompileError):
    """The expression uses a function upstream kro supports but this engine cannot evaluate.

    No function is unsupported at present (`transformMap` and `transformMapEntry` were, until
    kro-py supplied the engine's missing runtime helper); callers keep catching it so that
    an engine upgrade that loses one reports it by name.
    """

    def __init__(self, *, expression: str, function: str, reason: str) -> None:
        super().__init__(
            expression=expression,
            message=f"function {function!r} is not supported by kro-py: {reason}",
        )
        self.function = function
        self.reason = reason


class CelDeclarationError(CelError):
    """A variable name or schema cannot be declared in a CEL environment."""

    def __init__(self, *, name: str, message: str) -> None:
        super().__init__(f"cannot declare CEL variable {name!r}: {message}")
        self.name = name
        self.message = message


class CelConversionError(CelError):
    """A CEL result cannot be written into a Kubernetes object (upstream `EnsureJSONSafe`).

    `path` locates the offending value inside the result ("" for the result itself).
    """

    def __init__(self, *, message: str, path: str = "") -> None:
        super().__init__(message if not path else f"{message} (at {path})")
        self.message = message
        self.path = path


class CelEvaluationError(CelError):
    """An evaluation failed for a reason that a retry with the same data will not fix."""

    def __init__(self, *, expression: str, message: str) -> None:
        super().__init__(message)
        self.expression = expression
        self.message = message


class CelDataPendingError(CelEvaluationError):
    """An evaluation read a key, field, variable or index that does not exist yet: retry later."""
