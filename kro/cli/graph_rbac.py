"""kro.cli.graph_rbac: the RBAC a compiled graph needs, for an RGD's and for a Graph's.

Both compile into one model (kro.graph.model.Graph), and `kro generate rbac` reads both the
same way: each node needs something of the API server according to what it does with its kind
(`access_of`): it reads it (a `ref` or externalRef), applies it (a template), patches it (a
`patch` contributes fields to an object it does not own), or needs nothing (a `def`, computed
in kro). A node whose apiVersion or kind is an expression names its kind only at run time: no
rule can name it, and a warning says to grant what it resolves to. A node that writes RBAC
objects gets a warning too: the API server lets an identity grant only what it holds itself.

What differs is the owner, an adapter each (`Owner`):

* an RGD is served by kro itself. Its rules are the table the RGD controller's pre-flight
  checks (kro.controllers.permissions, so the printed role and the `PermissionsGranted`
  condition never disagree): one ClusterRole, `<fullname>:controller:<rgd>`.
* a Graph applies as a ServiceAccount of its own namespace (`spec.serviceAccountName`, else
  `default`), never as kro: `get`, `list`, `watch` on every kind it reads and applies, the write
  verbs `create`, `update`, `patch`, `delete` on what it applies (server-side apply, prune and
  teardown), and on what it patches `get`, `update`, `patch` (as upstream's examples grant) of
  the object itself or, for a status patch, of `<resource>/status`. When every object lives in
  a namespace the Graph names literally (its own by default), a Role and a RoleBinding per
  namespace are enough; a cluster-scoped kind, a namespace computed by an expression (a
  decorator writing into every matching Namespace) or a selector `ref` without a namespace
  (which lists across all namespaces) needs a ClusterRole and a ClusterRoleBinding. kro's own
  watches are not impersonated (they run as kro, cluster-wide), so kro itself needs `list` and
  `watch` on those kinds: one more ClusterRole. kro's `impersonate` grant comes from the chart
  with `GraphKind`.

With `aggregation`, kro's ClusterRoles carry the label the chart's aggregated role selects
(`rbac.kro.run/aggregate-to-controller: "true"`), so applying them is enough.

A node whose target names a member cluster (MultiCluster) needs nothing of the hub for its
kind: the member's own credentials act there (kro.cli.rbac_targets). Both owners leave it out of
their roles and say in `notes` what each member's credentials must allow; a Graph's
ServiceAccount still needs `get` on each such cluster's registry Secret, the trust rule by which
a Graph reaches a member (M-13), granted by one more Role in the registry's namespace.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kro.api.graph import DEFAULT_SERVICE_ACCOUNT
from kro.api.names import (
    AGGREGATE_TO_CONTROLLER_VALUE,
    LABEL_AGGREGATE_TO_CONTROLLER,
    LOCAL_CLUSTER_NAME_DEFAULT,
)
from kro.cli.clusters import DEFAULT_NAMESPACE as SECRETS_NAMESPACE_DEFAULT
from kro.cli.rbac_targets import Placement, member_permissions, permission_list, placement
from kro.controllers.permissions import (
    NODE_VERBS,
    Permission,
    PolicyRule,
    required_rules,
    rules_for,
)
from kro.graph.graph_kind import patch_endpoint
from kro.graph.model import Graph, Node, NodeType

__all__ = [
    "APPLIER_VERBS",
    "READ_VERBS",
    "WATCH_VERBS",
    "Access",
    "GraphOwner",
    "GraphScope",
    "Owner",
    "RgdOwner",
    "access_of",
    "applier_of",
    "applier_permissions",
    "cluster_role",
    "node_warnings",
    "role_and_binding",
    "scope_of",
    "secret_reader",
    "writes_rbac",
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
_GRANTING_KINDS: Final = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})


# --- what each node needs ----------------------------------------------------------------------


class Access(enum.Enum):
    """What a node does with its kind, which decides the verbs it needs."""

    NONE = "none"  # a def: computed in kro, never sent
    COMPUTED = "computed"  # its kind is an expression: no rule can name it in advance
    READ = "read"  # a ref / externalRef
    APPLY = "apply"  # a template: created, applied, pruned, deleted
    PATCH = "patch"  # fields contributed to an object the graph does not own


def access_of(node: Node) -> Access:
    if node.type.is_value:
        return Access.NONE
    if node.dynamic_type and not node.deferred:  # a deferred kind is literal: it can be named
        return Access.COMPUTED
    if node.type.is_external:
        return Access.READ
    return Access.PATCH if node.type is NodeType.PATCH else Access.APPLY


def applier_permissions(node: Node) -> set[Permission]:
    """What the identity that applies the graph's objects needs for one node (a Graph's)."""
    access = access_of(node)
    group, resource = node.gvk.group, node.resource
    if access is Access.PATCH:
        target = f"{resource}/status" if patch_endpoint(node.template) else resource
        return {Permission(group, resource, v) for v in READ_VERBS} | {
            Permission(group, target, v) for v in CONTRIBUTOR_VERBS
        }
    if access in (Access.READ, Access.APPLY):
        verbs = READ_VERBS if access is Access.READ else APPLIER_VERBS
        return {Permission(group, resource, v) for v in verbs}
    return set()


def writes_rbac(node: Node) -> bool:
    """Does the node write Roles or bindings (the API server's escalation check applies)?"""
    return (
        access_of(node) in (Access.APPLY, Access.PATCH)
        and node.gvk.group == RBAC_GROUP
        and node.gvk.kind in _GRANTING_KINDS
    )


def node_warnings(graph: Graph, *, noun: str, applier: str, pronoun: str) -> list[str]:
    """What no rule can grant, one line per node: kinds only known at run time, then RBAC
    objects written (the applier may grant only what it holds). `noun` is what the owner's
    document calls a node, `applier` names who applies, `pronoun` refers back to it."""
    computed = [
        f"node {node_id!r} computes its apiVersion or kind: no rule names it; grant "
        f"{applier} what it resolves to"
        for node_id, node in graph.nodes.items()
        if access_of(node) is Access.COMPUTED
    ]
    escalating = [
        f"{noun} {node_id!r} creates {node.gvk.kind} objects: the API server lets {applier} "
        f"grant only permissions {pronoun} holds itself (or the escalate/bind verbs); grant "
        "those too"
        for node_id, node in graph.nodes.items()
        if writes_rbac(node)
    ]
    return computed + escalating


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


# --- the documents -----------------------------------------------------------------------------


def cluster_role(name: str, rules: Iterable[PolicyRule], *, aggregation: bool) -> dict[str, Any]:
    """A ClusterRole kro holds, labelled for the chart's aggregated role with `aggregation`."""
    metadata: dict[str, Any] = {"name": name}
    if aggregation:
        metadata["labels"] = {LABEL_AGGREGATE_TO_CONTROLLER: AGGREGATE_TO_CONTROLLER_VALUE}
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": metadata,
        "rules": [rule.to_dict() for rule in rules],
    }


def role_and_binding(
    kind: str,
    name: str,
    namespace: str | None,
    permissions: Iterable[Permission],
    subject: Mapping[str, str],
) -> list[dict[str, Any]]:
    """A Role (or ClusterRole, `namespace` None) and the binding that grants it to `subject`."""
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


# --- the owners --------------------------------------------------------------------------------


class Owner(Protocol):
    """Who applies a compiled graph's objects, and the RBAC documents that let it."""

    def warnings(self, graph: Graph) -> list[str]:
        """Lines for stderr: what the roles cannot cover, and why they are shaped as they are."""
        ...

    def roles(self, graph: Graph) -> list[dict[str, Any]]: ...

    def notes(self, graph: Graph) -> list[str]:
        """Comment lines for the roles: what nodes in member clusters need there instead
        (none for a graph without targets)."""
        ...


def _members_lines(
    placed: Placement, permissions: Callable[[Node], Iterable[Permission]], noun: str
) -> list[str]:
    """One line per member cluster named literally: its nodes and what they need there."""
    lines = []
    for cluster, nodes in placed.members.items():
        needed = permission_list(member_permissions(nodes, permissions))
        ids = ", ".join(node.id for node in nodes)
        lines.append(f"  cluster {cluster} ({noun}s {ids}): {needed or 'nothing'}")
    return lines


def _rgd_permissions(node: Node) -> set[Permission]:
    """What kro's controllers send for one node of an RGD (kro.controllers.permissions)."""
    return {Permission(node.gvk.group, node.resource, v) for v in NODE_VERBS[node.type]}


@dataclass(frozen=True, slots=True)
class RgdOwner:
    """An RGD: kro applies its resources, with the rules the pre-flight checks; those that
    target a member cluster are applied there with the member's own credentials."""

    aggregation: bool
    fullname: str
    local_cluster: str = LOCAL_CLUSTER_NAME_DEFAULT

    def warnings(self, graph: Graph) -> list[str]:
        lines = node_warnings(graph, noun="resource", applier="kro", pronoun="kro")
        return [f"warning: {graph.rgd_name}: {line}" for line in lines]

    def roles(self, graph: Graph) -> list[dict[str, Any]]:
        name = f"{self.fullname}:controller:{graph.rgd_name}"
        rules = required_rules(graph, self.local_cluster)
        return [cluster_role(name, rules, aggregation=self.aggregation)]

    def notes(self, graph: Graph) -> list[str]:
        placed = placement(graph, self.local_cluster)
        role = f"{self.fullname}:controller:{graph.rgd_name}"
        where = f"ResourceGraphDefinition {graph.rgd_name}"
        lines = []
        if placed.members:
            lines.append(
                f"{where}: resources that target a member cluster are left out of {role}: "
                "kro applies them with the member's own credentials (its registry Secret), "
                "which must allow there:"
            )
            lines += _members_lines(placed, _rgd_permissions, "resource")
        if placed.computed:
            ids = ", ".join(node.id for node in placed.computed)
            needed = permission_list(member_permissions(placed.computed, _rgd_permissions))
            lines.append(
                f"{where}: resources whose target is computed per instance ({ids}): {role} "
                "keeps their kinds (a target may name the hub), and each member cluster one "
                f"names must allow there: {needed}"
            )
        return lines


@dataclass(frozen=True, slots=True)
class GraphOwner:
    """A Graph: its ServiceAccount applies, in the Graph's namespace; kro only watches. Nodes
    that target a member cluster are applied there with the member's own credentials, which
    the ServiceAccount reaches by reading that cluster's registry Secret (M-13)."""

    namespace: str
    service_account: str
    aggregation: bool
    fullname: str
    local_cluster: str = LOCAL_CLUSTER_NAME_DEFAULT
    secrets_namespace: str = SECRETS_NAMESPACE_DEFAULT

    @property
    def applier(self) -> str:
        return f"ServiceAccount {self.namespace}/{self.service_account}"

    def warnings(self, graph: Graph) -> list[str]:
        where = f'Graph "{graph.rgd_name}"'
        reasons = [
            f"{where}: a ClusterRole is needed: {reason}"
            for reason in self._cluster_wide_reasons(graph)
        ]
        lines = node_warnings(graph, noun="node", applier=self.applier, pronoun="it")
        return reasons + [f"{where}: warning: {line}" for line in lines]

    def roles(self, graph: Graph) -> list[dict[str, Any]]:
        """The applier's role(s) and binding(s), then kro's list/watch ClusterRole; for a
        Graph with member targets, last, the Role that lets its ServiceAccount read those
        clusters' Secrets."""
        placed = placement(graph, self.local_cluster)
        by_scope: dict[str, set[Permission]] = {}
        watched: set[Permission] = set()
        for node in graph.nodes.values():
            needed = applier_permissions(node) if placed.on_hub(node) else set()
            if not needed:
                continue
            scope = scope_of(node, self.namespace).namespace
            by_scope.setdefault(scope, set()).update(needed)
            watched.update(Permission(node.gvk.group, node.resource, v) for v in WATCH_VERBS)
        subject = {
            "kind": "ServiceAccount",
            "name": self.service_account,
            "namespace": self.namespace,
        }
        prefix = f"{self.fullname}:graph"
        documents: list[dict[str, Any]] = []
        if CLUSTER in by_scope:  # one ClusterRole covers every namespace the Graph writes
            permissions = set().union(*by_scope.values())
            name = f"{prefix}:{self.namespace}:{graph.rgd_name}"
            documents += role_and_binding("ClusterRole", name, None, permissions, subject)
        else:
            for where, permissions in sorted(by_scope.items()):
                name = f"{prefix}:{graph.rgd_name}"
                if where != self.namespace:
                    name = f"{prefix}:{self.namespace}:{graph.rgd_name}"
                documents += role_and_binding("Role", name, where, permissions, subject)
        if watched:
            watcher = f"{self.fullname}:controller:graph:{self.namespace}:{graph.rgd_name}"
            documents.append(
                cluster_role(watcher, rules_for(watched), aggregation=self.aggregation)
            )
        if placed.members:
            documents += secret_reader(
                self._secrets_role(graph), self.secrets_namespace, list(placed.members), subject
            )
        return documents

    def notes(self, graph: Graph) -> list[str]:
        placed = placement(graph, self.local_cluster)
        where = f'Graph "{graph.rgd_name}"'
        lines = []
        if placed.members:
            lines.append(
                f"{where}: nodes that target a member cluster are left out of the roles of "
                f"{self.applier} and of kro's watch role: kro applies them with the member's "
                "own credentials (its registry Secret), which must allow there:"
            )
            lines += _members_lines(placed, applier_permissions, "node")
            lines.append(
                f"{where}: {self.applier} reaches a member cluster only if it may get that "
                f"cluster's Secret in {self.secrets_namespace} (M-13): the Role "
                f"{self._secrets_role(graph)} grants it"
            )
        if placed.computed:
            ids = ", ".join(node.id for node in placed.computed)
            needed = permission_list(member_permissions(placed.computed, applier_permissions))
            lines.append(
                f"{where}: nodes whose target is computed per instance ({ids}): the roles keep "
                "their kinds (a target may name the hub); each member cluster one names must "
                f"allow there: {needed}; and {self.applier} must be allowed to get that "
                f"cluster's Secret in {self.secrets_namespace} (M-13)"
            )
        return lines

    def _secrets_role(self, graph: Graph) -> str:
        return f"{self.fullname}:graph:{self.namespace}:{graph.rgd_name}:clusters"

    def _cluster_wide_reasons(self, graph: Graph) -> list[str]:
        """Why the applier needs a ClusterRole, one line per node that reaches past a namespace
        (in the hub: a node in a member cluster needs no role here)."""
        placed = placement(graph, self.local_cluster)
        return [
            f'node "{node.id}": {scope.why}'
            for node in graph.nodes.values()
            if placed.on_hub(node) and applier_permissions(node)
            for scope in (scope_of(node, self.namespace),)
            if scope.namespace == CLUSTER
        ]


def secret_reader(
    name: str, namespace: str, clusters: Sequence[str], subject: Mapping[str, str]
) -> list[dict[str, Any]]:
    """A Role and RoleBinding letting `subject` get the named clusters' registry Secrets, and
    no other Secret: the permission by which a Graph reaches those clusters (M-13)."""
    metadata = {"name": name, "namespace": namespace}
    role = {
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": dict(metadata),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": sorted(clusters),
                "verbs": ["get"],
            }
        ],
    }
    binding = {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": dict(metadata),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
        "subjects": [dict(subject)],
    }
    return [role, binding]


def applier_of(graph_obj: Mapping[str, Any]) -> str:
    """The ServiceAccount a Graph applies as: `spec.serviceAccountName`, else `default`."""
    spec = graph_obj.get("spec")
    name = spec.get("serviceAccountName") if isinstance(spec, Mapping) else None
    return str(name or DEFAULT_SERVICE_ACCOUNT)
