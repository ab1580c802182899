"""kro.cli.member_schemas: `kro validate --cluster NAME=KUBECONFIG`, kinds of member clusters.

A resource whose target names a member cluster (MultiCluster, M-11) is applied there, so its
kind is the member's: a CRD installed only in member-1, or another version of it than the
hub serves. `--cluster member-1=FILE` (repeatable) makes validate type-check such a resource
against member-1's OpenAPI, read live through FILE, instead of the default (the offline bundle,
`--crd` files and `--kubeconfig`). Only a literal target picks a cluster: one computed per
instance (`${schema.spec.cluster}`) is not known before an instance exists, and is checked
against the default as before. A kind the member does not serve is an error naming the
cluster. Without `--cluster`, targeted resources are checked as they always were.

Each member is read once, up front (asyncio, all members at once), for the kinds its targeted
resources name; the build then answers from memory (kro.graph.resolver's contract).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kro.graph.resolver import (
    GVK,
    ClusterSchemas,
    InCluster,
    OfflineSchemaResolver,
    ResolvedSchema,
    SchemaResolver,
    referenced_gvks,
)
from kro.graph.targets import TARGET_FIELD, literal_target, parse_target

__all__ = [
    "MemberSchemas",
    "clusters_of",
    "literal_targets",
    "parse_cluster_flag",
    "with_member_schemas",
]


def parse_cluster_flag(text: str) -> tuple[str, str]:
    """`NAME=KUBECONFIG` of `--cluster` (argparse's type: a bad one is a usage error)."""
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"want NAME=KUBECONFIG, got {text!r}")
    return name.strip(), path.strip()


class MemberSchemas(OfflineSchemaResolver):
    """The default resolver for everything, and each member's schemas for the resources
    whose literal target names it (the builder's `clusters`, kro.graph.resolver
    .ClusterSchemas). It shares the default's CRDs, so an RGD built in the same run still
    serves its kind to the others."""

    def __init__(
        self, default: OfflineSchemaResolver, members: Mapping[str, SchemaResolver]
    ) -> None:
        super().__init__()
        self._entries = default._entries
        self._default = default
        self._members = dict(members)

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        return self._default.resolve(gvk)

    def resolver(self, cluster: str) -> SchemaResolver:
        """`cluster`'s kinds (not-found errors name it); the default for the hub or a
        cluster no `--cluster` names, as without the flag."""
        member = self._members.get(cluster)
        return self._default if member is None else InCluster(member, cluster)


def clusters_of(resolver: SchemaResolver) -> ClusterSchemas | None:
    """The member clusters' schemas `resolver` carries (`--cluster`), for the builder."""
    return resolver if isinstance(resolver, MemberSchemas) else None


def literal_targets(body: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], str]]:
    """(resource, cluster) for every resource of an RGD, or node of a Graph (nested frames
    included), whose target names a cluster literally; an RGD's `spec.target` counts for the
    resources without their own. Malformed blocks are skipped: the build reports them."""
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        return
    if isinstance(spec.get("resources"), list):
        default = _literal(spec.get(TARGET_FIELD))
        for resource in spec["resources"]:
            if isinstance(resource, Mapping):
                own = TARGET_FIELD in resource
                cluster = _literal(resource.get(TARGET_FIELD)) if own else default
                if cluster:
                    yield resource, cluster
    yield from _graph_targets(spec.get("nodes"))


def _graph_targets(nodes: Any) -> Iterator[tuple[Mapping[str, Any], str]]:
    for node in nodes if isinstance(nodes, list) else ():
        if not isinstance(node, Mapping):
            continue
        cluster = _literal(node.get(TARGET_FIELD))
        if cluster:
            yield _as_resource(node), cluster
        nested = node.get("graph")
        if isinstance(nested, Mapping):
            yield from _graph_targets(nested.get("nodes"))


def _as_resource(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Graph node in an RGD resource's shape (its literal kind, for the lookup)."""
    for key, as_key in (("template", "template"), ("patch", "template"), ("ref", "externalRef")):
        if isinstance(node.get(key), Mapping):
            return {"id": node.get("id"), as_key: node[key]}
    return {"id": node.get("id")}


def _literal(raw: Any) -> str | None:
    found = parse_target(raw, where=TARGET_FIELD, gate=True)
    return literal_target(found) if isinstance(found, str) else None


def wanted_kinds(bodies: Sequence[Mapping[str, Any]]) -> dict[str, list[GVK]]:
    """Per cluster named literally by a target, the kinds its resources name (each once)."""
    kinds: dict[str, dict[GVK, None]] = {}
    for body in bodies:
        for resource, cluster in literal_targets(body):
            found = referenced_gvks({"resources": [resource]})
            kinds.setdefault(cluster, {}).update(dict.fromkeys(found))
    return {cluster: list(found) for cluster, found in kinds.items()}


def with_member_schemas(
    members: Mapping[str, str],
    default: OfflineSchemaResolver,
    bodies: Sequence[Mapping[str, Any]],
) -> tuple[MemberSchemas, list[str]]:
    """A resolver that types targeted resources with their member's kinds, read once from
    each `--cluster` kubeconfig; and warnings (a `--cluster` no resource targets). Raises
    ClusterSchemaError naming the cluster when one cannot be read."""
    from kro.cli.cluster_schemas import quiet_logs

    wanted = wanted_kinds(bodies)
    used = {name: path for name, path in members.items() if wanted.get(name)}
    warnings = [
        f"warning: --cluster {name}: no resource targets it literally; nothing is read from it"
        for name in members
        if name not in used
    ]
    with quiet_logs():
        resolvers = asyncio.run(_prefetch_all(used, wanted)) if used else {}
    return MemberSchemas(default, resolvers), warnings


async def _prefetch_all(
    members: Mapping[str, str], wanted: Mapping[str, Sequence[GVK]]
) -> dict[str, SchemaResolver]:
    names = list(members)
    found = await asyncio.gather(*(_prefetch(n, members[n], wanted[n]) for n in names))
    return dict(zip(names, found, strict=True))


async def _prefetch(name: str, kubeconfig: str, kinds: Sequence[GVK]) -> SchemaResolver:
    from kro.cli.cluster_schemas import ClusterSchemaError
    from kro.controllers.schemas import LiveSchemaResolver
    from kro.runtime.client import Client
    from kro.runtime.errors import KubeError

    try:
        async with await Client.from_kubeconfig(kubeconfig) as client:
            live = LiveSchemaResolver(client)
            await live.prefetch(kinds)
            return live
    except (KubeError, OSError) as error:  # ConfigError is a KubeError
        message = " ".join(str(error).split())
        raise ClusterSchemaError(
            f"cannot read schemas from cluster {name} (--cluster {name}={kubeconfig}): {message}"
        ) from error
