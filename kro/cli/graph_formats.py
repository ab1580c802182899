"""kro.cli.graph_formats: the ways `kro graph` shows a compiled RGD or Graph.

`text` for people, `mermaid` and `dot` for diagrams (a conditional node is marked `?` or
dashed; collections and external references get their own shapes), and `graph_data` for
`-o json|yaml`. Waves are the apply order: deletion runs from the highest wave down.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from kro.graph.model import Graph, Node, NodeType


def waves(graph: Graph) -> dict[int, list[str]]:
    """Apply-order wave -> node ids (topological order within a wave)."""
    out: dict[int, list[str]] = {}
    for node_id in graph.topological_order:
        out.setdefault(graph.nodes[node_id].apply_order, []).append(node_id)
    return dict(sorted(out.items()))


def edges(graph: Graph) -> list[tuple[str, str]]:
    """(dependency, dependent) pairs: the first must exist before the second."""
    return [(d, n) for n in graph.topological_order for d in graph.nodes[n].dependencies]


GRAPH_WAVES: Final = (
    "Apply-order layers (internal.kro.run/apply-order; a deleted Graph removes its objects in "
    "reverse apply order):"
)


def _kind_of(node: Node) -> str:
    """`v1/ConfigMap`; a Graph's `def` is a value, with no kind; a node whose apiVersion or
    kind is an expression has its kind only once rendered."""
    if node.type.is_value:
        return "value"
    if node.deferred:  # DeferredSchemaResolution: a literal kind not served yet
        return f"{node.gvk.api_version}/{node.gvk.kind} (deferred: not served yet)"
    if node.dynamic_type:
        return "kind computed per object"
    return f"{node.gvk.api_version}/{node.gvk.kind}"


def _short_kind(node: Node) -> str:
    if node.type.is_value:
        return "value"
    return "computed kind" if node.dynamic_type and not node.deferred else node.gvk.kind


def render_text(graph: Graph) -> str:
    from kro.cli.graph_documents import is_graph

    instance = graph.instance
    if is_graph(graph):
        lines = [f"Graph: {graph.rgd_name or '(unnamed)'}"]
    else:
        lines = [
            f"ResourceGraphDefinition: {graph.rgd_name or '(unnamed)'}",
            f"Instance: {instance.api_version}, Kind={instance.kind}",
        ]
    lines += [
        f"Topological order: {', '.join(graph.topological_order) or '(no resources)'}",
        GRAPH_WAVES
        if is_graph(graph)
        else "Apply-order waves (deletion runs from the highest wave down):",
    ]
    lines += [f"  {wave}: {', '.join(ids)}" for wave, ids in waves(graph).items()]
    lines.append("Nodes:")
    for node_id in graph.topological_order:
        node = graph.nodes[node_id]
        flags = [node.type.value, _kind_of(node)]
        if node.include_when:
            flags.append("conditional")
        if node.for_each:
            flags.append("forEach " + " x ".join(d.name for d in node.for_each))
        lines.append(f"  {node_id}: {', '.join(flags)}")
    lines.append("Edges (dependency -> dependent):")
    lines += [f"  {d} -> {n}" for d, n in edges(graph)] or ["  (none)"]
    return "\n".join(lines) + "\n"


_MERMAID_SHAPES: Final = {
    NodeType.RESOURCE: ('["', '"]'),
    NodeType.COLLECTION: ('[["', '"]]'),
    NodeType.EXTERNAL: ('(["', '"])'),
    NodeType.EXTERNAL_COLLECTION: ('[("', '")]'),
    NodeType.VALUE: ('{{"', '"}}'),
    NodeType.VALUE_COLLECTION: ('{{"', '"}}'),
    NodeType.PATCH: ('>"', '"]'),
}


def _label(graph: Graph, node_id: str, newline: str) -> str:
    node = graph.nodes[node_id]
    suffix = "?" if node.include_when else ""
    return f"{node_id}{suffix}{newline}{_short_kind(node)} (wave {node.apply_order})"


def render_mermaid(graph: Graph) -> str:
    lines = ["flowchart TD"]
    for node_id in graph.topological_order:
        left, right = _MERMAID_SHAPES[graph.nodes[node_id].type]
        lines.append(f"  {node_id}{left}{_label(graph, node_id, '<br/>')}{right}")
    lines += [f"  {d} --> {n}" for d, n in edges(graph)]
    return "\n".join(lines) + "\n"


def render_dot(graph: Graph) -> str:
    shapes = {
        NodeType.RESOURCE: "box",
        NodeType.COLLECTION: "box3d",
        NodeType.VALUE: "note",
        NodeType.VALUE_COLLECTION: "note",
        NodeType.PATCH: "cds",
    }
    lines = [f"digraph {json.dumps(graph.rgd_name or 'rgd')} {{", "  rankdir=LR;"]
    for node_id in graph.topological_order:
        node = graph.nodes[node_id]
        shape = shapes.get(node.type, "ellipse")
        style = ', style="dashed"' if node.include_when else ""
        label = json.dumps(_label(graph, node_id, "\n"))
        lines.append(f'  "{node_id}" [label={label}, shape={shape}{style}];')
    lines += [f'  "{d}" -> "{n}";' for d, n in edges(graph)]
    lines.append("}")
    return "\n".join(lines) + "\n"


TEXT_RENDERERS: Final[dict[str, Callable[[Graph], str]]] = {
    "text": render_text,
    "mermaid": render_mermaid,
    "dot": render_dot,
}


def graph_data(graph: Graph) -> dict[str, Any]:
    """The graph as plain data for `-o json|yaml` (keys stable, camelCase). A Graph's has
    `kind: Graph` where an RGD's names its instance kind."""
    from kro.cli.graph_documents import is_graph

    instance = graph.instance
    owner: dict[str, Any] = (
        {"kind": instance.kind}
        if is_graph(graph)
        else {"instance": {"apiVersion": instance.api_version, "kind": instance.kind}}
    )
    return {
        "name": graph.rgd_name,
        **owner,
        "topologicalOrder": list(graph.topological_order),
        "waves": [{"wave": wave, "resources": ids} for wave, ids in waves(graph).items()],
        "nodes": [_node_data(graph, node_id) for node_id in graph.topological_order],
        "edges": [{"from": d, "to": n} for d, n in edges(graph)],
    }


def _node_data(graph: Graph, node_id: str) -> dict[str, Any]:
    node = graph.nodes[node_id]
    unknown = node.type.is_value or (node.dynamic_type and not node.deferred)
    return {
        "id": node_id,
        "type": node.type.value,
        "apiVersion": None if unknown else node.gvk.api_version,
        "kind": None if unknown else node.gvk.kind,
        **({"deferred": True} if node.deferred else {}),
        "applyOrder": node.apply_order,
        "conditional": bool(node.include_when),
        "forEach": [d.name for d in node.for_each],
        "dependencies": list(node.dependencies),
    }
