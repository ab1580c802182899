"""kro.graph.graph_kind: compile a `Graph` object (kro.run/v1alpha1, V-40..V-52) into a `Graph`.

A `Graph` has no schema, no CRD and no instances: its nodes are the whole program. They compile
into the same model as an RGD's resources, so one engine runs both:

| Graph node          | model node                                  |
|---------------------|---------------------------------------------|
| `template`          | RESOURCE, or COLLECTION with `forEach`      |
| `ref` by name       | EXTERNAL (a missing target only waits)      |
| `ref` by selector   | EXTERNAL_COLLECTION (a list, maybe empty)   |
| `def`               | VALUE, or VALUE_COLLECTION with `forEach`   |
| `patch`             | PATCH (one target per forEach row)          |
| `graph`             | its nodes, then a VALUE: the map of theirs  |

What differs from an RGD is decided here and carried by the model: there is no `schema`
variable, ids follow the Graph's own rules and reserved words (V-42), each node kind accepts its
own modifiers (V-50), a literal `def` is typed from its values (V-45) so a misspelt field is a
compile error, and readyWhen reports without gating (`Graph.readiness_gates`, V-52).

A `patch` contributes fields to objects the Graph does not own, through one endpoint: the
`status` subresource when its only top-level field is `status`, the object itself otherwise
(`patch_endpoint`). It publishes nothing, so no expression may read it.

A node whose apiVersion or kind is an expression has no schema to check against: its fields
are untyped, what reads it sees a dynamic value, and the engine looks its kind up per object
(`Node.dynamic_type`, V-48).

A `graph` node is a frame of its own (V-47, V-49): its nodes' ids are `outer/inner` in the
compiled graph, and each nested node keeps the names its frame sees (`Graph.scopes`: its
siblings, then what it captures from enclosing frames, the nearer shadowing the farther) and
the environment they are typed in. The `graph` node's value is the map of its nodes' values.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from kro.api.graph import (
    GRAPH_GROUP,
    GRAPH_KIND,
    GRAPH_PLURAL,
    GRAPH_VERSION,
    NODE_ID_PATTERN,
    RESERVED_ITERATOR_NAMES,
    node_id_problem,
)
from kro.cel import CelDeclarationError, CelEnvironment, CelOptions, EvaluationLimits
from kro.graph.deferred import Deferrals
from kro.graph.errors import GraphError
from kro.graph.hashing import spec_hash
from kro.graph.model import Graph, Instance, Node, NodeType
from kro.graph.nodes import NodeContext, compile_node
from kro.graph.options import BuildOptions
from kro.graph.ordering import order_nodes
from kro.graph.resolver import (
    GVK,
    ClusterSchemas,
    ResolvedSchema,
    SchemaResolver,
    referenced_gvks,
)
from kro.graph.resources import (
    ParsedResource,
    copy_tree,
    parse_resource,
    serialize_external_ref,
)
from kro.graph.targets import (
    TARGET_FIELD,
    TargetProblem,
    parse_target,
    resolver_for,
    targeted_gvks,
)
from kro.graph.templatecheck import parse_template_fields
from kro.graph.validation import (
    OPTIONAL_FIELD,
    ResourceInput,
    check_selector,
    optional_problem,
)

__all__ = ["GraphCompileError", "compile_graph", "compile_graph_async"]

_NAME: Final = re.compile(NODE_ID_PATTERN)  # V-42: node ids and forEach iterator names
NODE_KINDS: Final = ("template", "ref", "def", "graph", "patch")
_MODIFIERS: Final = {  # V-50: which node kinds accept which modifier
    "includeWhen": frozenset({"template", "ref", "def", "patch"}),
    OPTIONAL_FIELD: frozenset({"template", "ref", "patch"}),  # kro.graph.deferred
    "readyWhen": frozenset({"template", "ref", "def"}),
    "forEach": frozenset({"template", "def", "patch"}),
    TARGET_FIELD: frozenset({"template", "ref", "patch"}),  # M-11, kro.graph.targets
}
MAX_FOREACH_DIMENSIONS: Final = 10
"""V-50: a standalone Graph's fixed limit (the RGD dimension flag does not apply)."""

_VALUE_GVK: Final = GVK("", "", "")


class GraphCompileError(GraphError):
    """The Graph cannot be compiled: `Accepted=False`, reason `InvalidGraph`, this message."""


def _fail(detail: str, node_id: str | None = None) -> GraphCompileError:
    return GraphCompileError(f'node "{node_id}": {detail}' if node_id else detail)


def _check_id(node_id: Any, seen: set[str]) -> str:
    if not isinstance(node_id, str):
        raise _fail(f'id "{node_id}" must match {NODE_ID_PATTERN}')
    problem = node_id_problem(node_id)
    if problem is not None:
        raise _fail(problem)
    if node_id in seen:
        raise _fail(f'duplicate node id "{node_id}"')
    seen.add(node_id)
    return node_id


def _node_kind(raw: Mapping[str, Any], node_id: str) -> str:
    present = [k for k in NODE_KINDS if raw.get(k) is not None]
    if len(present) != 1:
        raise _fail("exactly one of template, ref, def, graph, patch must be set", node_id)
    kind = present[0]
    for modifier, allowed in _MODIFIERS.items():
        if raw.get(modifier) and kind not in allowed:
            raise _fail(f"{modifier} is not supported on {kind} nodes", node_id)
    return kind


_IDENTITY_KEYS: Final = frozenset({"apiVersion", "kind", "metadata"})
_IDENTITY_METADATA: Final = frozenset({"name", "namespace"})
_FORBIDDEN_METADATA: Final = ("ownerReferences", "finalizers", "deletionTimestamp", "uid")
STATUS_ENDPOINT: Final = "status"


def patch_endpoint(body: Mapping[str, Any]) -> str:
    """`status` when a patch contributes only status, "" (the object itself) otherwise."""
    return STATUS_ENDPOINT if set(body) - _IDENTITY_KEYS == {STATUS_ENDPOINT} else ""


def _check_patch(body: Mapping[str, Any], node_id: str) -> None:
    """V-46: a patch names its target and contributes fields through one endpoint."""
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("name") in (None, ""):
        raise _fail("a patch node needs metadata.name to name its target", node_id)
    for key in _FORBIDDEN_METADATA:
        if key in metadata:
            raise _fail(f"a patch node may not set metadata.{key}", node_id)
    if "scale" in body:
        raise _fail("a patch node may not contribute to the scale subresource", node_id)
    main = (set(body) - _IDENTITY_KEYS - {STATUS_ENDPOINT}) or (set(metadata) - _IDENTITY_METADATA)
    status = STATUS_ENDPOINT in body
    if main and status:
        raise _fail("a patch node targets a single endpoint: status or the object", node_id)
    if not main and not status:
        raise _fail("patch node contributes no fields", node_id)


def _strings(raw: Any, where: str, node_id: str) -> tuple[Any, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _fail(f"{where} must be a list", node_id)
    return tuple(raw)


def _for_each(raw: Any, node_id: str, ids: frozenset[str]) -> tuple[tuple[str, Any], ...]:
    """V-42/V-50: iterator names follow the id rules (`each` excepted), at most 10 axes."""
    entries = _strings(raw, "forEach", node_id)
    if len(entries) > MAX_FOREACH_DIMENSIONS:
        raise _fail(
            f"forEach cannot have more than {MAX_FOREACH_DIMENSIONS} dimensions, "
            f"got {len(entries)}",
            node_id,
        )
    out: list[tuple[str, Any]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or len(entry) != 1:
            raise _fail(f"forEach[{i}] must have exactly one iterator", node_id)
        ((name, expression),) = entry.items()
        if not isinstance(name, str) or not _NAME.match(name):
            raise _fail(f'forEach iterator "{name}" must match {NODE_ID_PATTERN}', node_id)
        if name in RESERVED_ITERATOR_NAMES:
            raise _fail(f'forEach iterator "{name}" is reserved', node_id)
        if name == node_id or name in ids:
            raise _fail(f'forEach iterator "{name}" conflicts with a node id', node_id)
        if any(name == seen for seen, _ in out):
            raise _fail(f'forEach iterator "{name}" is declared more than once', node_id)
        out.append((name, expression))
    return tuple(out)


def _ref(raw: Any, node_id: str) -> Mapping[str, Any]:
    """V-44: exactly one of `metadata.name` (one object) or `metadata.selector` (a list)."""
    metadata = raw.get("metadata") if isinstance(raw, Mapping) else None
    if not isinstance(metadata, Mapping):
        raise _fail("ref.metadata must be a map", node_id)
    has_name = metadata.get("name") not in (None, "")
    if has_name == (metadata.get("selector") is not None):
        raise _fail("ref.metadata needs exactly one of name or selector", node_id)
    check_selector(metadata.get("selector"), node_id, "")
    assert isinstance(raw, Mapping)
    return raw


def _dynamic_type(obj: Mapping[str, Any]) -> bool:
    return any("${" in str(obj.get(key) or "") for key in ("apiVersion", "kind"))


_SCALAR_TYPES: Final = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))


def value_schema(value: Any) -> dict[str, Any]:
    """V-45: a `def` literal is typed from its value; what an expression yields is dynamic."""
    if isinstance(value, str) and "${" in value:
        return {"x-kubernetes-preserve-unknown-fields": True}
    for python_type, openapi_type in _SCALAR_TYPES:  # bool before int: a bool is an int
        if isinstance(value, python_type):
            return {"type": openapi_type}
    if isinstance(value, Mapping):
        return {
            "type": "object",
            "properties": {str(k): value_schema(v) for k, v in value.items()},
        }
    if isinstance(value, list):
        items = value_schema(value[0]) if value else {"x-kubernetes-preserve-unknown-fields": True}
        return {"type": "array", "items": items}
    return {"x-kubernetes-preserve-unknown-fields": True}


@dataclass(frozen=True, slots=True)
class _Input:
    """One node of some frame: its kind, its uncompiled form (with its own id), the id it has
    in the compiled graph (`outer/inner` when nested) and the names its frame sees."""

    kind: str
    resource: ResourceInput
    qualified: str
    scope: Mapping[str, str]
    children: tuple[str, ...] = ()  # a `graph` node's own nodes (their own ids)
    raw_target: Any = None  # the node's `target` block as written (checked by the gate)


def _collect(nodes: Any, path: str, outer: Mapping[str, str], out: list[_Input]) -> None:
    """The nodes of one frame and, depth first, of the frames nested in it (V-47): ids are
    unique per frame; a frame sees its own nodes, then what the enclosing frames see (a nearer
    id shadows a farther one)."""
    where = f'graph node "{path}": ' if path else ""
    if not isinstance(nodes, list) or not nodes:
        raise _fail(f"{where}a graph needs at least one node")
    ids = frozenset(
        n["id"] for n in nodes if isinstance(n, Mapping) and isinstance(n.get("id"), str)
    )
    seen: set[str] = set()
    frame: list[tuple[str, str, Mapping[str, Any], Any]] = []
    for position, raw in enumerate(nodes):
        if not isinstance(raw, Mapping):
            raise _fail(f"{where}nodes[{position}] must be a map")
        node_id = _check_id(raw.get("id"), seen)
        kind = _node_kind(raw, node_id)
        body = raw[kind]
        if not isinstance(body, Mapping):
            raise _fail(f"{kind} must be a map", node_id)
        frame.append((node_id, kind, raw, body))
    qualify = {i: f"{path}/{i}" if path else i for i in ids}
    scope = {**outer, **qualify}
    for node_id, kind, raw, body in frame:
        qualified = qualify[node_id]
        if kind == "graph":
            inner = {k: v for k, v in scope.items() if v != qualified}  # not itself: a cycle
            first = len(out)
            _collect(body.get("nodes"), qualified, inner, out)
            children = tuple(
                i.resource.id for i in out[first:] if i.qualified.rpartition("/")[0] == qualified
            )
            out.append(
                _Input(
                    kind,
                    _resource(node_id, len(out), raw=raw, body=body, kind=kind, ids=ids),
                    qualified,
                    {**inner, **{c: f"{qualified}/{c}" for c in children}},
                    children,
                )
            )
            continue
        checked = _ref(body, node_id) if kind == "ref" else body
        if kind == "patch":
            _check_patch(body, node_id)
        out.append(
            _Input(
                kind,
                _resource(node_id, len(out), raw=raw, body=checked, kind=kind, ids=ids),
                qualified,
                scope,
                raw_target=raw.get(TARGET_FIELD),
            )
        )


def _resource(
    node_id: str,
    index: int,
    *,
    raw: Mapping[str, Any],
    body: Mapping[str, Any],
    kind: str,
    ids: frozenset[str],
) -> ResourceInput:
    optional = raw.get(OPTIONAL_FIELD)
    problem = optional_problem(optional, gate=True)  # the gate: compile_graph's options
    if problem is not None:
        raise _fail(problem, node_id)
    target = parse_target(raw.get(TARGET_FIELD), where="target", gate=True)
    if isinstance(target, TargetProblem):
        raise _fail(target.message, node_id)
    return ResourceInput(
        target=target,
        optional=optional is True,
        id=node_id,
        index=index,
        template=body if kind != "ref" else None,
        external_ref=body if kind == "ref" else None,
        ready_when=_strings(raw.get("readyWhen"), "readyWhen", node_id),
        include_when=_strings(raw.get("includeWhen"), "includeWhen", node_id),
        for_each=_for_each(raw.get("forEach"), node_id, ids),
    )


def _value(resource: ResourceInput, name: str) -> ParsedResource:
    """A `def` as a node: its template is the value, typed from its literals (V-45)."""
    assert resource.template is not None
    obj = copy_tree(dict(resource.template))
    schema = value_schema(obj)
    fields = parse_template_fields(obj, None, resource_id=resource.id, rgd=name)
    node_type = NodeType.VALUE_COLLECTION if resource.for_each else NodeType.VALUE
    resolved = ResolvedSchema(_VALUE_GVK, schema, namespaced=False, resource="-")
    return ParsedResource(resource, node_type, _VALUE_GVK, resolved, obj, tuple(fields))


def _parse(
    item: _Input, resolver: SchemaResolver, name: str, deferrals: Deferrals
) -> ParsedResource:
    kind, resource = item.kind, item.resource
    if kind == "def":
        return _value(resource, name)
    body = resource.template if resource.template is not None else resource.external_ref
    if body is not None and _dynamic_type(body):
        parsed = _untyped(resource, name)
    else:
        parsed = deferrals.parse(
            resource,
            partial(parse_resource, resource, resolver, instance_namespaced=True, rgd=name),
            name,
            key=item.qualified,
        )
    if kind == "patch":
        return dataclasses.replace(parsed, type=NodeType.PATCH)
    return parsed


def _check_unread(patches: Sequence[str], nodes: Sequence[Node]) -> None:
    for node in nodes:
        for patch in patches:
            if patch in node.dependencies:
                raise _fail(
                    f'patch node "{patch}" does not publish a value into scope and cannot be '
                    "referenced in CEL expressions",
                    node.id,
                )


_ANY_OBJECT: Final = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _untyped(resource: ResourceInput, name: str) -> ParsedResource:
    """V-48: a node of a kind known only once rendered; namespaced until the kind says not."""
    if resource.external_ref is not None:
        obj: Mapping[str, Any] = serialize_external_ref(resource.external_ref)
    else:
        assert resource.template is not None
        obj = copy_tree(dict(resource.template))
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise _fail(f"{key} must be a string", resource.id)
    if not isinstance(obj.get("metadata"), Mapping):
        raise _fail("metadata must be a map", resource.id)
    if resource.external_ref is not None:
        selector = obj["metadata"].get("selector") is not None
        node_type = NodeType.EXTERNAL_COLLECTION if selector else NodeType.EXTERNAL
    else:
        node_type = NodeType.COLLECTION if resource.for_each else NodeType.RESOURCE
    fields = parse_template_fields(obj, None, resource_id=resource.id, rgd=name)
    resolved = ResolvedSchema(_VALUE_GVK, _ANY_OBJECT, namespaced=True, resource="-")
    return ParsedResource(resource, node_type, _VALUE_GVK, resolved, obj, tuple(fields))


def _environment(options: BuildOptions, parsed: Sequence[ParsedResource]) -> CelEnvironment:
    """Every node id, typed from its kind (lists for collections); no `schema` (V-50)."""
    limits = EvaluationLimits(cost_limit=options.cel_cost_limit or None)
    env = CelEnvironment(CelOptions(omit_function=options.omit_function, limits=limits))
    for resource in parsed:
        schema = resource.resolved.schema
        if resource.type.is_list:
            schema = {"type": "array", "items": schema}
        try:
            env.declare(resource.id, schema)
        except CelDeclarationError as err:
            raise _fail(str(err), resource.id) from err
    return env


def _declared(parsed: ParsedResource) -> Mapping[str, Any]:
    """How a node is declared to CEL: its schema, as a list for a collection."""
    schema = parsed.resolved.schema
    return {"type": "array", "items": schema} if parsed.type.is_list else schema


def _frame_value(item: _Input, parsed: Mapping[str, ParsedResource], name: str) -> ParsedResource:
    """V-47: a `graph` node's value is the map of its nodes' values (patches publish none)."""
    children = [
        c for c in item.children if parsed[f"{item.qualified}/{c}"].type is not NodeType.PATCH
    ]
    template = {c: "${" + c + "}" for c in children}
    schema = {
        "type": "object",
        "properties": {c: _declared(parsed[f"{item.qualified}/{c}"]) for c in children},
    }
    resource = dataclasses.replace(item.resource, template=template)
    fields = parse_template_fields(template, None, resource_id=item.resource.id, rgd=name)
    resolved = ResolvedSchema(_VALUE_GVK, schema, namespaced=False, resource="-")
    return ParsedResource(resource, NodeType.VALUE, _VALUE_GVK, resolved, template, tuple(fields))


def _one_frame(node: Node, scope: Mapping[str, str]) -> None:
    """V-49: one expression reads nodes of one frame (its own, or one it captures from)."""
    expressions = [e for f in node.fields for e in f.expressions]
    expressions += [d.expression for d in node.for_each] + list(node.include_when)
    for expression in expressions:
        frames = {scope[r].rpartition("/")[0] for r in expression.roots if r in scope}
        if len(frames) > 1:
            raise _fail(
                f'expression "{expression.expression}" mixes node references from different '
                "graph scopes",
                node.id,
            )


def _frame_env(options: BuildOptions, visible: Mapping[str, ParsedResource]) -> CelEnvironment:
    """A nested frame's environment: each name it sees, typed as the node it stands for."""
    limits = EvaluationLimits(cost_limit=options.cel_cost_limit or None)
    env = CelEnvironment(CelOptions(omit_function=options.omit_function, limits=limits))
    for visible_name, target in visible.items():
        try:
            env.declare(visible_name, _declared(target))
        except CelDeclarationError as err:
            raise _fail(str(err), visible_name) from err
    return env


def _check_targets(inputs: Sequence[_Input], options: BuildOptions) -> None:
    """`target` needs the MultiCluster gate, and names the registry's namespace only (M-11)."""
    for item in inputs:
        raw = item.raw_target
        if raw is None:
            continue
        found = parse_target(
            raw,
            where="target",
            gate=options.multi_cluster,
            secrets_namespace=options.cluster_secrets_namespace,
        )
        if isinstance(found, TargetProblem):
            raise _fail(found.message, item.qualified)


def _check_optional(inputs: Sequence[_Input], *, gate: bool) -> None:
    """`optional` needs the DeferredSchemaResolution gate (kro.graph.deferred)."""
    if gate:
        return
    for item in inputs:
        if item.resource.optional:
            problem = optional_problem(True, gate=False)
            raise _fail(str(problem), item.qualified)


def compile_graph(
    graph: Mapping[str, Any],
    resolver: SchemaResolver,
    *,
    options: BuildOptions | None = None,
    clusters: ClusterSchemas | None = None,
) -> Graph:
    """Validate and compile a Graph object; raises `GraphError` (its message is the
    `Accepted=False` message). Schemas come from `resolver`, as for RGDs."""
    options = options or BuildOptions()
    metadata = graph.get("metadata") if isinstance(graph.get("metadata"), Mapping) else {}
    name = str((metadata or {}).get("name") or "")
    spec = graph.get("spec") if isinstance(graph.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    inputs: list[_Input] = []
    _collect(spec.get("nodes"), "", {}, inputs)
    _check_optional(inputs, gate=options.deferred_schema_resolution)
    _check_targets(inputs, options)
    deferrals = Deferrals(enabled=options.deferred_schema_resolution)
    parsed: dict[str, ParsedResource] = {}
    for item in inputs:  # a frame's nodes come before its `graph` node
        parsed[item.qualified] = (
            _frame_value(item, parsed, name)
            if item.kind == "graph"
            else _parse(
                item,
                resolver_for(
                    item.resource.target, resolver, clusters, rgd=name, resource_id=item.qualified
                ),
                name,
                deferrals,
            )
        )
    top = [parsed[i.qualified] for i in inputs if "/" not in i.qualified]
    env = _environment(options, top)
    contexts: dict[tuple[tuple[str, str], ...], NodeContext] = {}

    def context(scope: Mapping[str, str]) -> NodeContext:
        key = tuple(sorted(scope.items()))
        found = contexts.get(key)
        if found is None:
            frame_env = (
                env
                if key == tuple(sorted((i, i) for i in scope))
                else _frame_env(options, {n: parsed[t] for n, t in scope.items()})
            )
            found = contexts[key] = NodeContext(
                rgd=name,
                base=frame_env,
                index_of={n: parsed[t].index for n, t in scope.items()},
                instance_namespaced=True,
            )
        return found

    nodes: list[Node] = []
    scopes: dict[str, Mapping[str, str]] = {}
    environments: dict[str, CelEnvironment] = {}
    for item in inputs:
        item_parsed = parsed[item.qualified]
        ctx = context(item.scope)
        node = compile_node(item_parsed, ctx)
        if item_parsed.gvk == _VALUE_GVK and not item_parsed.type.is_value:
            node = dataclasses.replace(node, dynamic_type=True)
        node = deferrals.confirm(
            node, item.scope, optional=item.resource.optional, key=item.qualified
        )
        _one_frame(node, item.scope)
        node = dataclasses.replace(
            node,
            id=item.qualified,
            dependencies=tuple(item.scope[d] for d in node.dependencies),
        )
        if ctx.base is not env:
            scopes[item.qualified] = item.scope
            environments[item.qualified] = ctx.base
        nodes.append(node)
    _check_unread([n.id for n in nodes if n.type is NodeType.PATCH], nodes)
    order, apply_orders = order_nodes(nodes, name)
    by_id = {n.id: dataclasses.replace(n, apply_order=apply_orders[n.id]) for n in nodes}
    return Graph(
        rgd_name=name,
        instance=Instance(
            group=GRAPH_GROUP,
            version=GRAPH_VERSION,
            kind=GRAPH_KIND,
            plural=GRAPH_PLURAL,
            namespaced=True,
            crd={},
            spec_schema={},
            status_schema={},
        ),
        nodes={node_id: by_id[node_id] for node_id in order},
        topological_order=tuple(order),
        status_fields=(),
        conditions=(),
        environment=env,
        spec_hash=spec_hash(spec),
        max_collection_size=options.max_collection_size,
        scopes=scopes,
        environments=environments,
        readiness_gates=False,
    )


def _literal_kinds(nodes: Any) -> list[dict[str, Any]]:
    """RGD-shaped resources naming every literal kind of a frame and its nested frames."""
    found: list[dict[str, Any]] = []
    for n in nodes if isinstance(nodes, list) else []:
        if not isinstance(n, Mapping):
            continue
        if isinstance(n.get("graph"), Mapping):
            found += _literal_kinds(n["graph"].get("nodes"))
        for key, as_key in (
            ("template", "template"),
            ("patch", "template"),
            ("ref", "externalRef"),
        ):
            body = n.get(key)
            if isinstance(body, Mapping) and not _dynamic_type(body):
                found.append({"id": n.get("id"), as_key: body, TARGET_FIELD: n.get(TARGET_FIELD)})
    return found


async def compile_graph_async(
    graph: Mapping[str, Any],
    resolver: SchemaResolver,
    *,
    options: BuildOptions | None = None,
    clusters: ClusterSchemas | None = None,
) -> Graph:
    """`compile_graph` after the resolver fetched every literal kind the nodes name (and each
    member cluster a literal target names, the kinds sent there)."""
    spec = graph.get("spec") if isinstance(graph.get("spec"), Mapping) else {}
    nodes = (spec or {}).get("nodes") if isinstance(spec, Mapping) else None
    resources = _literal_kinds(nodes)
    await resolver.prefetch(referenced_gvks({"resources": resources}))
    if clusters is not None:
        for cluster, gvks in targeted_gvks({"resources": resources}).items():
            with contextlib.suppress(GraphError):  # compile_graph reports the cluster
                await clusters.resolver(cluster).prefetch(gvks)
    return compile_graph(graph, resolver, options=options, clusters=clusters)
