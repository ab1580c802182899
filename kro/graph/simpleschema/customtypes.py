"""kro.graph.simpleschema.customtypes: the order in which `spec.schema.types` can be built.

Custom types may reference each other (`Team: {lead: Person, members: "[]Person"}`). A type's
schema is inlined wherever it is used, so each type must be built after the types it names:
that is a topological order of the "references" graph, and a cycle makes inlining impossible
(S-12). Upstream iterates a Go map, so which type it blames for a cycle varies run to run; here
types are visited in declaration order, so the message is stable.

Public API:
    type_dependencies(name, definition) -> list[str]
        custom type names referenced by one definition (string alias or struct map), in document
        order; TypeSyntaxError/MarkerError from unparsable leaves, with field_path set
    build_order(dependencies) -> list[str]
        dependencies first; TypeSyntaxError `unknown type: X` for a name that is not defined,
        TypeCycleError `cyclic dependency in type A: graph contains a cycle: A -> B -> A`
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kro.graph.errors import SchemaError, TypeCycleError, TypeSyntaxError
from kro.graph.simpleschema.parser import custom_type_names, parse_field
from kro.graph.template.fieldpath import FieldPath

TYPES_PATH = FieldPath(("types",))


def _leaf_strings(definition: Any, base: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    stack: list[tuple[FieldPath, Any]] = [(base, definition)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            yield path, node
        elif isinstance(node, Mapping):
            # reversed + LIFO pop = document order
            stack.extend((path.child(str(k)), v) for k, v in reversed(list(node.items())))
        # anything else is rejected when the type is built, with its own message


def type_dependencies(name: str, definition: Any) -> list[str]:
    """Custom type names `definition` refers to, each once, in document order."""
    found: dict[str, None] = {}
    for path, text in _leaf_strings(definition, TYPES_PATH.child(name)):
        try:
            spec = parse_field(text)
        except SchemaError as err:
            raise err.with_context(field_path=str(path)) from None
        found.update(dict.fromkeys(sorted(custom_type_names(spec.type))))
    return list(found)


def build_order(dependencies: Mapping[str, Sequence[str]]) -> list[str]:
    """Topological order of the type graph (declaration order among independent types)."""
    edges: dict[str, list[str]] = {name: [] for name in dependencies}
    for name, deps in dependencies.items():
        for dep in deps:
            if dep not in edges:
                raise TypeSyntaxError(
                    f"unknown type: {dep}", field_path=str(TYPES_PATH.child(name))
                )
            edges[name].append(dep)
            # Checking after every edge, as upstream's DAG does, names the first edge that
            # closes a cycle; the cycle runs from `name` through `dep` back to `name`.
            path = _find_path(edges, dep, name)
            if path is not None:
                cycle = (name, *path)
                raise TypeCycleError(
                    f"cyclic dependency in type {name}: graph contains a cycle: "
                    + " -> ".join(cycle),
                    cycle=cycle,
                    field_path=str(TYPES_PATH.child(name)),
                )
    order: list[str] = []
    done: set[str] = set()
    for root in edges:
        _post_order(edges, root, done, order)
    return order


def _find_path(edges: Mapping[str, Sequence[str]], start: str, goal: str) -> list[str] | None:
    """A path start -> ... -> goal following edges in insertion order (depth-first), or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        if node == goal:
            return path
        if node in seen:
            continue
        seen.add(node)
        stack.extend((nxt, [*path, nxt]) for nxt in reversed(edges[node]))
    return None


def _post_order(
    edges: Mapping[str, Sequence[str]], root: str, done: set[str], order: list[str]
) -> None:
    # Iterative DFS; the graph is acyclic by now.
    stack: list[tuple[str, Iterator[str]]] = [(root, iter(edges[root]))]
    if root in done:
        return
    done.add(root)
    while stack:
        node, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            order.append(node)
        elif child not in done:
            done.add(child)
            stack.append((child, iter(edges[child])))
