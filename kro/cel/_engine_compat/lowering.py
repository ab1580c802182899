"""_engine_compat.lowering: rewrites of a checked expression for semantics the engine lacks.

The checker knows what every node is (`checked_types`); the runtime, which evaluates plain
dicts and lists, does not. Where upstream's meaning depends on a type the runtime cannot
see, the program is rewritten once at compile time (on the serialized tree, `rewrite`):

- *field names* [C-16]: a property whose name is not a CEL identifier or is a CEL reserved
  word is declared under Kubernetes' escaped name (`__in__`, `a__dash__b`, see
  `types.cel_field_names`); the selection is renamed back to the property, which is the key
  in the data (`o.__in__` reads `o["in"]`);
- *equality of library values*: `==`, `!=` and `in` where a Quantity or Semver may meet
  another (typed so, or `dyn` in an expression that makes them) become `kro.@equals`,
  `kro.@notEquals`, `kro.@in` (`equality`): numeric for quantities, by precedence for
  semvers, as their cel-go types define `Equal`;
- *list types* [C-34]: `==` / `!=` whose left side is a field declared
  `x-kubernetes-list-type: set` or `map` compare as a set or as a map keyed by
  `x-kubernetes-list-map-keys`, as Kubernetes' unstructured list values do;
- *`transformMap` / `transformMapEntry`*: the loop accumulates a list of entries in the
  engine and builds the map once, in Python, at the end (`lib_comprehensions`), instead
  of handing the growing map to Python on every step;
- *`sum()` of an empty list*: the zero of the element type the checker chose
  (`0.0` for `list(double)`), where the runtime alone would answer the integer 0;
- *optionals at the Python boundary*: an argument of a Python-implemented function that may
  hold an optional (typed optional, or `dyn` in an expression that makes optionals) is
  guarded (`optionals.guarded`) so the call fails instead of crashing the process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.cel import equality, lib_quantity, lib_semver
from kro.cel._engine_compat.checked_types import CheckedFacts, checked_facts, contains
from kro.cel._engine_compat.lib_comprehensions import MAP_FROM_MAPS, MAP_FROM_PAIRS, MAP_INSERT
from kro.cel._engine_compat.optionals import Fragments, guarded
from kro.cel._engine_compat.rewrite import (
    ACCU_INIT,
    CALL,
    COMPREHENSION,
    RESULT,
    SELECT,
    SELECT_FIELD,
    Ids,
    bind,
    call,
    call_parts,
    const_double,
    const_int,
    const_string,
    const_uint,
    empty_list,
    expr_of,
    ident,
    list_of,
    map_fields,
    max_id,
    replace_root,
    root_expr,
    transform,
)
from kro.cel.checked_ast import (
    Call,
    Comprehension,
    Const,
    Ident,
    Node,
    Select,
    StructLit,
    Tree,
    children,
    walk,
)
from kro.cel.library import Overload
from kro.cel.types import CelType, cel_field_names

EQUALS: Final = "kro.@equals"
NOT_EQUALS: Final = "kro.@notEquals"
IN: Final = "kro.@in"
SET_LIST_EQUALS: Final = "kro.@setListEquals"
MAP_LIST_EQUALS: Final = "kro.@mapListEquals"
_EQ, _NE, _IN_OP, _NOT = "_==_", "_!=_", "@in", "!_"
_OPTIONAL_SELECT: Final = "_?._"
_COMPARISONS: Final = frozenset({_EQ, _NE, _IN_OP})
_LIBRARY_TYPES: Final = frozenset({"kubernetes.Quantity", "kubernetes.Semver"})
_LIBRARY_MAKERS: Final = frozenset(
    o.function
    for o in (*lib_quantity.OVERLOADS, *lib_semver.OVERLOADS)
    if o.result in _LIBRARY_TYPES
)
_SUM_ZERO: Final[Mapping[str, Callable[[Ids], bytes]]] = {
    "list_uint_sum_uint": lambda ids: const_uint(ids, 0),
    "list_double_sum_double": lambda ids: const_double(ids, 0.0),
    "list_duration_sum_duration": lambda ids: call(ids, "duration", [const_string(ids, "0s")]),
}
_SUM_VAR: Final = "kro_sum__"


def lower(
    serialized: bytes,
    tree: Tree,
    *,
    functions: frozenset[str],
    messages: Mapping[str, Mapping[str, Any]],
    python_functions: frozenset[str],
    fragments: Fragments,
    list_types: bool,
    creates_optionals: bool,
    depths: Mapping[int, int],
) -> bytes:
    """The program to run for a checked expression (`serialized`, decoded as `tree`):
    unchanged unless one of the rewrites applies.

    functions: every function it calls. creates_optionals: it makes optionals
    (`optionals.creates_optionals`), so `dyn` arguments may hide one. depths:
    `optionals.container_depths` of the tree. list_types: some declared object has a
    set/map list field. Raises `optionals.TooDeep`.
    """
    calls_python = not functions.isdisjoint(python_functions)
    compares = not functions.isdisjoint(_COMPARISONS)
    wanted = (
        (calls_python and (creates_optionals or compares))
        or MAP_INSERT in functions
        or "sum" in functions
        or (list_types and compares)
        or (b"__" in serialized and _has_escaped_names(tree))
    )
    if not wanted:
        return serialized
    facts = checked_facts(serialized, messages)
    nodes = {n.id: n for n in walk(tree.root)}
    rules = _Rules(
        facts=facts,
        nodes=nodes,
        python_functions=python_functions,
        fragments=fragments,
        depths=depths,
        creates_optionals=creates_optionals,
        ids=Ids(max_id(root_expr(serialized))),
        map_loops=_map_loops(tree),
        makes_library_values=not functions.isdisjoint(_LIBRARY_MAKERS),
    )
    lowered = replace_root(serialized, lambda expr: transform(expr, rules.hook))
    return serialized if lowered == serialized else lowered


def _has_escaped_names(tree: Tree) -> bool:
    for node in walk(tree.root):
        kind = node.kind
        if isinstance(kind, Select) and "__" in kind.field:
            return True
        if isinstance(kind, Call) and kind.function == _OPTIONAL_SELECT:
            key = kind.args[1].kind if len(kind.args) == 2 else None
            if isinstance(key, Const) and isinstance(key.value, str) and "__" in key.value:
                return True
    return False


@dataclass(frozen=True, slots=True)
class _Rules:
    """The rewrites, as one post-order hook: decisions read the checked tree (`nodes`,
    `facts`), replacements are built from the already rewritten children (`payload`)."""

    facts: CheckedFacts
    nodes: Mapping[int, Node]
    python_functions: frozenset[str]
    fragments: Fragments
    depths: Mapping[int, int]
    creates_optionals: bool
    ids: Ids
    map_loops: Mapping[int, int]
    makes_library_values: bool

    def hook(self, node_id: int, kind: int, payload: bytes) -> bytes | None:
        node = self.nodes.get(node_id)
        if node is None:  # built by an earlier rewrite
            return None
        if kind == SELECT and isinstance(node.kind, Select):
            return self._select(node_id, node.kind, payload)
        if kind == COMPREHENSION and node_id in self.map_loops:
            return self._map_loop(node_id, payload, self.map_loops[node_id])
        if kind != CALL or not isinstance(node.kind, Call):
            return None
        original = node.kind
        function, target, args = call_parts(payload)
        if function == _OPTIONAL_SELECT:
            return self._optional_select(original, args)
        if function == MAP_INSERT and node_id in self.map_loops:
            return self._map_insert(original, args)
        if function in (_EQ, _NE):
            return self._equality(function, original, args)
        if function == _IN_OP and self._is_library_in(original):
            return self._python_call(IN, original.args, args)
        if function == "sum" and target is not None:
            return self._sum(node_id, target)
        if function in self.python_functions:
            return self._guard_call(node_id, payload, original)
        return None

    # ------------------------------------------------------------------ field names

    def _property(self, operand: Node, name: str) -> tuple[str, Mapping[str, Any]] | None:
        """The property (name, schema) that field `name` of `operand`'s object type reads."""
        cel_type = self.facts.types.get(operand.id)
        if cel_type is None or cel_type.kind != "object" or cel_type.schema is None:
            return None
        prop = cel_field_names(cel_type.schema).get(name)
        if prop is None:
            return None
        properties = cel_type.schema.get("properties")
        sub = properties.get(prop) if isinstance(properties, Mapping) else None
        return prop, sub if isinstance(sub, Mapping) else {}

    def _select(self, node_id: int, original: Select, payload: bytes) -> bytes | None:
        found = self._property(original.operand, original.field)
        if found is None or found[0] == original.field:
            return None
        renamed = map_fields(payload, lambda n, v: found[0].encode() if n == SELECT_FIELD else v)
        return expr_of(node_id, SELECT, renamed)

    def _optional_select(self, original: Call, args: list[bytes]) -> bytes | None:
        key = original.args[1].kind if len(original.args) == 2 else None
        if not isinstance(key, Const) or not isinstance(key.value, str):
            return None
        found = self._property(original.args[0], key.value)
        if found is None or found[0] == key.value:
            return None
        return call(self.ids, _OPTIONAL_SELECT, [args[0], const_string(self.ids, found[0])])

    # --------------------------------------------------------------------- equality

    def _mentions_library(self, operands: tuple[Node, ...]) -> bool:
        """True if an operand is typed with a Quantity or Semver in it, or is `dyn` in an
        expression that makes such values (they may hide there)."""
        types = [self.facts.types.get(o.id) for o in operands]
        if any(_is_library(t) for t in types):
            return True
        return self.makes_library_values and any(
            t is not None and contains(t, "dyn") for t in types
        )

    def _is_library_in(self, original: Call) -> bool:
        """`x in list` over library values (a map's keys are never library values)."""
        if len(original.args) != 2:
            return False
        container = self.facts.types.get(original.args[1].id)
        return (
            container is not None
            and container.kind == "list"
            and self._mentions_library(original.args)
        )

    def _equality(self, function: str, original: Call, args: list[bytes]) -> bytes | None:
        if len(original.args) != 2:
            return None
        list_type = self._list_type(original.args[0])
        if list_type is not None:
            kind, keys = list_type
            extra = [list_of(self.ids, [const_string(self.ids, k) for k in keys])] if keys else []
            name = MAP_LIST_EQUALS if kind == "map" else SET_LIST_EQUALS
            same = self._python_call(name, original.args, args, extra)
            return same if function == _EQ else call(self.ids, _NOT, [same])
        if self._mentions_library(original.args):
            return self._python_call(EQUALS if function == _EQ else NOT_EQUALS, original.args, args)
        return None

    def _list_type(self, left: Node) -> tuple[str, tuple[str, ...]] | None:
        """`("set", ())` or `("map", keys)` if `left` selects such a list field."""
        if not isinstance(left.kind, Select) or left.kind.test_only:
            return None
        found = self._property(left.kind.operand, left.kind.field)
        if found is None:
            return None
        schema = found[1]
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set":
            return "set", ()
        keys = schema.get("x-kubernetes-list-map-keys")
        if kind == "map" and isinstance(keys, list) and keys:
            return "map", tuple(str(k) for k in keys)
        return None

    # ------------------------------------------------------------------ map loops

    def _map_insert(self, original: Call, args: list[bytes]) -> bytes:
        """`cel.@mapInsert(acc, k, v)` -> `acc + [[k, v]]`; `(acc, m)` -> `acc + [m]`."""
        ids = self.ids
        name = "transformMap" if len(args) == 3 else "transformMapEntry"
        entry = [self._guard(name, o, a) for o, a in zip(original.args[1:], args[1:], strict=True)]
        element = list_of(ids, entry) if len(entry) == 2 else entry[0]
        return call(ids, "_+_", [args[0], list_of(ids, [element])])

    def _map_loop(self, node_id: int, payload: bytes, arity: int) -> bytes:
        """The loop's accumulator starts as `[]` and its result becomes the built map."""
        build = MAP_FROM_PAIRS if arity == 3 else MAP_FROM_MAPS

        def part(number: int, value: bytes) -> bytes:
            if number == ACCU_INIT:
                return empty_list(self.ids)
            if number == RESULT:
                return call(self.ids, build, [value])
            return value

        return expr_of(node_id, COMPREHENSION, map_fields(payload, part))

    # -------------------------------------------------------------------------- sum

    def _sum(self, node_id: int, target: bytes) -> bytes | None:
        overloads = self.facts.overloads.get(node_id, ())
        zero = next((_SUM_ZERO[o] for o in overloads if o in _SUM_ZERO), None)
        if zero is None:
            return None
        ids = self.ids
        empty = call(ids, _EQ, [call(ids, "size", [ident(ids, _SUM_VAR)]), const_int(ids, 0)])
        total = call(ids, "sum", target=ident(ids, _SUM_VAR))
        return bind(ids, _SUM_VAR, target, call(ids, "_?_:_", [empty, zero(ids), total]))

    # ------------------------------------------------------------ the Python boundary

    def _python_call(
        self,
        function: str,
        operands: tuple[Node, ...],
        args: list[bytes],
        extra: list[bytes] | None = None,
    ) -> bytes:
        guarded_args = [self._guard(function, o, a) for o, a in zip(operands, args, strict=True)]
        return call(self.ids, function, [*guarded_args, *(extra or [])])

    def _guard_call(self, node_id: int, payload: bytes, original: Call) -> bytes | None:
        function, target, args = call_parts(payload)
        operands = ((original.target,) if original.target is not None else ()) + original.args
        values = ([target] if target is not None else []) + args
        if len(operands) != len(values):
            return None
        skip = 1 if function == MAP_INSERT else 0  # the accumulator: built from guarded inserts
        guarded_values = [
            v if i < skip else self._guard(function, o, v)
            for i, (o, v) in enumerate(zip(operands, values, strict=True))
        ]
        if guarded_values == values:
            return None
        if target is not None:
            return call(self.ids, function, guarded_values[1:], target=guarded_values[0])
        return call(self.ids, function, guarded_values)

    def _guard(self, function: str, operand: Node, value: bytes) -> bytes:
        cel_type = self.facts.types.get(operand.id)
        if cel_type is None or not self._may_hold_optional(cel_type):
            return value
        levels = self.depths.get(operand.id, 0)
        return guarded(self.ids, self.fragments, value, function, levels)

    def _may_hold_optional(self, cel_type: CelType) -> bool:
        if contains(cel_type, "optional"):
            return True
        return self.creates_optionals and contains(cel_type, "dyn")


def _map_loops(tree: Tree) -> dict[int, int]:
    """The transformMap / transformMapEntry loops to rewrite: comprehension id -> arity of
    its `cel.@mapInsert` calls, and each such call id -> the same arity.

    A loop qualifies when it starts from `{}`, returns its accumulator, and its step only
    inserts into that accumulator with one arity (nested loops are looked at on their own:
    they have their own accumulator of the same name).
    """
    out: dict[int, int] = {}
    for node in walk(tree.root):
        loop = node.kind
        if not isinstance(loop, Comprehension):
            continue
        init, result = loop.accu_init.kind, loop.result.kind
        if not isinstance(init, StructLit) or init.message_name or init.entries:
            continue
        if not isinstance(result, Ident) or result.name != loop.accu_var:
            continue
        inserts = _inserts(loop.loop_step, loop.accu_var)
        arities = {len(c.args) for c in inserts.values()}
        if len(arities) != 1 or not arities <= {2, 3}:
            continue
        arity = arities.pop()
        out[node.id] = arity
        out.update(dict.fromkeys(inserts, arity))
    return out


def _inserts(step: Node, accumulator: str) -> dict[int, Call]:
    """The `cel.@mapInsert(accumulator, ...)` calls of a loop step, outside nested loops."""
    found: dict[int, Call] = {}
    stack = [step]
    while stack:
        node = stack.pop()
        kind = node.kind
        if isinstance(kind, Comprehension):
            continue
        if isinstance(kind, Call) and kind.function == MAP_INSERT:
            first = kind.args[0].kind if kind.args else None
            if isinstance(first, Ident) and first.name == accumulator:
                found[node.id] = kind
        stack.extend(children(node))
    return found


def _is_library(cel_type: CelType | None) -> bool:
    if cel_type is None:
        return False
    if cel_type.kind == "opaque" and cel_type.name in _LIBRARY_TYPES:
        return True
    return any(_is_library(p) for p in cel_type.params)


def _equality_overloads() -> tuple[Overload, ...]:
    return (
        Overload(EQUALS, "kro_equals", ("dyn", "dyn"), "bool", equality.equals),
        Overload(NOT_EQUALS, "kro_not_equals", ("dyn", "dyn"), "bool", equality.not_equals),
        Overload(IN, "kro_in_list", ("dyn", "list<dyn>"), "bool", equality.contains),
        Overload(
            SET_LIST_EQUALS, "kro_set_list_equals", ("list<dyn>", "list<dyn>"), "bool",
            equality.set_list_equal,
        ),
        Overload(
            MAP_LIST_EQUALS, "kro_map_list_equals", ("list<dyn>", "list<dyn>", "list<string>"),
            "bool", equality.map_list_equal,
        ),
    )  # fmt: skip


RUNTIME_OVERLOADS: Final = _equality_overloads()
"""The evaluation environment's implementations of the functions the rewrites call."""
