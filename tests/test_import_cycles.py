"""kro's modules import each other without a cycle, module by module.

The import-linter contract "no import cycles in kro" (pyproject.toml) checks siblings, each
package squashed into one node, so it cannot see a cycle that passes through a package's own
`__init__` (`kro.runtime` lazily re-exports its modules under TYPE_CHECKING: a module that
imported `from kro.runtime import X` would close one). This test walks the module graph itself.
Every import is an edge: at module level, inside a function, under TYPE_CHECKING.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import grimp
import pytest


class Cycle(NamedTuple):
    path: tuple[str, ...]
    """The shortest way around (`a`, `b`, `a`), from the tangle's first module by name."""
    tangle: frozenset[str]
    """Every module of the strongly connected component: all of them import each other."""


def cycles(graph: grimp.ImportGraph, package: str) -> list[Cycle]:
    """One cycle per strongly connected component of `package`'s modules."""
    modules = {m for m in graph.modules if m == package or m.startswith(package + ".")}
    found = []
    for component in _components(graph, modules):
        start = min(component)
        # Any path back from what `start` imports stays in its component, by definition.
        back = min(
            (
                chain
                for imported in graph.find_modules_directly_imported_by(start) & component
                if (chain := graph.find_shortest_chain(importer=imported, imported=start))
            ),
            key=lambda chain: (len(chain), chain),
        )
        found.append(Cycle((start, *back), frozenset(component)))
    return sorted(found)


def _components(graph: grimp.ImportGraph, modules: set[str]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively:
    the graph is deep enough to exhaust the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def successors(module: str) -> list[str]:
        return sorted(graph.find_modules_directly_imported_by(module) & modules)

    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(successors(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, pending = work[-1]
            following = next(pending, None)
            if following is not None:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(successors(following))))
                elif following in on_stack:
                    low[module] = min(low[module], index[following])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == module:
                        break
                if len(component) > 1:
                    components.append(component)
    return components


def _describe(graph: grimp.ImportGraph, cycle: Cycle) -> str:
    steps = []
    for importer, imported in itertools.pairwise(cycle.path):
        lines = sorted(
            d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)
        )
        steps.append(f"  {importer} -> {imported} (line {', '.join(map(str, lines))})")
    if others := sorted(cycle.tangle - set(cycle.path)):
        steps.append(f"  (tangled with it: {', '.join(others)})")
    return "\n".join(steps)


def test_kro_has_no_import_cycle() -> None:
    graph = grimp.build_graph("kro", cache_dir=None)
    found = cycles(graph, "kro")
    assert not found, "import cycles (move what both sides share into a lower module):\n" + (
        "\n\n".join(_describe(graph, cycle) for cycle in found)
    )


def _graph(*imports: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="")
    return graph


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        ([("p.a", "p.b"), ("p.b", "p.c")], []),
        ([("p.a", "p.b"), ("p.b", "p.a")], [("p.a", "p.b", "p.a")]),
        # Through the package's own __init__, which sibling checks squash away.
        (
            [("p", "p.client"), ("p.client", "p.opts"), ("p.opts", "p")],
            [("p", "p.client", "p.opts", "p")],
        ),
        # Two separate cycles, each named by its shortest way back.
        (
            [
                ("p.a", "p.b"),
                ("p.b", "p.c"),
                ("p.c", "p.a"),
                ("p.b", "p.a"),
                ("p.x", "p.y"),
                ("p.y", "p.x"),
            ],
            [("p.a", "p.b", "p.a"), ("p.x", "p.y", "p.x")],
        ),
        # Outside the package: not its cycle.
        ([("q.a", "q.b"), ("q.b", "q.a"), ("p.a", "q.a")], []),
    ],
    ids=["acyclic", "two-modules", "through-init", "two-cycles", "other-package"],
)
def test_cycles_are_found_and_named(
    imports: list[tuple[str, str]], expected: list[tuple[str, ...]]
) -> None:
    assert [cycle.path for cycle in cycles(_graph(*imports), "p")] == expected
