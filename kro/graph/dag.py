"""kro.graph.dag: the dependency graph of an RGD's resources, and the orders derived from it.

Vertices are resource ids (or SimpleSchema type names); an edge `a -> b` means *a depends on b*.
Three orders come out of it, each with observable upstream behaviour:

* `topological_sort` — processing order and `status.topologicalOrder`. Kahn's algorithm whose
  ready set is a min-heap on (declaration index, id): among the nodes that are ready, the one
  declared earliest goes first (G-16, N-08). Declared `[b -> a, a, c]` gives `[a, b, c]`.
* `reverse_topological_layers` / `apply_orders` — deletion waves persisted in the
  `internal.kro.run/apply-order` annotation: layer 0 holds the nodes nothing depends on, and
  `order = number of layers - layer index`, so dependencies get lower numbers (G-17, N-09).
* `topological_layers` — level sets from the dependency side (layer 0 depends on nothing), for
  callers that want to process a wave at a time.

Cycles are reported with the path that closes them, `graph contains a cycle: a -> b -> a`
(G-15), found by a depth-first search that visits vertices and their dependencies in
declaration order, so the reported cycle is deterministic.

    DAGError (GraphError)
    ├── CycleError            the graph has a cycle; `.cycle` holds the path
    ├── SelfReferenceError    a vertex lists itself as a dependency
    ├── UnknownVertexError    an edge names a vertex that was never added
    └── DuplicateVertexError  a vertex id was added twice
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence

from kro.graph.errors import GraphError


class DAGError(GraphError):
    """The graph cannot be built or ordered as given; the RGD must change, retrying won't help."""


class CycleError(DAGError):
    """The dependencies form a cycle; `cycle` starts and ends with the same vertex."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle: tuple[str, ...] = tuple(cycle)
        super().__init__(f"graph contains a cycle: {' -> '.join(self.cycle)}")


class SelfReferenceError(DAGError):
    """A vertex depends on itself (G-14)."""

    def __init__(self, vertex: str) -> None:
        self.vertex = vertex
        super().__init__("self references are not allowed", resource_id=vertex)


class UnknownVertexError(DAGError):
    """An edge names a vertex that is not in the graph."""

    def __init__(self, vertex: str) -> None:
        self.vertex = vertex
        super().__init__(f"node {vertex} does not exist", resource_id=vertex)


class DuplicateVertexError(DAGError):
    """The same vertex id was added twice."""

    def __init__(self, vertex: str) -> None:
        self.vertex = vertex
        super().__init__(f"node {vertex} already exists", resource_id=vertex)


class DirectedAcyclicGraph:
    """Vertices with a declaration index and their dependency edges.

    Invariants: every edge endpoint is a vertex; `_dependents` is the exact reverse of
    `_dependencies`; no vertex depends on itself. Cycles are allowed while building and
    reported by the ordering methods (and `find_cycle`).
    """

    __slots__ = ("_dependencies", "_dependents", "_order")

    def __init__(self) -> None:
        self._order: dict[str, int] = {}
        self._dependencies: dict[str, set[str]] = {}
        self._dependents: dict[str, set[str]] = {}

    def add_vertex(self, vertex: str, order: int | None = None) -> None:
        """Add a vertex; `order` is its declaration index (default: insertion position)."""
        if vertex in self._order:
            raise DuplicateVertexError(vertex)
        self._order[vertex] = len(self._order) if order is None else order
        self._dependencies[vertex] = set()
        self._dependents[vertex] = set()

    def add_dependencies(self, vertex: str, dependencies: Iterable[str]) -> None:
        """Record that `vertex` depends on each of `dependencies`; all-or-nothing."""
        if vertex not in self._order:
            raise UnknownVertexError(vertex)
        wanted = list(dependencies)
        for dependency in wanted:
            if dependency not in self._order:
                raise UnknownVertexError(dependency)
            if dependency == vertex:
                raise SelfReferenceError(vertex)
        for dependency in wanted:
            self._dependencies[vertex].add(dependency)
            self._dependents[dependency].add(vertex)

    def __contains__(self, vertex: object) -> bool:
        return vertex in self._order

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[str]:
        return iter(self.vertices)

    def _key(self, vertex: str) -> tuple[int, str]:
        return (self._order[vertex], vertex)

    def _declared(self, vertices: Iterable[str]) -> list[str]:
        return sorted(vertices, key=self._key)

    @property
    def vertices(self) -> list[str]:
        """All vertices in declaration order."""
        return self._declared(self._order)

    def order_of(self, vertex: str) -> int:
        """The declaration index the vertex was added with."""
        return self._order[vertex]

    def dependencies_of(self, vertex: str) -> list[str]:
        """What `vertex` depends on, in declaration order."""
        return self._declared(self._dependencies[vertex])

    def dependents_of(self, vertex: str) -> list[str]:
        """What depends on `vertex`, in declaration order."""
        return self._declared(self._dependents[vertex])

    def find_cycle(self) -> list[str] | None:
        """A cycle as a path `[a, b, ..., a]` along dependency edges, or None if acyclic."""
        finished: set[str] = set()
        for start in self.vertices:
            if start not in finished:
                cycle = self._cycle_from(start, finished)
                if cycle is not None:
                    return cycle
        return None

    def _cycle_from(self, start: str, finished: set[str]) -> list[str] | None:
        """Iterative DFS from `start`; `path` is the recursion stack of the recursive form."""
        path = [start]
        on_path = {start}
        pending = [iter(self.dependencies_of(start))]
        while pending:
            dependency = next(pending[-1], None)
            if dependency is None:
                done = path.pop()
                on_path.discard(done)
                finished.add(done)
                pending.pop()
                continue
            if dependency in on_path:
                return [*path[path.index(dependency) :], dependency]
            if dependency not in finished:
                path.append(dependency)
                on_path.add(dependency)
                pending.append(iter(self.dependencies_of(dependency)))
        return None

    def _raise_on_cycle(self) -> None:
        cycle = self.find_cycle()
        if cycle is not None:
            raise CycleError(cycle)

    def topological_sort(self) -> list[str]:
        """Dependencies before dependents; ties broken by declaration order (G-16)."""
        self._raise_on_cycle()
        waiting = {v: len(deps) for v, deps in self._dependencies.items()}
        ready = [self._key(v) for v, count in waiting.items() if count == 0]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            _, vertex = heapq.heappop(ready)
            order.append(vertex)
            for dependent in self._dependents[vertex]:
                waiting[dependent] -= 1
                if waiting[dependent] == 0:
                    heapq.heappush(ready, self._key(dependent))
        return order

    def _layers(self, edges: dict[str, set[str]], reverse: dict[str, set[str]]) -> list[list[str]]:
        """Peel vertices whose `edges` all point into earlier layers."""
        self._raise_on_cycle()
        remaining = {v: len(targets) for v, targets in edges.items()}
        layer = self._declared(v for v, count in remaining.items() if count == 0)
        layers: list[list[str]] = []
        while layer:
            layers.append(layer)
            following: list[str] = []
            for vertex in layer:
                for source in reverse[vertex]:
                    remaining[source] -= 1
                    if remaining[source] == 0:
                        following.append(source)
            layer = self._declared(following)
        return layers

    def topological_layers(self) -> list[list[str]]:
        """Level sets: layer 0 depends on nothing; layer k only on layers < k."""
        return self._layers(self._dependencies, self._dependents)

    def reverse_topological_layers(self) -> list[list[str]]:
        """Level sets from the other end: layer 0 has no dependents (G-17)."""
        return self._layers(self._dependents, self._dependencies)

    def apply_orders(self) -> dict[str, int]:
        """Deletion wave per vertex: `layers - layer index`, dependencies lowest (G-17, N-09).

        Ex: b->a, c->a, d->{b,c} gives a=1, b=2, c=2, d=3; isolated vertices get the maximum.
        """
        layers = self.reverse_topological_layers()
        return {v: len(layers) - index for index, layer in enumerate(layers) for v in layer}
