"""kro.graph.ordering: the order a compiled graph's nodes are processed in, and deleted in.

Both compilers end the same way (kro.graph.builder for an RGD, kro.graph.graph_kind for a
Graph): their nodes, and the dependencies their expressions name, go into a DAG
(kro.graph.dag), which rejects a cycle (G-15) and yields the declaration-order topological sort
(G-16) and the apply-order waves persisted on children (G-17).
"""

from __future__ import annotations

from collections.abc import Sequence

from kro.graph.build_errors import GraphCycleError
from kro.graph.dag import CycleError, DirectedAcyclicGraph
from kro.graph.model import Node

__all__ = ["order_nodes"]


def order_nodes(nodes: Sequence[Node], rgd: str) -> tuple[list[str], dict[str, int]]:
    """The topological order of `nodes` and each one's apply-order wave, by id; a cycle is a
    GraphCycleError naming `rgd` (the RGD's or the Graph's name)."""
    dag = DirectedAcyclicGraph()
    for node in nodes:
        dag.add_vertex(node.id, node.index)
    for node in nodes:
        dag.add_dependencies(node.id, node.dependencies)
    try:
        return dag.topological_sort(), dag.apply_orders()
    except CycleError as err:
        raise GraphCycleError(err.cycle, rgd=rgd) from err
