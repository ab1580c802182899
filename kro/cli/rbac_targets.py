"""kro.cli.rbac_targets: which nodes of a graph need RBAC on the hub, and what members must allow.

A node whose target names a member cluster (MultiCluster, M-11) is read and applied there with
the member's own credentials, those of its registry Secret (M-02), never with kro's identity on
the hub nor a Graph's ServiceAccount; and no informer of the hub watches it (a member's objects
are read with a GET each pass). So `kro generate rbac` leaves such a node out of the hub's
roles and says, in comment lines, what each member's credentials must allow instead, for the
platform team to grant on the member. Where a node lives is read from its compiled template
(kro.graph.targets), before any instance exists:

* no target, or a literal one naming the hub (`--local-cluster-name`): the hub;
* a literal target naming another cluster: that member;
* a target computed per instance (`${schema.spec.cluster}`): unknown, so possibly the hub:
  the node stays in the hub's roles, and each member it may name must allow the same.

A graph without targets is split into nothing: its roles are exactly what they always were.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from kro.api.names import LOCAL_CLUSTER_NAME_DEFAULT
from kro.controllers.permissions import MISSING_PREFIX, Permission, describe_missing
from kro.graph.model import Graph, Node
from kro.graph.targets import node_cluster

__all__ = ["HUB", "Placement", "member_permissions", "permission_list", "place", "placement"]

HUB: Final = ""
"""A node's cluster when its objects live in the hub (the graph's owner's cluster)."""
_MEMBER_EXCLUDED_VERBS: Final = frozenset({"watch"})
"""Nothing watches a member: the pass reads its objects with a GET (or a LIST) each time."""


def place(node: Node, local_name: str = LOCAL_CLUSTER_NAME_DEFAULT) -> str | None:
    """Where the node's objects live: HUB, a member's name, or None for a computed target."""
    return node_cluster(node, local_name)


@dataclass(frozen=True, slots=True)
class Placement:
    """A graph's nodes by where they live.

    hub: the ids of the nodes the hub's roles cover (its own, and those whose target is
        computed, which may name the hub); members: per member cluster named literally, its
        nodes; computed: the nodes whose target is computed.
    """

    graph: Graph
    hub: frozenset[str]
    members: Mapping[str, tuple[Node, ...]] = field(default_factory=dict)
    computed: tuple[Node, ...] = ()

    @property
    def targeted(self) -> bool:
        """Whether any node has a target that is not the hub's own."""
        return bool(self.members or self.computed)

    def hub_graph(self) -> Graph:
        """The graph with only the nodes the hub's roles cover (the graph itself when no node
        leaves the hub), for the rules computed from a whole graph."""
        if not self.members:
            return self.graph
        nodes = {i: n for i, n in self.graph.nodes.items() if i in self.hub}
        return dataclasses.replace(self.graph, nodes=nodes)

    def on_hub(self, node: Node) -> bool:
        return node.id in self.hub


def placement(graph: Graph, local_name: str = LOCAL_CLUSTER_NAME_DEFAULT) -> Placement:
    """Sort the graph's nodes by `place` (see the module docstring)."""
    members: dict[str, list[Node]] = {}
    computed: list[Node] = []
    hub: set[str] = set()
    for node_id, node in graph.nodes.items():
        where = place(node, local_name)
        if where is None:
            computed.append(node)
        if not where:
            hub.add(node_id)
        else:
            members.setdefault(where, []).append(node)
    return Placement(
        graph,
        frozenset(hub),
        {name: tuple(nodes) for name, nodes in sorted(members.items())},
        tuple(computed),
    )


def member_permissions(
    nodes: Iterable[Node], permissions: Callable[[Node], Iterable[Permission]]
) -> set[Permission]:
    """What the member's credentials must allow for these nodes: what the hub would need
    for them (`permissions` of each), less `watch`."""
    return {p for node in nodes for p in permissions(node) if p.verb not in _MEMBER_EXCLUDED_VERBS}


def permission_list(permissions: Iterable[Permission]) -> str:
    """`configmaps: get, list; apps/deployments: create, patch` (sorted, as a condition
    lists missing permissions)."""
    return describe_missing(permissions).removeprefix(MISSING_PREFIX)
