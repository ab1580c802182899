"""kro.cel.lib_omit: `omit()`, the "leave this field out" sentinel (C-31).

`${schema.spec.?nodePort.orValue(omit())}` removes the field (or list element) from the
rendered object instead of writing a value. The function is always declared, so the engine
environment is the same for everyone; `check_omit` rejects it at compile time unless the
`CELOmitFunction` gate is on (passed in through `CelOptions.omit_function`). Where omit is
allowed (template fields only) is the graph compiler's decision, based on
`CompiledExpression.uses_omit`.
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from kro.cel.checked_ast import Call, Tree, walk
from kro.cel.errors import CelCompileError
from kro.cel.library import Overload
from kro.cel.opaque import Omit, make

GATE_DISABLED: Final = "omit() requires the CELOmitFunction feature gate to be enabled"
COMPARED: Final = "omit() cannot be compared; it is only a marker for removing a field"
_COMPARISONS: Final = frozenset({"_==_", "_!=_"})


def omit() -> Message:
    return make(Omit)


def uses_omit(tree: Tree) -> bool:
    return any(isinstance(n.kind, Call) and n.kind.function == "omit" for n in walk(tree.root))


def check_omit(tree: Tree, *, enabled: bool, expression: str) -> bool:
    """Raise if omit() is not allowed here; return whether the expression uses it."""
    if not uses_omit(tree):
        return False
    if not enabled:
        raise CelCompileError(expression=expression, message=GATE_DISABLED)
    for node in walk(tree.root):
        kind = node.kind
        if isinstance(kind, Call) and kind.function in _COMPARISONS:
            for arg in kind.args:
                if isinstance(arg.kind, Call) and arg.kind.function == "omit":
                    raise CelCompileError(expression=expression, message=COMPARED)
    return True


OVERLOADS: Final = (Overload("omit", "omit", (), "dyn", omit),)
