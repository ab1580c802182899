"""_engine_compat.optionals: optional values where the engine cannot hand them to Python.

cel-expr-python converts an optional to a Python value in no position: a result that *is*
one fails to convert (`plain_value()` raises), one that *contains* one too (`[a.?b]`), and an
optional passed to a function implemented in Python crashes the process inside the binding.
Upstream converts them (C-10, C-35): a present optional becomes its value, `optional.none()`
becomes null, at any depth of a list or map. So optionals are removed before they reach the
boundary, in CEL, by fragments spliced into the checked program (`rewrite`):

- *unwrap*: the result goes through `U(x)`, which replaces each optional by its value or
  null and rebuilds the lists and maps around them. A result typed with a nested optional
  is always unwrapped. A `dyn` result of an expression that makes optionals
  (`creates_optionals`) is first checked (the engine adapter walks it without converting
  it, since converting a map that holds an optional crashes); only if it holds one is the
  unwrapping program run, so results without optionals never pay for the rebuild. A result
  that is only optional at the top, the common `a.?b`, takes the cheap form `[v]` / `[]`.
- *guard*: in an expression that makes optionals, an argument of a Python-implemented
  function that is typed optional or `dyn` is checked by `H(x)` (does any optional occur in
  it?) and the call fails with an error naming the function instead of crashing.

Types alone are not enough to find optionals: `m[?k]` on a `dyn` map is typed `dyn`. So
an expression is assumed to hold optionals wherever they may hide as soon as it calls one
of the functions that make them (`OPTIONAL_SOURCES`); the values bound from objects never
hold any.

Both walk at most `depth` levels. That is enough: data bound from Kubernetes objects never
holds an optional and CEL values are immutable, so an optional sits inside at most as many
containers as the expression builds around it (`container_depths`). Each level nests the
program about fifteen protobuf messages deeper and the engine reads at most about a hundred,
so a program that needs more levels than fit is refused (`MAX_LEVELS`, and the engine's own
refusal below it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kro.cel._engine_compat.lib_comprehensions import MAP_FROM_PAIRS, MAP_INSERT
from kro.cel._engine_compat.rewrite import (
    CALL,
    CALL_FUNCTION,
    IDENT,
    Ids,
    bind,
    call,
    call_parts,
    const_string,
    expr_of,
    ident,
    map_fields,
    max_id,
    renumber,
    root_expr,
    transform,
)
from kro.cel._engine_compat.wire import LENGTH_DELIMITED, encode_field
from kro.cel.checked_ast import Call, Comprehension, Ident, ListLit, Node, StructLit, Tree, children
from kro.cel.library import Overload

VALUE_VAR: Final = "kro_value__"
_MAP_FROM_PAIRS_PLACEHOLDER: Final = "kro_map_from_pairs__"
_INNER: Final = "kro_inner__"
_UNWRAP_BOTTOM: Final = (
    "type({value}) == optional_type ? ({value}.hasValue() ? {value}.value() : null) : {value}"
)
_INNER_IDENT: Final = encode_field(1, LENGTH_DELIMITED, _INNER.encode())
OPTIONAL_SOURCES: Final = frozenset({
    "optional.of", "optional.ofNonZeroValue", "optional.none", "_?._", "_[?_]", "first",
    "last", "or",
})  # fmt: skip
"""Every function that returns an optional without being given one (`or` to be safe)."""
FAIL: Final = "kro.@fail"
_TERNARY: Final = "_?_:_"

Parse = Callable[[str], bytes]
"""Source text -> a serialized (Any-wrapped) parsed expression, from the engine."""


def _unwrap_level(value: str, level: int) -> tuple[str, str]:
    """One level of `U` over `value`: its source, with `kro_inner__` where the next level
    goes, and the variable that level unwraps.

    Each level uses its variables once (lists and maps are rebuilt from `[key, U(value)]`
    pairs), so the program grows linearly with the depth; a map is built from its pairs in
    one call (`kro.@mapFromPairs`, written as a placeholder the parser accepts).
    """
    y, z, a, b, p = (f"kro_{n}{level}__" for n in "yzabp")
    source = (
        f"cel.bind({y}, type({value}) == optional_type ? "
        f"({value}.hasValue() ? {value}.value() : null) : {value}, "
        f"(type({y}) == list || type({y}) == map) ? "
        f"cel.bind({z}, {y}.transformList({a}, {b}, [{a}, {_INNER}]), "
        f"type({y}) == list ? {z}.map({p}, {p}[1]) : {_MAP_FROM_PAIRS_PLACEHOLDER}({z})) "
        f": {y})"
    )
    return source, b


def _has_level(value: str, level: int) -> tuple[str, str]:
    """One level of `H` over `value` (see `_unwrap_level`)."""
    a, b = f"kro_a{level}__", f"kro_b{level}__"
    source = (
        f"type({value}) == optional_type || ((type({value}) == list || type({value}) == map) "
        f"&& {value}.exists({a}, {b}, {_INNER}))"
    )
    return source, b


class Fragments:
    """Parsed fragments by source text; each is parsed once per process."""

    __slots__ = ("_cache", "_parse")

    def __init__(self, parse: Parse) -> None:
        self._parse = parse
        self._cache: dict[str, bytes] = {}

    def expr(self, source: str) -> bytes:
        found = self._cache.get(source)
        if found is None:
            found = self._cache[source] = transform(root_expr(self._parse(source)), _rename)
        return found


def _rename(node: int, kind: int, payload: bytes) -> bytes | None:
    """Fragments call `kro_map_from_pairs__(...)`, which parses; programs call the hidden
    `kro.@mapFromPairs`."""
    if kind != CALL or call_parts(payload)[0] != _MAP_FROM_PAIRS_PLACEHOLDER:
        return None
    renamed = map_fields(payload, lambda n, v: MAP_FROM_PAIRS.encode() if n == CALL_FUNCTION else v)
    return expr_of(node, CALL, renamed)


def splice(ids: Ids, fragment: bytes) -> bytes:
    """A fragment's Expr with ids moved above `ids`, which then skips past them."""
    moved = renumber(fragment, ids.last)
    ids.last += max_id(fragment)
    return moved


Level = Callable[[str, int], tuple[str, str]]


def _composed(ids: Ids, fragments: Fragments, level: Level, bottom: str, depth: int) -> bytes:
    """`depth` levels of a walk over VALUE_VAR, each spliced where the one above has
    `kro_inner__` (composed as trees: the parser refuses sources nested this deeply), with
    `bottom` (a source over `{value}`, looking at that value only) below the last."""
    value = VALUE_VAR
    outers: list[bytes] = []
    for n in range(depth, 0, -1):
        source, value = level(value, n)
        outers.append(splice(ids, fragments.expr(source)))
    expr = splice(ids, fragments.expr(bottom.format(value=value)))
    for outer in reversed(outers):
        expr = _substituted(outer, expr)
    return expr


def _substituted(outer: bytes, inner: bytes) -> bytes:
    """`outer` with its `kro_inner__` identifier replaced by `inner`."""

    def hook(node: int, kind: int, payload: bytes) -> bytes | None:
        if kind == IDENT and payload == _INNER_IDENT:
            return inner
        return None

    return transform(outer, hook)


def unwrapped(ids: Ids, fragments: Fragments, expr: bytes, depth: int) -> bytes:
    """`expr` with every optional in its value unwrapped (`U`); raises TooDeep."""
    _check_levels(depth)
    body = _composed(ids, fragments, _unwrap_level, _UNWRAP_BOTTOM, depth)
    return bind(ids, VALUE_VAR, expr, body)


def as_list(ids: Ids, fragments: Fragments, expr: bytes) -> bytes:
    """An optional-typed `expr` as `[value]` or `[]`, the cheap top-level form."""
    source = f"{VALUE_VAR}.hasValue() ? [{VALUE_VAR}.value()] : []"
    return bind(ids, VALUE_VAR, expr, splice(ids, fragments.expr(source)))


def guarded(ids: Ids, fragments: Fragments, expr: bytes, function: str, depth: int) -> bytes:
    """`expr`, or an error naming `function` if an optional occurs in its value; raises
    TooDeep."""
    _check_levels(depth)
    check = _composed(ids, fragments, _has_level, "type({value}) == optional_type", depth)
    message = (
        f"{function}: an optional value cannot be passed to a function; "
        "unwrap it first with orValue(), value() or [?x] / {?k: v}"
    )
    fail = call(ids, FAIL, [const_string(ids, message)])
    return bind(ids, VALUE_VAR, expr, call(ids, _TERNARY, [check, fail, ident(ids, VALUE_VAR)]))


def _check_levels(depth: int) -> None:
    if depth > MAX_LEVELS:
        raise TooDeep(depth)


def creates_optionals(functions: frozenset[str]) -> bool:
    """True if an expression calling `functions` makes optionals."""
    return not functions.isdisjoint(OPTIONAL_SOURCES)


MAX_LEVELS: Final = 8
"""More levels never fit the engine's protobuf reader (about fifteen messages per level, a
hundred in all); asking for more is refused before the program is built."""


class TooDeep(Exception):
    """A walk would need more levels than the engine can read; the engine adapter turns it
    into a compile or evaluation error."""


def container_depths(tree: Tree) -> dict[int, int]:
    """For every node, how many lists and maps its value can nest an optional in.

    A list or map literal adds one level to its elements; a `cel.@mapInsert` (the step of
    `transformMap`) one to the values it inserts; a variable has the depth of what it is
    bound to (a comprehension's accumulator, of its initial value and its step); everything
    else at most the depth of its operands. CEL has no recursion and a step cannot read its
    accumulator except to append to it, so this bounds every value the expression makes.
    `U` and `H` need that many levels (below the last, only the value itself is looked at).
    """
    depths: dict[int, int] = {}
    _depth(tree.root, {}, depths)
    return depths


def _depth(node: Node, scope: dict[str, int], depths: dict[int, int]) -> int:
    kind = node.kind
    if isinstance(kind, Ident):
        found = scope.get(kind.name, 0)
    elif isinstance(kind, Comprehension):
        found = _loop_depth(kind, scope, depths)
    else:
        parts = [_depth(child, scope, depths) for child in children(node)]
        found = max(parts, default=0)
        if isinstance(kind, ListLit) or (isinstance(kind, StructLit) and not kind.message_name):
            found += 1
        elif isinstance(kind, Call) and kind.function == MAP_INSERT and len(parts) == 3:
            found = max(parts[0], parts[2] + 1)
    depths[node.id] = found
    return found


def _loop_depth(loop: Comprehension, scope: dict[str, int], depths: dict[int, int]) -> int:
    inner = dict(scope)
    element = _depth(loop.iter_range, scope, depths)
    inner[loop.iter_var] = element
    if loop.iter_var2:
        inner[loop.iter_var2] = element
    inner[loop.accu_var] = _depth(loop.accu_init, scope, depths)
    for _ in range(2):  # the step appends to the accumulator: one round settles it
        step = _depth(loop.loop_step, inner, depths)
        inner[loop.accu_var] = max(inner[loop.accu_var], step)
    _depth(loop.loop_condition, inner, depths)
    return _depth(loop.result, inner, depths)


def _fail(message: str) -> Any:
    raise ValueError(message)


RUNTIME_OVERLOADS: Final = (Overload(FAIL, "kro_fail_string", ("string",), "dyn", _fail),)
"""The evaluation environment's `kro.@fail`: the error a guard raises."""
