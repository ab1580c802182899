"""kro.cel.library: how kro's function libraries are declared to the engine.

Each `lib_*` module lists its overloads as `Overload` values: a typed signature plus a
Python implementation. This module turns the union of them into two engine extensions:

- the *check* extension: every typed overload, no implementation. Checking environments
  use it, so `quantity("1").isLessThan(semver("1.0.0"))` is a compile error.
- the *runtime* extension: one registration per (function, receiver style, runtime kinds).
  The engine's runtime dispatches on value kinds only, and every library type is a
  protobuf message, so Quantity.isLessThan and Semver.isLessThan share one registration;
  its implementation picks the overload whose message classes match the arguments.

Two quirks of cel-expr-python 0.1.3 shape this: `dyn` parameters only dispatch when
registered through a `CelExtension` (not `functions=`), and type parameters (`list(T)`)
neither bind in the checker nor dispatch at runtime, so generic functions use `dyn`.

Every runtime implementation is wrapped by `_guarded`: before the call it checks the
evaluation's time budget, after it charges the result against the per-value and
per-evaluation size limits (`budget`), so no kro function can be the step that runs away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from cel_expr_python import cel

from kro.cel import budget
from kro.cel.opaque import MESSAGE_CLASSES

_SCALAR_KINDS: Final = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "timestamp", "duration", "null_type"}
)


@dataclass(frozen=True, slots=True)
class Overload:
    """One typed signature of a library function.

    Types are engine signature strings: `int`, `dyn`, `list<string>`, `map<string, dyn>`,
    or a library message name such as `kubernetes.Quantity`.
    """

    function: str
    id: str
    params: tuple[str, ...]
    result: str
    impl: Callable[..., Any]
    member: bool = False


def _runtime_kind(signature: str) -> str:
    if signature.startswith("list"):
        return "list"
    if signature.startswith("map"):
        return "map"
    if signature in _SCALAR_KINDS or signature == "dyn":
        return signature
    return "message"


def check_extension(name: str, overloads: Iterable[Overload]) -> Any:
    """The typed declarations, without implementations, for checking environments."""
    by_function: dict[str, list[Any]] = {}
    for o in overloads:
        by_function.setdefault(o.function, []).append(
            cel.Overload(
                o.id,
                cel.Type(o.result),
                [cel.Type(p) for p in o.params],
                is_member=o.member,
            )
        )
    return cel.CelExtension(
        name, [cel.FunctionDecl(fn, decls) for fn, decls in by_function.items()]
    )


def runtime_extension(name: str, overloads: Iterable[Overload]) -> Any:
    """One dispatching registration per runtime shape, for the evaluation environment."""
    groups: dict[tuple[str, bool, tuple[str, ...]], list[Overload]] = {}
    for o in overloads:
        key = (o.function, o.member, tuple(_runtime_kind(p) for p in o.params))
        groups.setdefault(key, []).append(o)
    by_function: dict[str, list[Any]] = {}
    for (function, member, _), members in groups.items():
        first = members[0]
        impl = _guarded(function, first.impl if len(members) == 1 else _dispatcher(members))
        # The binding checks returned values against the declared result type.
        result = first.result if len({o.result for o in members}) == 1 else "dyn"
        by_function.setdefault(function, []).append(
            cel.Overload(
                f"{first.id}__runtime",
                cel.Type(result),
                [cel.Type(p) for p in first.params],
                is_member=member,
                impl=impl,
            )
        )
    return cel.CelExtension(
        name, [cel.FunctionDecl(fn, decls) for fn, decls in by_function.items()]
    )


def _dispatcher(members: list[Overload]) -> Callable[..., Any]:
    """Choose among overloads that differ only by library message type."""
    table = [(tuple(MESSAGE_CLASSES.get(p) for p in o.params), o.impl) for o in members]

    def dispatch(*args: Any) -> Any:
        for classes, impl in table:
            if all(c is None or isinstance(a, c) for c, a in zip(classes, args, strict=True)):
                return impl(*args)
        names = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"no matching overload for {members[0].function}({names})")

    return dispatch


def _guarded(function: str, impl: Callable[..., Any]) -> Callable[..., Any]:
    """`impl` under the evaluation budget: time checked on entry, the result's size charged."""

    def guarded(*args: Any) -> Any:
        budget.enter(function)
        result = impl(*args)
        budget.charge(function, result)
        return result

    return guarded
