"""kro.graph.targets: the cluster a resource (or a Graph node) is sent to (M-10..M-12).

A `target` block names a member cluster by its registry Secret:

    target:
      cluster:
        kubeconfigSecretName: ${schema.spec.cluster}   # or a literal
        kubeconfigSecretNamespace: kro-system          # optional: the registry's namespace only

`spec.target` applies to every resource of an RGD; a resource's (or a Graph node's) own block
overrides it. The name is compiled as one more field of the node's template, an annotation kro
reserves (`internal.kro.run/target-cluster`): it is then type-checked, its dependencies order
the node, a `forEach` row computes its own target, and `includeWhen` skips it, with no second
mechanism beside the template's. The engine reads the annotation back from each rendered
object and removes it before anything is applied.

An RGD-wide target may read `schema` only (the instance's own fields): every resource shares
it, and a target that depended on one of them would make that resource's place depend on
itself. Everything here needs the MultiCluster gate; with it off a `target` is a build error
naming the gate, and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.api.names import ANNOTATION_TARGET_CLUSTER, FEATURE_MULTI_CLUSTER
from kro.cel import CelEnvironment
from kro.graph.build_errors import ResourceBuildError, RGDValidationError
from kro.graph.environment import SCHEMA_VARIABLE
from kro.graph.errors import GraphError
from kro.graph.expressions import ExpressionProblem, compile_checked
from kro.graph.model import Node
from kro.graph.resolver import (
    GVK,
    ClusterSchemas,
    InCluster,
    SchemaResolver,
    referenced_gvks,
)
from kro.graph.template import parse_template

__all__ = [
    "TARGET_FIELD",
    "TargetProblem",
    "check_schema_only",
    "graph_literal_targets",
    "inject_target",
    "literal_target",
    "node_cluster",
    "parse_target",
    "resolver_for",
    "targeted_gvks",
]

TARGET_FIELD: Final = "target"
_CLUSTER: Final = "cluster"
_NAME: Final = "kubeconfigSecretName"
_NAMESPACE: Final = "kubeconfigSecretNamespace"


@dataclass(frozen=True, slots=True)
class TargetProblem:
    """What is wrong with a `target` block, and where (a path under the resource or spec)."""

    message: str
    field_path: str


def parse_target(  # noqa: PLR0911 - one return per problem
    raw: Any, *, where: str, gate: bool, secrets_namespace: str = ""
) -> str | TargetProblem | None:
    """The cluster name (a literal or one `${}` text) of a `target` block at `where`, None when
    there is none, or what is wrong with it."""
    if raw is None:
        return None
    if not gate:
        return TargetProblem(
            f"{where} requires the {FEATURE_MULTI_CLUSTER} feature gate "
            f"(--feature-gates={FEATURE_MULTI_CLUSTER}=true)",
            where,
        )
    if not isinstance(raw, Mapping) or set(raw) != {_CLUSTER}:
        return TargetProblem(f"{where} must be a map with exactly one key, cluster", where)
    cluster = raw[_CLUSTER]
    path = f"{where}.{_CLUSTER}"
    if not isinstance(cluster, Mapping) or not set(cluster) <= {_NAME, _NAMESPACE}:
        return TargetProblem(f"{path} may only set {_NAME} and {_NAMESPACE}", path)
    name = cluster.get(_NAME)
    if not isinstance(name, str) or not name.strip():
        return TargetProblem(f"{path}.{_NAME} must be a non-empty string", f"{path}.{_NAME}")
    namespace = cluster.get(_NAMESPACE)
    if namespace is not None and (
        not isinstance(namespace, str) or (secrets_namespace and namespace != secrets_namespace)
    ):
        return TargetProblem(
            f"{path}.{_NAMESPACE} may only name the cluster registry's namespace "
            f'"{secrets_namespace}" (--cluster-secrets-namespace)',
            f"{path}.{_NAMESPACE}",
        )
    return name.strip()


def resolver_for(
    target: str | None,
    resolver: SchemaResolver,
    clusters: ClusterSchemas | None,
    *,
    rgd: str,
    resource_id: str,
) -> SchemaResolver:
    """Where a resource's kind is looked up (M-12): a literal target's member cluster (its
    not-found errors name it), else `resolver`. A literal target that names no registered,
    Ready cluster is a build error; the owner is built again when the cluster joins."""
    cluster = literal_target(target)
    if cluster is None or clusters is None:
        return resolver
    try:
        return InCluster(clusters.resolver(cluster), cluster)
    except GraphError as error:
        raise ResourceBuildError(
            str(error),
            rule="M-12",
            rgd=rgd,
            resource_id=resource_id,
            field_path=f"{TARGET_FIELD}.{_CLUSTER}.{_NAME}",
        ) from None


def targeted_gvks(spec: Mapping[str, Any]) -> dict[str, list[GVK]]:
    """Per member cluster a literal target names, the kinds of the resources sent there (an
    RGD's own target, else `spec.target`): what to prefetch from that cluster's schemas."""
    default = _target_text(spec.get(TARGET_FIELD))
    found: dict[str, list[GVK]] = {}
    resources = spec.get("resources")
    for resource in resources if isinstance(resources, list) else ():
        if not isinstance(resource, Mapping):
            continue
        own = _target_text(resource.get(TARGET_FIELD))
        cluster = literal_target(own if own is not None else default)
        if cluster is not None:
            kinds = found.setdefault(cluster, [])
            kinds.extend(g for g in referenced_gvks({"resources": [resource]}) if g not in kinds)
    return found


def graph_literal_targets(nodes: Any) -> set[str]:
    """Every member cluster a Graph's nodes (nested frames included) name literally."""
    found: set[str] = set()
    for node in nodes if isinstance(nodes, list) else ():
        if not isinstance(node, Mapping):
            continue
        inner = node.get("graph")
        if isinstance(inner, Mapping):
            found |= graph_literal_targets(inner.get("nodes"))
        cluster = literal_target(_target_text(node.get(TARGET_FIELD)))
        if cluster is not None:
            found.add(cluster)
    return found


def _target_text(raw: Any) -> str | None:
    cluster = raw.get(_CLUSTER) if isinstance(raw, Mapping) else None
    name = cluster.get(_NAME) if isinstance(cluster, Mapping) else None
    return name.strip() if isinstance(name, str) and name.strip() else None


def node_cluster(node: Node, own: str) -> str | None:
    """Where a compiled node's objects live: "" for the owner's own cluster (no target, or a
    literal naming `own`), the member a literal target names, None for a computed target."""
    metadata = node.template.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping) or ANNOTATION_TARGET_CLUSTER not in annotations:
        return ""
    literal = literal_target(str(annotations[ANNOTATION_TARGET_CLUSTER]))
    if literal is None:
        return None
    return "" if literal == own else literal


def literal_target(target: str | None) -> str | None:
    """The cluster a target names when it is a literal (known at build time)."""
    if target is None or "${" in target:
        return None
    return target


def inject_target(obj: dict[str, Any], target: str) -> None:
    """Carry `target` in the object kro renders for the node (see the module docstring)."""
    metadata = obj.setdefault("metadata", {})
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = metadata["annotations"] = {}
    annotations[ANNOTATION_TARGET_CLUSTER] = target


def check_schema_only(spec: Mapping[str, Any], env: CelEnvironment, rgd: str) -> None:
    """M-10: `spec.target` reads `schema` only (it applies to every resource, so reading one
    of them would make that resource's place depend on itself); a build error with its path
    otherwise."""
    target = spec.get(TARGET_FIELD)
    cluster = target.get(_CLUSTER) if isinstance(target, Mapping) else None
    text = cluster.get(_NAME) if isinstance(cluster, Mapping) else None
    if not isinstance(text, str):
        return
    for expression in parse_template(text).expressions:
        try:
            compile_checked(env, expression, allowed=frozenset({SCHEMA_VARIABLE}))
        except ExpressionProblem as problem:
            raise RGDValidationError(
                f'spec.target: the target cluster "{text}" may only read schema: {problem}',
                rule="M-10",
                rgd=rgd,
                field_path=f"spec.target.{_CLUSTER}.{_NAME}",
                expression=expression,
            ) from None
