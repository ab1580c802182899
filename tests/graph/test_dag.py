"""kro.graph.dag: orders, tie-breaks, waves and cycle reports (G-15..G-17, N-08, N-09)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kro.graph.dag import (
    CycleError,
    DirectedAcyclicGraph,
    DuplicateVertexError,
    SelfReferenceError,
    UnknownVertexError,
)
from kro.graph.errors import GraphError


def build(vertices: Sequence[str], edges: Mapping[str, Sequence[str]]) -> DirectedAcyclicGraph:
    """Vertices in declaration order; edges map a vertex to what it depends on."""
    graph = DirectedAcyclicGraph()
    for vertex in vertices:
        graph.add_vertex(vertex)
    for vertex, dependencies in edges.items():
        graph.add_dependencies(vertex, dependencies)
    return graph


ORDER_CASES = [
    ("empty", [], {}, []),
    ("single", ["a"], {}, ["a"]),
    ("declaration-order-without-edges", ["c", "a", "b"], {}, ["c", "a", "b"]),
    ("reference-example-g16", ["b", "a", "c"], {"b": ["a"]}, ["a", "b", "c"]),
    ("chain-declared-backwards", ["c", "b", "a"], {"c": ["b"], "b": ["a"]}, ["a", "b", "c"]),
    (
        "diamond",
        ["d", "b", "c", "a"],
        {"d": ["b", "c"], "b": ["a"], "c": ["a"]},
        ["a", "b", "c", "d"],
    ),
    (
        "earliest-ready-wins-over-later-chain",
        ["x", "y", "z", "w"],
        {"x": ["w"], "y": ["w"]},
        ["z", "w", "x", "y"],
    ),
    (
        "dependent-unblocked-mid-way-jumps-the-queue",
        ["deployment", "config", "service", "ingress"],
        {"deployment": ["config"], "ingress": ["service"]},
        ["config", "deployment", "service", "ingress"],
    ),
]


@pytest.mark.parametrize(
    ("vertices", "edges", "expected"),
    [case[1:] for case in ORDER_CASES],
    ids=[case[0] for case in ORDER_CASES],
)
def test_topological_order_breaks_ties_by_declaration(
    vertices: list[str], edges: dict[str, list[str]], expected: list[str]
) -> None:
    assert build(vertices, edges).topological_sort() == expected


def test_explicit_order_beats_insertion_and_id_breaks_equal_orders() -> None:
    graph = DirectedAcyclicGraph()
    graph.add_vertex("late", order=5)
    graph.add_vertex("early", order=1)
    graph.add_vertex("b", order=3)
    graph.add_vertex("a", order=3)
    assert graph.topological_sort() == ["early", "a", "b", "late"]
    assert graph.vertices == ["early", "a", "b", "late"]
    assert graph.order_of("late") == 5


WAVE_CASES = [
    (
        "reference-example-g17",
        ["a", "b", "c", "d"],
        {"b": ["a"], "c": ["a"], "d": ["b", "c"]},
        {"a": 1, "b": 2, "c": 2, "d": 3},
    ),
    ("isolated-nodes-get-the-max", ["a", "b", "c"], {"b": ["a"]}, {"a": 1, "b": 2, "c": 2}),
    ("all-isolated", ["a", "b"], {}, {"a": 1, "b": 1}),
    ("empty", [], {}, {}),
    (
        "short-branch-sits-below-its-dependent",
        ["a", "b", "c", "d"],
        {"d": ["c", "a"], "c": ["b"], "b": ["a"]},
        {"a": 1, "b": 2, "c": 3, "d": 4},
    ),
    (
        "leaf-of-short-branch-gets-max",
        ["root", "mid", "top", "side"],
        {"mid": ["root"], "top": ["mid"], "side": ["root"]},
        {"root": 1, "mid": 2, "top": 3, "side": 3},
    ),
]


@pytest.mark.parametrize(
    ("vertices", "edges", "expected"),
    [case[1:] for case in WAVE_CASES],
    ids=[case[0] for case in WAVE_CASES],
)
def test_apply_orders_count_from_the_dependents_side(
    vertices: list[str], edges: dict[str, list[str]], expected: dict[str, int]
) -> None:
    assert build(vertices, edges).apply_orders() == expected


def test_layers_in_both_directions() -> None:
    graph = build(["a", "b", "c", "d"], {"b": ["a"], "c": ["a"], "d": ["b", "c"]})
    assert graph.reverse_topological_layers() == [["d"], ["b", "c"], ["a"]]
    assert graph.topological_layers() == [["a"], ["b", "c"], ["d"]]


CYCLE_CASES = [
    ("two-cycle", ["a", "b"], {"a": ["b"], "b": ["a"]}, "graph contains a cycle: a -> b -> a"),
    (
        "three-cycle-reported-from-first-declared",
        ["c", "a", "b"],
        {"a": ["b"], "b": ["c"], "c": ["a"]},
        "graph contains a cycle: c -> a -> b -> c",
    ),
    (
        "cycle-behind-an-acyclic-prefix",
        ["x", "a", "b"],
        {"x": ["a"], "a": ["b"], "b": ["a"]},
        "graph contains a cycle: a -> b -> a",
    ),
]


@pytest.mark.parametrize(
    ("vertices", "edges", "message"),
    [case[1:] for case in CYCLE_CASES],
    ids=[case[0] for case in CYCLE_CASES],
)
def test_cycles_are_reported_with_the_closing_path(
    vertices: list[str], edges: dict[str, list[str]], message: str
) -> None:
    graph = build(vertices, edges)
    for method in (
        graph.topological_sort,
        graph.reverse_topological_layers,
        graph.topological_layers,
        graph.apply_orders,
    ):
        with pytest.raises(CycleError) as caught:
            method()
        assert str(caught.value) == message
    assert isinstance(CycleError(["a", "a"]), GraphError)


def test_find_cycle_returns_none_when_acyclic() -> None:
    assert build(["a", "b"], {"b": ["a"]}).find_cycle() is None


def test_self_reference_is_rejected() -> None:
    graph = build(["a"], {})
    with pytest.raises(SelfReferenceError, match=r"^self references are not allowed$") as caught:
        graph.add_dependencies("a", ["a"])
    assert caught.value.resource_id == "a"


def test_unknown_vertices_are_rejected_without_partial_edges() -> None:
    graph = build(["a", "b"], {})
    with pytest.raises(UnknownVertexError, match=r"^node ghost does not exist$"):
        graph.add_dependencies("a", ["b", "ghost"])
    assert graph.dependencies_of("a") == []
    with pytest.raises(UnknownVertexError, match="node ghost does not exist"):
        graph.add_dependencies("ghost", [])


def test_duplicate_vertices_are_rejected() -> None:
    graph = build(["a"], {})
    with pytest.raises(DuplicateVertexError, match="node a already exists"):
        graph.add_vertex("a")


def test_neighbour_queries_are_in_declaration_order() -> None:
    graph = build(["z", "y", "x"], {"x": ["z", "y"], "y": ["z"]})
    assert graph.dependencies_of("x") == ["z", "y"]
    assert graph.dependents_of("z") == ["y", "x"]
    assert "x" in graph
    assert len(graph) == 3
    assert list(graph) == ["z", "y", "x"]


# --- properties --------------------------------------------------------------------------------


@st.composite
def random_graphs(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]]]:
    size = draw(st.integers(min_value=0, max_value=9))
    vertices = draw(st.permutations([f"n{i}" for i in range(size)]))
    edges: dict[str, list[str]] = {}
    for vertex in vertices:
        others = [v for v in vertices if v != vertex]
        if others:
            edges[vertex] = draw(st.lists(st.sampled_from(others), max_size=3, unique=True))
    return list(vertices), edges


def reference_order(vertices: list[str], edges: dict[str, list[str]]) -> list[str]:
    """The G-16 rule by brute force: repeatedly emit the earliest-declared ready vertex."""
    done: list[str] = []
    while len(done) < len(vertices):
        ready = [v for v in vertices if v not in done and set(edges.get(v, [])) <= set(done)]
        done.append(ready[0])
    return done


@given(random_graphs())
def test_random_graphs_give_a_valid_order_or_a_real_cycle(
    graph_spec: tuple[list[str], dict[str, list[str]]],
) -> None:
    vertices, edges = graph_spec
    graph = build(vertices, edges)
    found = graph.find_cycle()
    if found is not None:
        with pytest.raises(CycleError) as caught:
            graph.topological_sort()
        cycle = list(caught.value.cycle)
        assert cycle == found
        assert len(cycle) >= 3
        assert cycle[0] == cycle[-1]
        assert len(set(cycle[:-1])) == len(cycle) - 1
        for vertex, dependency in itertools.pairwise(cycle):
            assert dependency in edges[vertex]
        assert str(caught.value) == "graph contains a cycle: " + " -> ".join(cycle)
        return
    order = graph.topological_sort()
    assert sorted(order) == sorted(vertices)
    position = {v: i for i, v in enumerate(order)}
    for vertex, dependencies in edges.items():
        for dependency in dependencies:
            assert position[dependency] < position[vertex]
    assert order == reference_order(vertices, edges)


@st.composite
def random_dags(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]]]:
    """Acyclic by construction: edges only point to vertices earlier in a hidden ranking."""
    vertices, _ = draw(random_graphs())
    ranking = draw(st.permutations(vertices))
    edges: dict[str, list[str]] = {}
    for rank, vertex in enumerate(ranking):
        earlier = list(ranking[:rank])
        if earlier:
            edges[vertex] = draw(st.lists(st.sampled_from(earlier), max_size=3, unique=True))
    return vertices, edges


@given(random_dags())
def test_dags_never_report_a_cycle_and_waves_respect_edges(
    graph_spec: tuple[list[str], dict[str, list[str]]],
) -> None:
    vertices, edges = graph_spec
    graph = build(vertices, edges)
    assert graph.find_cycle() is None
    orders = graph.apply_orders()
    assert set(orders) == set(vertices)
    for vertex, dependencies in edges.items():
        for dependency in dependencies:
            assert orders[dependency] < orders[vertex]
    top = max(orders.values(), default=0)
    for vertex in vertices:
        if not graph.dependents_of(vertex):
            assert orders[vertex] == top
    layers = graph.topological_layers()
    assert sorted(v for layer in layers for v in layer) == sorted(vertices)
