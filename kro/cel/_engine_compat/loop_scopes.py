"""_engine_compat.loop_scopes: which loops of a program can run as evaluations of their own.

The engine stops an evaluation after 10,000 comprehension iterations in total, and nested
loops multiply: `claims.filter(c, claims.exists(d, d.priority > c.priority))` over 150
claims needs 22,500. Upstream (cel-go) has no such cap. `split` evaluates such a program
again with each inner loop moved into an evaluation of its own, so that no single engine
evaluation runs more than one loop's iterations. This module decides which loops can move,
from the program's tree and the checker's types, without changing any result:

- *the values a moved loop reads from the loops around it* never cross into Python: they
  are re-derived in the loop's own evaluation, from the bound variables, by evaluating the
  outer loop's range again and indexing it. Only the position crosses: a list index or a map
  key, a scalar that converts both ways exactly. Maps cannot cross at all (their iteration
  order changes on the way back into the engine). A `cel.bind` variable is re-derived by
  evaluating its initialiser again. So a loop can move when the ranges and initialisers it
  depends on are *loop-free* (evaluating them again costs no iteration and no cost-limit
  unit, and reproduces an error exactly);
- *its result* does cross back: a moved loop's type must be one whose values convert both
  ways exactly: scalars other than uint, timestamps and durations (which lose their type or
  their nanoseconds), lists of them, library values (quantities, semvers, ...). A `dyn` type
  also qualifies if nothing in the expression makes a uint or an optional (the runtime then
  checks each value before it crosses: `split`).

A loop's accumulator (other than `cel.bind`'s) depends on every earlier iteration and is
never re-derived; a loop reading one stays where it is. So do loops that read a variable
whose position variable another loop in between shadows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from kro.cel._engine_compat import instrument
from kro.cel._engine_compat.checked_types import contains
from kro.cel._engine_compat.optionals import creates_optionals
from kro.cel.checked_ast import Call, Comprehension, Ident, ListLit, Node, Tree, children, walk
from kro.cel.opaque import MESSAGE_CLASSES
from kro.cel.types import CelType

Role = Literal["iter", "iter2", "accu"]
Mode = Literal["two_var", "map_key", "list", "dyn"]
"""How a loop's iteration variable is found again in a moved loop's evaluation:

- two_var: the loop already has a position variable (index or key), the element is
  `range[position]`;
- map_key: a one-variable loop over a map: its variable is the key, which crosses itself;
- list: a one-variable loop over a list becomes a two-variable one with a fresh index
  variable, the element is `range[index]`;
- dyn: a one-variable loop over a `dyn` range: both, chosen at run time by the range's type.
"""

_SCALARS: Final = frozenset({"bool", "int", "double", "string", "bytes", "null"})
_KEY_KINDS: Final = frozenset({"string", "int", "bool"})


@dataclass(frozen=True, slots=True)
class Binder:
    """A variable a comprehension binds: `loop` is its node id."""

    loop: int
    role: Role


@dataclass(slots=True)
class Loop:
    """One comprehension: `depth` counts the comprehensions around it, `scope` is what
    names mean where it is evaluated (its range and initialiser are evaluated there)."""

    node: Node
    kind: Comprehension
    depth: int
    is_bind: bool
    scope: dict[str, Binder]
    per_iteration: bool
    """It sits in the condition or step of another (non-bind) loop: it runs once per
    iteration of that loop, which is how iterations multiply."""


@dataclass(slots=True)
class Needs:
    """What a moved loop's evaluation must bind before its body: per outer loop (by id),
    the roles of its variables it reads, directly or to re-derive another one."""

    roles: dict[int, set[Role]] = field(default_factory=dict)


@dataclass(slots=True)
class Analysis:
    """The loops of a program and the ones that can move (`moved`: loop id -> its needs)."""

    loops: dict[int, Loop]
    modes: dict[int, Mode]
    moved: dict[int, Needs]
    walk_results: dict[int, bool]
    """Per moved loop: its result type involves `dyn`, so each value is checked at run
    time before it crosses back."""

    def atom(self, loop: int) -> str:
        """The variable holding loop `loop`'s position (index or key) where it runs."""
        info = self.loops[loop]
        mode = self.modes[loop]
        if mode in ("two_var", "map_key"):
            return info.kind.iter_var
        return f"@kro_k{loop}"

    def rewritten(self) -> set[int]:
        """One-variable loops that need a position variable of their own where they run."""
        return {
            loop
            for needs in self.moved.values()
            for loop in needs.roles
            if not self.loops[loop].is_bind and self.modes[loop] in ("list", "dyn")
        }


def source(loop: Loop, mode: Mode | None, role: Role) -> Node | None:
    """What a variable of `loop` is re-derived from, if it needs more than its position:
    a `cel.bind` initialiser, or the range the position indexes."""
    if loop.is_bind:
        return loop.kind.accu_init
    if mode == "map_key" or (mode == "two_var" and role == "iter"):
        return None
    return loop.kind.iter_range


def is_bind(kind: Comprehension) -> bool:
    """`cel.bind` expands to a comprehension over `[]` (`kro.@bind()` once instrumented)."""
    loop_range = kind.iter_range.kind
    if isinstance(loop_range, ListLit):
        return not loop_range.elements
    return (
        isinstance(loop_range, Call)
        and loop_range.function == instrument.BIND
        and loop_range.target is None
        and not loop_range.args
    )


class _Scopes:
    """Every identifier resolved to the comprehension variable it reads (or to a bound
    variable: None), and per comprehension the variables it reads from outside itself."""

    def __init__(self, root: Node) -> None:
        self.loops: dict[int, Loop] = {}
        self.resolved: dict[int, Binder | None] = {}
        self.free: dict[int, set[Binder]] = {}
        self._stack: list[int] = []
        self._bodies = 0  # loop conditions and steps around the node being visited
        self._visit(root, {})

    def _visit(self, node: Node, scope: dict[str, Binder]) -> None:
        kind = node.kind
        if isinstance(kind, Ident):
            binder = scope.get(kind.name)
            self.resolved[node.id] = binder
            if binder is not None:
                position = self._stack.index(binder.loop)
                for loop in self._stack[position + 1 :]:
                    self.free[loop].add(binder)
            return
        if not isinstance(kind, Comprehension):
            for child in children(node):
                self._visit(child, scope)
            return
        binding = is_bind(kind)
        self.loops[node.id] = Loop(
            node, kind, len(self._stack), binding, dict(scope), self._bodies > 0
        )
        self.free[node.id] = set()
        self._stack.append(node.id)
        self._visit(kind.iter_range, scope)
        self._visit(kind.accu_init, scope)
        accu = {kind.accu_var: Binder(node.id, "accu")}
        inner = {**scope, **accu}
        if kind.iter_var:
            inner[kind.iter_var] = Binder(node.id, "iter")
        if kind.iter_var2:
            inner[kind.iter_var2] = Binder(node.id, "iter2")
        self._bodies += not binding
        self._visit(kind.loop_condition, inner)
        self._visit(kind.loop_step, inner)
        self._bodies -= not binding
        self._visit(kind.result, {**scope, **accu})
        self._stack.pop()


class _Analyzer:
    def __init__(self, tree: Tree, types: Mapping[int, CelType], pinned: frozenset[int]) -> None:
        self.scopes = _Scopes(tree.root)
        self.types = types
        self.pinned = pinned
        functions = frozenset(n.kind.function for n in walk(tree.root) if isinstance(n.kind, Call))
        self.dyn_ok = not creates_optionals(functions) and not any(
            contains(t, "uint") or contains(t, "optional") for t in types.values()
        )
        self._free: dict[int, frozenset[Binder]] = {}
        self._loop_free: dict[int, bool] = {}
        self._derivable: dict[Binder, bool] = {}
        self.modes: dict[int, Mode | None] = {
            loop_id: self._mode(loop)
            for loop_id, loop in self.scopes.loops.items()
            if not loop.is_bind
        }

    # ------------------------------------------------------------------------- types

    def crossable(self, cel_type: CelType | None) -> tuple[bool, bool]:
        """(the values of `cel_type` cross into Python and back exactly, they must be checked
        at run time because the type says `dyn`)."""
        if cel_type is None:
            return False, False
        kind = cel_type.kind
        if kind in _SCALARS:
            return True, False
        if kind == "list":
            return self.crossable(cel_type.params[0] if cel_type.params else None)
        if kind == "opaque":
            return cel_type.name in MESSAGE_CLASSES and not cel_type.params, False
        if kind == "dyn":
            return self.dyn_ok, True
        return False, False

    def _mode(self, loop: Loop) -> Mode | None:
        """How the loop's position crosses (None: it cannot)."""
        range_type = self.types.get(loop.kind.iter_range.id)
        kind = "dyn" if range_type is None else range_type.kind
        if kind == "list":
            position_ok = True
        elif kind == "map":
            key = range_type.params[0] if range_type and range_type.params else None
            position_ok = key is not None and (
                key.kind in _KEY_KINDS or (key.kind == "dyn" and self.dyn_ok)
            )
        else:
            position_ok = kind == "dyn" and self.dyn_ok
        if not position_ok:
            return None
        if loop.kind.iter_var2:
            return "two_var"
        if kind == "map":
            return "map_key"
        return "list" if kind == "list" else "dyn"

    # ------------------------------------------------------------------ derivations

    def free(self, node: Node) -> frozenset[Binder]:
        """The comprehension variables `node` reads that are bound outside it."""
        found = self._free.get(node.id)
        if found is None:
            inside = {n.id for n in walk(node) if isinstance(n.kind, Comprehension)}
            found = frozenset(
                b
                for n in walk(node)
                if isinstance(n.kind, Ident)
                and (b := self.scopes.resolved.get(n.id)) is not None
                and b.loop not in inside
            )
            self._free[node.id] = found
        return found

    def loop_free(self, node: Node) -> bool:
        found = self._loop_free.get(node.id)
        if found is None:
            found = self._loop_free[node.id] = not any(
                isinstance(n.kind, Comprehension) and not is_bind(n.kind) for n in walk(node)
            )
        return found

    def sources(self, binder: Binder) -> Node | None:
        return source(self.scopes.loops[binder.loop], self.modes.get(binder.loop), binder.role)

    def derivable(self, binder: Binder) -> bool:
        known = self._derivable.get(binder)
        if known is not None:
            return known
        self._derivable[binder] = False  # a cycle cannot happen; be safe if it did
        loop = self.scopes.loops[binder.loop]
        if loop.is_bind:
            ok = binder.role == "accu"
        else:
            ok = binder.role != "accu" and self.modes.get(binder.loop) is not None
        source = self.sources(binder) if ok else None
        if source is not None:
            ok = self.loop_free(source) and all(self.derivable(b) for b in self.free(source))
        self._derivable[binder] = ok
        return ok

    # --------------------------------------------------------------------- moving

    def needs(self, loop_id: int) -> Needs | None:
        """What moving loop `loop_id` needs, or None if it cannot move."""
        needs = Needs()
        pending = list(self.scopes.free[loop_id])
        while pending:
            binder = pending.pop()
            if not self.derivable(binder):
                return None
            roles = needs.roles.setdefault(binder.loop, set())
            if binder.role in roles:
                continue
            roles.add(binder.role)
            source = self.sources(binder)
            if source is not None:
                pending.extend(self.free(source))
        scope = self.scopes.loops[loop_id].scope
        for outer in needs.roles:
            if self.scopes.loops[outer].is_bind:
                continue
            if self.modes[outer] in ("two_var", "map_key"):
                # The position variable is passed by name where the loop sits.
                name = self.scopes.loops[outer].kind.iter_var
                if scope.get(name) != Binder(outer, "iter"):
                    return None
        return needs

    def analysis(self) -> Analysis:
        moved: dict[int, Needs] = {}
        walks: dict[int, bool] = {}
        for loop_id, loop in self.scopes.loops.items():
            if loop.is_bind or not loop.per_iteration or loop_id in self.pinned:
                continue
            ok, walk_result = self.crossable(self.types.get(loop_id))
            if not ok:
                continue
            needs = self.needs(loop_id)
            if needs is None:
                continue
            moved[loop_id] = needs
            walks[loop_id] = walk_result
        modes = {k: v for k, v in self.modes.items() if v is not None}
        return Analysis(self.scopes.loops, modes, moved, walks)


def analyze(
    tree: Tree, types: Mapping[int, CelType], pinned: frozenset[int] = frozenset()
) -> Analysis:
    """Which loops of the program `tree` (checked types `types`, by node id) can move;
    `pinned` loops stay where they are."""
    return _Analyzer(tree, types, pinned).analysis()
