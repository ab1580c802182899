"""kro.cli.graph_rbac: `kro generate rbac` for a Graph: what its ServiceAccount and kro need.

A Graph applies as a ServiceAccount of its own namespace (`spec.serviceAccountName`, else
`default`), never as kro; so its RBAC is not kro's but the applier's: `get`, `list`, `watch` on
every kind it reads (its `ref` nodes) and creates (its `template` nodes), and the write verbs
`create`, `update`, `patch`, `delete` on what it creates (server-side apply, prune and teardown).
A `patch` contributes fields to an object it does not own: it reads the target (get, list,
watch) and applies to it (`patch`, and `update` as upstream's examples grant), on the object
itself or, for a status patch, on `<resource>/status`; it never creates or deletes. A `def` is
computed in kro and needs nothing. A node whose apiVersion or kind is an expression names its
kinds only at run time: it gets no rule, and a warning says to grant what it resolves to.

Where those rules apply decides the role's kind. When every object lives in a namespace the
Graph names literally (its own by default), a Role and a RoleBinding per namespace are enough;
a cluster-scoped kind, a namespace computed by an expression (a decorator writing into every
matching Namespace) or a selector `ref` without a namespace (which lists across all
namespaces) needs a ClusterRole and a ClusterRoleBinding.

kro's own watches are not impersonated (they run as kro, cluster-wide), so kro itself needs
`list` and `watch` on every kind the Graph reads or creates: one more ClusterRole, labelled
`rbac.kro.run/aggregate-to-controller: "true"` with `--mode aggregation` so that the chart's
aggregated role picks it up. kro's `impersonate` grant comes from the chart with `GraphKind`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.api.graph import DEFAULT_SERVICE_ACCOUNT
from kro.api.names import AGGREGATE_TO_CONTROLLER_VALUE, LABEL_AGGREGATE_TO_CONTROLLER
from kro.controllers.permissions import Permission, rules_for
from kro.graph.graph_kind import patch_endpoint
from kro.graph.model import Graph, Node, NodeType

__all__ = [
    "APPLIER_VERBS",
    "READ_VERBS",
    "WATCH_VERBS",
    "GraphScope",
    "applier_of",
    "cluster_wide_reasons",
    "computed_kinds",
    "graph_roles",
    "scope_of",
]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
RBAC_API_VERSION: Final = f"{RBAC_GROUP}/v1"
READ_VERBS: Final = ("get", "list", "watch")
APPLIER_VERBS: Final = (*READ_VERBS, "create", "update", "patch", "delete")
CONTRIBUTOR_VERBS: Final = ("get", "update", "patch")
"""On what a patch node writes: the object, or its `/status` (upstream's examples grant these)."""
WATCH_VERBS: Final = ("list", "watch")
CLUSTER: Final = ""
"""The scope of a rule that must hold in every namespace (or for a cluster-scoped kind)."""


@dataclass(frozen=True, slots=True)
class GraphScope:
    """Where one node's objects live: a namespace, or CLUSTER; `why` says what made it
    cluster-wide (for the comment a user reads before applying a ClusterRoleBinding)."""

    namespace: str
    why: str = ""


def scope_of(node: Node, graph_namespace: str) -> GraphScope:
    """The namespace a node reads or writes in, as the Graph controller resolves it (V-43,
    V-44): a namespaced kind without a namespace is the Graph's own."""
    if not node.namespaced:
        return GraphScope(CLUSTER, f"{node.gvk.kind} is cluster-scoped")
    metadata = node.template.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    namespace = metadata.get("namespace")
    if isinstance(namespace, str) and "${" in namespace:
        return GraphScope(CLUSTER, f"its namespace is computed ({namespace})")
    if namespace not in (None, ""):
        return GraphScope(str(namespace))
    if node.type is NodeType.EXTERNAL_COLLECTION:
        return GraphScope(CLUSTER, "a selector ref without a namespace lists every namespace")
    return GraphScope(graph_namespace)


def applier_of(graph_obj: Mapping[str, Any]) -> str:
    """The ServiceAccount a Graph applies as: `spec.serviceAccountName`, else `default`."""
    spec = graph_obj.get("spec")
    name = spec.get("serviceAccountName") if isinstance(spec, Mapping) else None
    return str(name or DEFAULT_SERVICE_ACCOUNT)


def _permissions(node: Node) -> set[Permission]:
    """What the applier needs for one node (nothing for a def or a computed kind)."""
    if node.type.is_value or node.dynamic_type:
        return set()
    group, resource = node.gvk.group, node.resource
    if node.type is NodeType.PATCH:
        target = f"{resource}/status" if patch_endpoint(node.template) else resource
        return {Permission(group, resource, v) for v in READ_VERBS} | {
            Permission(group, target, v) for v in CONTRIBUTOR_VERBS
        }
    verbs = READ_VERBS if node.type.is_external else APPLIER_VERBS
    return {Permission(group, resource, v) for v in verbs}


def computed_kinds(graph: Graph) -> list[str]:
    """The nodes whose kind is an expression: no rule can name it in advance."""
    return [node.id for node in graph.nodes.values() if node.dynamic_type]


def graph_roles(
    graph: Graph,
    namespace: str,
    service_account: str,
    *,
    aggregation: bool,
    fullname: str,
) -> list[dict[str, Any]]:
    """The applier's role(s) and binding(s), then kro's list/watch ClusterRole."""
    by_scope: dict[str, set[Permission]] = {}
    watched: set[Permission] = set()
    for node in graph.nodes.values():
        needed = _permissions(node)
        if not needed:
            continue
        scope = scope_of(node, namespace).namespace
        by_scope.setdefault(scope, set()).update(needed)
        watched.update(Permission(node.gvk.group, node.resource, v) for v in WATCH_VERBS)
    subject = {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}
    documents: list[dict[str, Any]] = []
    if CLUSTER in by_scope:  # one ClusterRole covers every namespace the Graph writes
        permissions = set().union(*by_scope.values())
        name = f"{fullname}:graph:{namespace}:{graph.rgd_name}"
        documents += _role_and_binding("ClusterRole", name, None, permissions, subject)
    else:
        for where, permissions in sorted(by_scope.items()):
            name = f"{fullname}:graph:{graph.rgd_name}"
            if where != namespace:
                name = f"{fullname}:graph:{namespace}:{graph.rgd_name}"
            documents += _role_and_binding("Role", name, where, permissions, subject)
    if watched:
        watcher = f"{fullname}:controller:graph:{namespace}:{graph.rgd_name}"
        metadata: dict[str, Any] = {"name": watcher}
        if aggregation:
            metadata["labels"] = {LABEL_AGGREGATE_TO_CONTROLLER: AGGREGATE_TO_CONTROLLER_VALUE}
        documents.append(
            {
                "apiVersion": RBAC_API_VERSION,
                "kind": "ClusterRole",
                "metadata": metadata,
                "rules": [r.to_dict() for r in rules_for(watched)],
            }
        )
    return documents


def _role_and_binding(
    kind: str,
    name: str,
    namespace: str | None,
    permissions: set[Permission],
    subject: Mapping[str, str],
) -> list[dict[str, Any]]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    role = {
        "apiVersion": RBAC_API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "rules": [r.to_dict() for r in rules_for(permissions)],
    }
    binding = {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{kind}Binding",
        "metadata": dict(metadata),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": name},
        "subjects": [dict(subject)],
    }
    return [role, binding]


def cluster_wide_reasons(graph: Graph, namespace: str) -> list[str]:
    """Why the applier needs a ClusterRole, one line per node that reaches past a namespace."""
    return [
        f'node "{node.id}": {scope.why}'
        for node in graph.nodes.values()
        if _permissions(node)
        for scope in (scope_of(node, namespace),)
        if scope.namespace == CLUSTER
    ]
