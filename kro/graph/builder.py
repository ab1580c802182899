"""kro.graph.builder: compile a ResourceGraphDefinition into a `Graph` (reference §1.E;
upstream `Builder.NewResourceGraphDefinition`).

The stages, in the order upstream runs them (each has its own error class and message prefix,
see `build_errors`):

1. `validation`    kind, ids, iterator names, template XOR externalRef   G-01..G-03
2. SimpleSchema    `spec.schema.spec` + `types` → instance spec schema   G-04
3. `resources`     structure, kind, schema, scope, literals              G-05..G-12
4. `environment`   `schema` + every resource id, typed                   G-18
5. `nodes`         template/forEach/includeWhen/readyWhen expressions    G-13, G-14, G-19..G-24
6. `ordering`      cycle check, topological order, apply-order waves     G-15..G-17
7. `status`        projected status fields → inferred status schema      T-01..T-03
8. `conditions`    author conditions                                     K-01..K-03
9. `crd`           the instance CRD                                      S-28

Pure: schemas come from the injected `SchemaResolver` (sync); `build_graph_async` first awaits
`resolver.prefetch(...)` so a live resolver can do its I/O before the synchronous build.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

from kro.api.names import KRO_DOMAIN, RGD_KIND, SCOPE_CLUSTER, SCOPE_NAMESPACED
from kro.cel import CelDeclarationError, CelEnvironment, CelOptions, EvaluationLimits
from kro.graph.build_errors import (
    ConditionsError,
    InstanceSchemaError,
    ResourceBuildError,
    RGDValidationError,
    StatusSchemaError,
)
from kro.graph.conditions import compile_conditions
from kro.graph.crd import synthesize_crd
from kro.graph.deferred import Deferrals
from kro.graph.environment import (
    SCHEMA_VARIABLE,
    instance_variable_schema,
    list_schema,
    object_meta_schema,
)
from kro.graph.errors import GraphError, SchemaError, TemplateError
from kro.graph.hashing import spec_hash
from kro.graph.model import Graph, Instance
from kro.graph.nodes import NodeContext, compile_node
from kro.graph.options import BuildOptions as BuildOptions  # noqa: PLC0414 (re-exported)
from kro.graph.ordering import order_nodes
from kro.graph.plural import resource_plural
from kro.graph.resolver import GVK, ClusterSchemas, SchemaResolver, referenced_gvks
from kro.graph.resources import ParsedResource, parse_resource
from kro.graph.simpleschema import StatusSection, to_openapi_spec, walk_status
from kro.graph.status import CompiledStatus, compile_status
from kro.graph.targets import check_schema_only, resolver_for, targeted_gvks
from kro.graph.validation import TargetRules, validate_kind, validate_resources

_OBJECT_META_GVK: Final = GVK("", "v1", "ConfigMap")


def split_rgd(rgd: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """(name, spec) of a whole RGD object, or ("", spec) when given the spec itself."""
    spec = rgd.get("spec")
    if isinstance(spec, Mapping) and (rgd.get("kind") == RGD_KIND or "metadata" in rgd):
        metadata = rgd.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        return (name if isinstance(name, str) else ""), spec
    return "", rgd


def _schema_block(spec: Mapping[str, Any], rgd: str) -> Mapping[str, Any]:
    block = spec.get("schema")
    if not isinstance(block, Mapping):
        raise RGDValidationError("spec.schema must be a map", rule="A-02", rgd=rgd)
    return block


def _spec_schema(block: Mapping[str, Any], rgd: str) -> dict[str, Any]:
    """G-04: the SimpleSchema of `spec` (and `types`) as OpenAPI."""
    try:
        return to_openapi_spec(block.get("spec"), block.get("types"))
    except SchemaError as err:
        raise InstanceSchemaError(
            str(err), rule="G-04", rgd=rgd, field_path=err.field_path, expression=err.expression
        ) from err


def _status_section(block: Mapping[str, Any], rgd: str) -> StatusSection:
    """T-01/K-01 shape of `spec.schema.status`, before any expression is compiled."""
    try:
        return walk_status(block.get("status"))
    except GraphError as err:
        path = err.field_path or "status"
        cls = ConditionsError if path.startswith("status.conditions") else StatusSchemaError
        rule = "K-01" if cls is ConditionsError else "T-01"
        detail = f"{path}: {err}" if isinstance(err, TemplateError) else str(err)
        raise cls(detail, rule=rule, rgd=rgd, field_path=path, expression=err.expression) from err


def _environment(
    options: BuildOptions,
    instance_schema: Mapping[str, Any],
    parsed: Sequence[ParsedResource],
    rgd: str,
) -> CelEnvironment:
    """G-18: `schema` plus each resource id typed from its kind (lists for collections)."""
    limits = EvaluationLimits(cost_limit=options.cel_cost_limit or None)  # 0: off (V-10)
    env = CelEnvironment(CelOptions(omit_function=options.omit_function, limits=limits))
    try:
        env.declare(SCHEMA_VARIABLE, instance_schema)
    except CelDeclarationError as err:
        raise InstanceSchemaError(str(err), rule="G-18", rgd=rgd) from err
    for resource in parsed:
        schema = resource.resolved.schema
        try:
            env.declare(resource.id, list_schema(schema) if resource.type.is_list else schema)
        except CelDeclarationError as err:
            raise ResourceBuildError(
                str(err), rule="G-18", rgd=rgd, resource_id=resource.id
            ) from err
    return env


def _instance(
    block: Mapping[str, Any],
    kind: str,
    spec_schema: Mapping[str, Any],
    status: CompiledStatus,
) -> Instance:
    crd = synthesize_crd(block, spec_schema, status.schema)
    version = crd["spec"]["versions"][0]
    status_schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    return Instance(
        group=str(block.get("group") or KRO_DOMAIN),
        version=str(block.get("apiVersion", "")),
        kind=kind,
        plural=resource_plural(kind),
        namespaced=(block.get("scope") or SCOPE_NAMESPACED) != SCOPE_CLUSTER,
        crd=crd,
        spec_schema=spec_schema,
        status_schema=status_schema,
    )


def build_graph(
    rgd: Mapping[str, Any],
    resolver: SchemaResolver,
    *,
    options: BuildOptions | None = None,
    clusters: ClusterSchemas | None = None,
) -> Graph:
    """Validate and compile an RGD (the object, or its `spec`) into a `Graph`. `clusters`:
    member clusters' schemas, for resources whose literal target is one (MultiCluster).

    Raises a `BuildError` subclass (a `GraphError`) whose message is upstream's and whose
    fields say where: rgd, resource_id, field_path, expression, and the reference `rule`.
    """
    options = options or BuildOptions()
    name, spec = split_rgd(rgd)
    block = _schema_block(spec, name)
    kind = validate_kind(block.get("kind"), name)
    inputs = validate_resources(
        spec.get("resources"),
        name,
        options.max_collection_dimension_size,
        deletion_policy_gate=options.deletion_policy,
        deferred_gate=options.deferred_schema_resolution,
        targets=TargetRules(
            gate=options.multi_cluster, secrets_namespace=options.cluster_secrets_namespace
        ).spec_wide(spec, name),
    )
    namespaced = (block.get("scope") or SCOPE_NAMESPACED) != SCOPE_CLUSTER
    spec_schema = _spec_schema(block, name)
    section = _status_section(block, name)
    deferrals = Deferrals(
        enabled=options.deferred_schema_resolution, instance_namespaced=namespaced
    )
    parsed = [
        deferrals.parse(
            r,
            partial(
                parse_resource,
                r,
                resolver_for(r.target, resolver, clusters, rgd=name, resource_id=r.id),
                instance_namespaced=namespaced,
                rgd=name,
            ),
            name,
        )
        for r in inputs
    ]
    instance_schema = instance_variable_schema(
        spec_schema, object_meta_schema(resolver), namespaced=namespaced
    )
    env = _environment(options, instance_schema, parsed, name)
    ctx = NodeContext(
        rgd=name,
        base=env,
        index_of={p.id: p.index for p in parsed},
        instance_namespaced=namespaced,
    )
    check_schema_only(spec, env, name)
    nodes = [
        deferrals.confirm(compile_node(p, ctx), ctx.resource_ids, optional=p.input.optional)
        for p in parsed
    ]
    order, apply_orders = order_nodes(nodes, name)
    ids = ctx.resource_ids
    status = compile_status(section.fields, env, resource_ids=ids, rgd=name)
    conditions = compile_conditions(section.conditions or (), env, resource_ids=ids, rgd=name)
    by_id = {n.id: dataclasses.replace(n, apply_order=apply_orders[n.id]) for n in nodes}
    return Graph(
        rgd_name=name,
        instance=_instance(block, kind, spec_schema, status),
        nodes={node_id: by_id[node_id] for node_id in order},
        topological_order=tuple(order),
        status_fields=status.fields,
        conditions=conditions,
        environment=env,
        spec_hash=spec_hash(spec),
        max_collection_size=options.max_collection_size,
    )


async def build_graph_async(
    rgd: Mapping[str, Any],
    resolver: SchemaResolver,
    *,
    options: BuildOptions | None = None,
    clusters: ClusterSchemas | None = None,
) -> Graph:
    """`build_graph` after `await resolver.prefetch(...)` of every kind the RGD names (and of
    the kinds sent to each member cluster a literal target names, from that cluster)."""
    _, spec = split_rgd(rgd)
    await resolver.prefetch([*referenced_gvks(spec), _OBJECT_META_GVK])
    if clusters is not None:
        for cluster, gvks in targeted_gvks(spec).items():
            with contextlib.suppress(GraphError):  # build_graph reports the cluster
                await clusters.resolver(cluster).prefetch(gvks)
    return build_graph(rgd, resolver, options=options, clusters=clusters)
