"""_engine_compat.loop_scopes: which parts of a program can run as evaluations of their own.

The engine stops an evaluation after 10,000 comprehension iterations in total, and nested
loops multiply: `claims.filter(c, claims.exists(d, d.priority > c.priority))` over 150
claims needs 22,500. Upstream (cel-go) has no such cap. `split` evaluates such a program
again with the loops that run once per iteration of another loop *moved* into evaluations of
their own, so that no single engine evaluation runs more than one loop's iterations. This
module decides what can move, from the program's tree and the checker's types, so that no
result changes:

- *what moves*: each loop inside another loop's condition or step, or failing that the
  nearest expression around it (still inside that loop's body) that can: in
  `items.map(c, items.filter(d, d.p > c.p).size())` the `filter` returns objects, which
  cannot cross, and its `size()` moves instead;
- *the values a moved expression reads from the loops around it* never cross into Python:
  they are re-derived in its own evaluation, from the bound variables, by evaluating the
  outer loop's range again and indexing it. Only the position crosses: a list index or a map
  key, a scalar that converts both ways exactly. A `cel.bind` variable is re-derived by
  evaluating its initialiser again. So an expression can move when the ranges and
  initialisers it depends on are *loop-free* (evaluating them again costs no iteration and no
  cost-limit unit, and reproduces an error exactly);
- *its result* does cross back: its type must be one whose values convert both ways
  exactly: scalars other than uint, timestamps and durations (which lose their type or their
  nanoseconds), lists of them, library values (quantities, semvers, ...). Maps never do (the
  engine iterates a map converted back in another order). `dyn` qualifies if nothing in the
  expression makes a uint or an optional; the runtime then checks each value before it
  crosses and refuses a map (`split`), and that expression is pinned in place.

A loop's accumulator (other than `cel.bind`'s) depends on every earlier iteration and is
never re-derived; an expression reading one stays where it is. So does one that reads a
position variable that another loop in between shadows.
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
"""How a loop's iteration variable is found again in a moved expression's evaluation:

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
    """One comprehension: `depth` counts the comprehensions around it."""

    node: Node
    kind: Comprehension
    depth: int
    is_bind: bool


@dataclass(slots=True)
class Needs:
    """What a moved expression's evaluation binds before it: per outer loop (by id), the
    roles of its variables the expression reads, directly or to re-derive another one."""

    roles: dict[int, set[Role]] = field(default_factory=dict)


@dataclass(slots=True)
class Analysis:
    """The loops of a program and what moves (`moved`: node id -> its needs)."""

    loops: dict[int, Loop]
    modes: dict[int, Mode]
    moved: dict[int, Needs]
    checked_results: set[int]
    """Moved expressions typed `dyn` somewhere: each value is checked at run time before
    it crosses back."""

    def atom(self, loop: int) -> str:
        """The variable holding loop `loop`'s position (index or key) where it runs."""
        if self.modes[loop] in ("two_var", "map_key"):
            return self.loops[loop].kind.iter_var
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
    """Every identifier resolved to the comprehension variable it reads (None: a bound
    variable); per node its parent, the names it sees, and the loop whose condition or step
    it is in (None: it runs once per evaluation)."""

    def __init__(self, root: Node) -> None:
        self.loops: dict[int, Loop] = {}
        self.resolved: dict[int, Binder | None] = {}
        self.parent: dict[int, int] = {}
        self.scope: dict[int, dict[str, Binder]] = {}
        self.body_of: dict[int, int | None] = {}
        self._depth = 0
        self._bodies: list[int] = []
        self._visit(root, {})

    def _visit(self, node: Node, scope: dict[str, Binder]) -> None:
        self.scope[node.id] = scope
        self.body_of[node.id] = self._bodies[-1] if self._bodies else None
        kind = node.kind
        if isinstance(kind, Ident):
            self.resolved[node.id] = scope.get(kind.name)
            return
        for child in children(node):
            self.parent[child.id] = node.id
        if not isinstance(kind, Comprehension):
            for child in children(node):
                self._visit(child, scope)
            return
        binding = is_bind(kind)
        self.loops[node.id] = Loop(node, kind, self._depth, binding)
        self._depth += 1
        self._visit(kind.iter_range, scope)
        self._visit(kind.accu_init, scope)
        accu = {kind.accu_var: Binder(node.id, "accu")}
        inner = {**scope, **accu}
        if kind.iter_var:
            inner[kind.iter_var] = Binder(node.id, "iter")
        if kind.iter_var2:
            inner[kind.iter_var2] = Binder(node.id, "iter2")
        if not binding:
            self._bodies.append(node.id)
        self._visit(kind.loop_condition, inner)
        self._visit(kind.loop_step, inner)
        if not binding:
            self._bodies.pop()
        self._visit(kind.result, {**scope, **accu})
        self._depth -= 1


class _Analyzer:
    def __init__(self, tree: Tree, types: Mapping[int, CelType], pinned: frozenset[int]) -> None:
        self.scopes = _Scopes(tree.root)
        self.nodes = {n.id: n for n in walk(tree.root)}
        self.types = types
        self.pinned = pinned
        functions = frozenset(
            n.kind.function for n in self.nodes.values() if isinstance(n.kind, Call)
        )
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
        self._derivable[binder] = False  # sources are outside their loop: no cycle
        loop = self.scopes.loops[binder.loop]
        if loop.is_bind:
            ok = binder.role == "accu"
        else:
            ok = binder.role != "accu" and self.modes.get(binder.loop) is not None
        source_node = self.sources(binder) if ok else None
        if source_node is not None:
            ok = self.loop_free(source_node) and all(
                self.derivable(b) for b in self.free(source_node)
            )
        self._derivable[binder] = ok
        return ok

    # --------------------------------------------------------------------- moving

    def needs(self, node: Node) -> Needs | None:
        """What moving `node` needs, or None if it cannot move."""
        needs = Needs()
        pending = list(self.free(node))
        while pending:
            binder = pending.pop()
            if not self.derivable(binder):
                return None
            roles = needs.roles.setdefault(binder.loop, set())
            if binder.role in roles:
                continue
            roles.add(binder.role)
            source_node = self.sources(binder)
            if source_node is not None:
                pending.extend(self.free(source_node))
        scope = self.scopes.scope[node.id]
        for outer in needs.roles:
            if not self.scopes.loops[outer].is_bind and self.modes[outer] in (
                "two_var",
                "map_key",
            ):
                # The position variable is passed by its own name where `node` sits.
                name = self.scopes.loops[outer].kind.iter_var
                if scope.get(name) != Binder(outer, "iter"):
                    return None
        return needs

    def _candidates(self, loop_id: int) -> list[int]:
        """A loop run per iteration of another, then the expressions around it up to that
        loop's condition or step."""
        boundary = self.scopes.body_of[loop_id]
        out: list[int] = []
        node_id: int | None = loop_id
        while node_id is not None:
            out.append(node_id)
            node_id = self.scopes.parent.get(node_id)
            if node_id is None or node_id == boundary:
                break
            found = self.scopes.loops.get(node_id)
            if found is not None and not found.is_bind:
                break
        return out

    def _choose(
        self, candidates: list[int], moved: Mapping[int, Needs]
    ) -> tuple[int, Needs, bool] | None:
        """The first candidate that can move, or a later one whose type needs no check at
        run time (`items.filter(...).size()` over `dyn` items: the `filter` would hand back
        the items, which the check refuses; its `size()` crosses as it is)."""
        first: tuple[int, Needs, bool] | None = None
        for node_id in candidates:
            if node_id in moved:
                return None
            if node_id in self.pinned:
                continue
            ok, check = self.crossable(self.types.get(node_id))
            needs = self.needs(self.nodes[node_id]) if ok else None
            if needs is None:
                continue
            if not check:
                return node_id, needs, check
            first = first or (node_id, needs, check)
        return first

    def analysis(self) -> Analysis:
        moved: dict[int, Needs] = {}
        checked: set[int] = set()
        for loop_id, loop in self.scopes.loops.items():
            if loop.is_bind or self.scopes.body_of[loop_id] is None:
                continue
            chosen = self._choose(self._candidates(loop_id), moved)
            if chosen is not None:
                node_id, needs, check = chosen
                moved[node_id] = needs
                if check:
                    checked.add(node_id)
        modes = {k: v for k, v in self.modes.items() if v is not None}
        return Analysis(self.scopes.loops, modes, moved, checked)


def analyze(
    tree: Tree, types: Mapping[int, CelType], pinned: frozenset[int] = frozenset()
) -> Analysis:
    """What of the program `tree` (checked types `types`, by node id) moves; `pinned`
    expressions stay where they are."""
    return _Analyzer(tree, types, pinned).analysis()
