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
registered through a `CelExtension` (not `functions=`), and type parameters only bind when
declared through the environment's YAML config (`cel.Type("type_param<T>")` in an extension
is checked as `dyn`). So an overload whose signature names a type parameter (a single
capital letter: `list<T>`, `map<K, V>`) is declared to the checker in the config
(`config_functions`), and every overload is registered at runtime with `dyn` in place of its
type parameters: the runtime dispatches on value kinds only anyway.

Every runtime implementation is wrapped by `_guarded`: before the call it checks the
evaluation's time budget, after it charges the result against the per-value and
per-evaluation size limits (`budget`), so no kro function can be the step that runs away.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from cel_expr_python import cel

from kro.cel import budget
from kro.cel.opaque import MESSAGE_CLASSES

_SCALAR_KINDS: Final = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "timestamp", "duration", "null_type"}
)
_TYPE_PARAM: Final = re.compile(r"^[A-Z]$")
_SIGNATURE_TOKEN: Final = re.compile(r"\s*([A-Za-z0-9_.]+|<|>|,)")


@dataclass(frozen=True, slots=True)
class Overload:
    """One typed signature of a library function.

    Types are engine signature strings: `int`, `dyn`, `list<string>`, `map<string, dyn>`,
    a library message name such as `kubernetes.Quantity`, or a type parameter (`T`,
    `list<T>`, `map<K, V>`) shared by the parameters and result of one overload.
    """

    function: str
    id: str
    params: tuple[str, ...]
    result: str
    impl: Callable[..., Any]
    member: bool = False
    charges_result: bool = True

    @property
    def is_generic(self) -> bool:
        return any(_has_type_param(t) for t in (*self.params, self.result))


def _parse(signature: str) -> tuple[str, tuple[Any, ...]]:
    """`map<K, list<V>>` -> ("map", (("K", ()), ("list", (("V", ()),))))."""
    tokens = _SIGNATURE_TOKEN.findall(signature)
    parsed, _ = _parse_at(tokens, 0)
    return parsed


def _parse_at(tokens: list[str], i: int) -> tuple[tuple[str, tuple[Any, ...]], int]:
    name = tokens[i]
    i += 1
    params: list[tuple[str, tuple[Any, ...]]] = []
    if i < len(tokens) and tokens[i] == "<":
        while tokens[i] != ">":
            param, i = _parse_at(tokens, i + 1)
            params.append(param)
        i += 1
    return (name, tuple(params)), i


def _has_type_param(signature: str) -> bool:
    return any(_TYPE_PARAM.match(t) for t in _SIGNATURE_TOKEN.findall(signature))


def _runtime_type(signature: str) -> str:
    """The signature with `dyn` for each type parameter (`list<T>` -> `list<dyn>`)."""
    return "".join(
        "dyn" if _TYPE_PARAM.match(t) else t + (" " if t == "," else "")
        for t in _SIGNATURE_TOKEN.findall(signature)
    )


def _config_type(parsed: tuple[str, tuple[Any, ...]]) -> dict[str, Any]:
    name, params = parsed
    out: dict[str, Any] = {"type_name": name}
    if _TYPE_PARAM.match(name):
        out["is_type_param"] = True
    if params:
        out["params"] = [_config_type(p) for p in params]
    return out


def config_functions(overloads: Iterable[Overload]) -> list[dict[str, Any]]:
    """The generic overloads as the `functions:` section of an environment config."""
    by_function: dict[str, list[dict[str, Any]]] = {}
    for o in overloads:
        if not o.is_generic:
            continue
        params = [_config_type(_parse(p)) for p in o.params]
        decl: dict[str, Any] = {"id": o.id, "return": _config_type(_parse(o.result))}
        if o.member:
            decl["target"], params = params[0], params[1:]
        decl["args"] = params
        by_function.setdefault(o.function, []).append(decl)
    return [{"name": name, "overloads": decls} for name, decls in by_function.items()]


def _runtime_kind(signature: str) -> str:
    if signature.startswith("list"):
        return "list"
    if signature.startswith("map"):
        return "map"
    if signature in _SCALAR_KINDS or signature == "dyn":
        return signature
    return "message"


def check_extension(name: str, overloads: Iterable[Overload]) -> Any:
    """The typed declarations, without implementations, for checking environments (generic
    overloads excepted: they go in the config, see `config_functions`)."""
    by_function: dict[str, list[Any]] = {}
    for o in overloads:
        if o.is_generic:
            continue
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
        key = (o.function, o.member, tuple(_runtime_kind(_runtime_type(p)) for p in o.params))
        groups.setdefault(key, []).append(o)
    by_function: dict[str, list[Any]] = {}
    for (function, member, _), members in groups.items():
        first = members[0]
        impl = _guarded(
            function,
            first.impl if len(members) == 1 else _dispatcher(members),
            charge=first.charges_result,
        )
        # The binding checks returned values against the declared result type.
        result = first.result if len({o.result for o in members}) == 1 else "dyn"
        by_function.setdefault(function, []).append(
            cel.Overload(
                f"{first.id}__runtime",
                cel.Type(_runtime_type(result)),
                [cel.Type(_runtime_type(p)) for p in first.params],
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


def _guarded(function: str, impl: Callable[..., Any], *, charge: bool) -> Callable[..., Any]:
    """`impl` under the evaluation budget: time checked on entry, the result's size charged
    (unless `impl` charges for itself: `charge=False`)."""

    def guarded(*args: Any) -> Any:
        budget.enter(function)
        result = impl(*args)
        if charge:
            budget.charge(function, result)
        return result

    return guarded
