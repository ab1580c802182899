"""kro.graph.model: the compiled graph of one ResourceGraphDefinition.

This is the contract between the builder (`kro.graph.builder`, which produces a `Graph` from an
RGD spec and a SchemaResolver), per-instance evaluation (`kro.graph.evaluate`), the offline CLI
and the controllers. Everything here is immutable and free of cluster I/O: one `Graph` is built
per GraphRevision and shared by every reconcile of every instance of that revision.

Expressions are compiled once, at build time, in the environment of their context (template,
includeWhen, readyWhen, forEach, status, conditions); evaluation only binds values and runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from kro.graph.resolver import GVK
from kro.graph.template import FieldPath

if TYPE_CHECKING:  # annotations only: code that reads a Graph need not load the CEL engine
    from kro.cel import CelEnvironment, CelType, CompiledExpression


class NodeType(StrEnum):
    """What a node stands for; decides how it is observed and whether kro writes it."""

    RESOURCE = "Resource"  # one object kro applies
    COLLECTION = "Collection"  # forEach: many objects kro applies
    EXTERNAL = "External"  # externalRef by name: read only
    EXTERNAL_COLLECTION = "ExternalCollection"  # externalRef by selector: read only, a list
    VALUE = "Value"  # a Graph's `def`: a value computed in the graph, no API object (V-45)
    VALUE_COLLECTION = "ValueCollection"  # a `def` with forEach: a list of values
    PATCH = "Patch"  # a Graph's `patch`: fields contributed to objects it does not own (V-46)

    @property
    def is_external(self) -> bool:
        return self in (NodeType.EXTERNAL, NodeType.EXTERNAL_COLLECTION)

    @property
    def is_value(self) -> bool:
        """Computed in the pass, never read from nor written to the API server."""
        return self in (NodeType.VALUE, NodeType.VALUE_COLLECTION)

    @property
    def is_list(self) -> bool:
        """Bound in CEL as a list of objects rather than one object (F-09, X-03)."""
        return self in (
            NodeType.COLLECTION,
            NodeType.EXTERNAL_COLLECTION,
            NodeType.VALUE_COLLECTION,
        )


VariableKind = Literal["static", "dynamic", "iteration"]


@dataclass(frozen=True, slots=True)
class TemplateField:
    """One templated value: where it sits and the compiled expressions that produce it.

    standalone: the whole value is one `${expr}` and takes the result's type (C-02); otherwise
    the expressions are concatenated with the literal text around them into a string (C-03).
    text: the original string, shown in error messages.
    kind: G-28 — `static` reads only `schema`, `dynamic` reads resources, `iteration` reads
    forEach iterators (never cached across items).
    """

    path: FieldPath
    standalone: bool
    text: str
    expressions: tuple[CompiledExpression, ...]
    kind: VariableKind = "static"


@dataclass(frozen=True, slots=True)
class ForEachDimension:
    """One `forEach` entry: iterator name and the list expression it ranges over (F-01)."""

    name: str
    expression: CompiledExpression
    item_type: CelType | None = None
    """The type of one item, so that a row's values are bound as typed values (a timestamp
    read through the iterator is a timestamp, not the text it was rendered to)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One entry of `spec.resources`, compiled.

    template: for resources the template as written; for externalRefs the serialised form
    `{apiVersion, kind, metadata: {name | selector, namespace}}` (G-12).
    fields: every templated value of `template`, in document order.
    dependencies: resource ids read by the template, forEach and includeWhen expressions
    (never readyWhen, G-14), in declaration order.
    apply_order: the deletion wave (G-17), persisted on children as
    `internal.kro.run/apply-order`.
    schema: the kind's OpenAPI schema, used for schema-aware values (C-34).
    deletion_policy: with the DeletionPolicy gate on, `Delete` or `Orphaned` for a template
    resource, which every apply records on the object (V-32); None otherwise (nothing is
    enforced).
    """

    id: str
    index: int
    type: NodeType
    gvk: GVK
    resource: str
    namespaced: bool
    template: Mapping[str, Any]
    fields: tuple[TemplateField, ...] = ()
    include_when: tuple[CompiledExpression, ...] = ()
    ready_when: tuple[CompiledExpression, ...] = ()
    for_each: tuple[ForEachDimension, ...] = ()
    dependencies: tuple[str, ...] = ()
    apply_order: int = 1
    schema: Mapping[str, Any] = field(default_factory=dict)
    deletion_policy: str | None = None
    dynamic_type: bool = False
    """A Graph node whose apiVersion or kind is an expression (V-48): `gvk`, `resource` and
    `namespaced` are placeholders; each rendered object's kind is looked up when it is applied
    or read, and a kind not served yet makes the node wait."""
    deferred: bool = False
    """A node whose literal kind was not served when the graph compiled (the
    DeferredSchemaResolution gate, kro.graph.deferred): `gvk` is that kind, the node is
    untyped and applied as a `dynamic_type` node, and while its kind is not served it waits
    with reason `SchemaPending`. The graph is compiled again, typed, once the kind's CRD
    appears (kro.controllers.programs)."""


@dataclass(frozen=True, slots=True)
class Instance:
    """The API the RGD defines: its CRD and the schemas instances are checked against."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    crd: Mapping[str, Any]
    spec_schema: Mapping[str, Any]
    status_schema: Mapping[str, Any]

    @property
    def gvk(self) -> GVK:
        return GVK(self.group, self.version, self.kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


@dataclass(frozen=True, slots=True)
class Graph:
    """A validated, typed, ordered RGD: everything needed to reconcile its instances.

    nodes: keyed by id, iterated in topological order (G-16).
    status_fields: templated fields of `schema.status` (paths relative to `status`), except
    `conditions`, which is the author-conditions block (K-01) in `conditions`.
    environment: the CEL environment with `schema` and every resource id declared; its
    `bind()` applies schema-aware input conversion (C-34) when values are bound.
    max_collection_size: `BuildOptions.max_collection_size`, enforced when forEach expands.
    """

    rgd_name: str
    instance: Instance
    nodes: Mapping[str, Node]
    topological_order: tuple[str, ...]
    status_fields: tuple[TemplateField, ...]
    conditions: tuple[CompiledExpression, ...]
    environment: CelEnvironment
    spec_hash: str = ""
    max_collection_size: int = 1000  # F-03: most items one forEach may expand to
    scopes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Nodes of a nested `Graph` frame (ids `outer/inner`, V-47): the names their expressions
    use (siblings, then captured outer nodes) and the node each stands for. A node without an
    entry reads every node by its id, in `environment`."""
    environments: Mapping[str, CelEnvironment] = field(default_factory=dict)
    """Per nested frame (its path), the environment its expressions were compiled in."""
    readiness_gates: bool = True
    """An RGD applies a node only once every node it reads is ready (V-03); a `Graph` applies
    it as soon as the data it reads exists, and readyWhen only reports (V-52)."""
    metadata_only: frozenset[str] = field(init=False, repr=False, compare=False)
    """Resource ids whose every read, by any expression of the graph, stays inside `metadata`
    (and not `metadata.managedFields`), including ids nothing reads at all. A pass may take
    such an object from a metadata-only cache instead of asking the API server for it."""
    managed_fields_readers: frozenset[str] = field(init=False, repr=False, compare=False)
    """Variables (`schema`, resource ids) some expression may read `metadata.managedFields`
    of: it names them, or reads the whole object or its whole `metadata`. The others are
    handed to expressions without their managedFields, which are most of an object read
    from the API server and cost the most to convert (a timestamp in every entry)."""

    _iteration_environments: dict[str, CelEnvironment] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata_only", _metadata_only(self))
        object.__setattr__(self, "managed_fields_readers", _managed_fields_readers(self))

    def node(self, node_id: str) -> Node:
        return self.nodes[node_id]

    @staticmethod
    def frame_of(node_id: str) -> str:
        """The path of the frame a node is in ("" at the top)."""
        return node_id.rpartition("/")[0]

    def environment_of(self, node: Node) -> CelEnvironment:
        """Where `node`'s expressions were compiled: its frame's environment."""
        return self.environments.get(self.frame_of(node.id), self.environment)

    def iteration_environment(self, node: Node) -> CelEnvironment:
        """`environment` plus the node's forEach iterators, typed (built once per node)."""
        found = self._iteration_environments.get(node.id)
        if found is None:
            base = self.environment_of(node)
            found = base.extend({d.name: d.item_type for d in node.for_each})
            self._iteration_environments[node.id] = found
        return found

    def dependents_of(self, node_id: str) -> tuple[str, ...]:
        """Nodes that read `node_id`, in topological order."""
        return tuple(n for n in self.topological_order if node_id in self.nodes[n].dependencies)

    def resources_status(self) -> list[dict[str, Any]]:
        """`status.resources` of the RGD and the GraphRevision (A-24): nodes with >= 1 dep."""
        return [
            {"id": n, "dependencies": [{"id": d} for d in self.nodes[n].dependencies]}
            for n in self.topological_order
            if self.nodes[n].dependencies
        ]


def _expressions(graph: Graph) -> list[CompiledExpression]:
    """Every compiled expression of `graph`, whatever its context."""
    found: list[CompiledExpression] = list(graph.conditions)
    for status_field in graph.status_fields:
        found.extend(status_field.expressions)
    for node in graph.nodes.values():
        for template_field in node.fields:
            found.extend(template_field.expressions)
        found.extend(node.include_when)
        found.extend(node.ready_when)
        found.extend(d.expression for d in node.for_each)
    return found


def _metadata_only(graph: Graph) -> frozenset[str]:
    """Graph.metadata_only: the ids no expression reads beyond `metadata.<field>`."""
    content: set[str] = set()
    for expression in _expressions(graph):
        for read in expression.dependencies:
            path = read.path
            if not path.startswith("metadata.") or path.startswith("metadata.managedFields"):
                content.add(read.root)
    return frozenset(n for n in graph.nodes if n not in content)


def _managed_fields_readers(graph: Graph) -> frozenset[str]:
    """Graph.managed_fields_readers: the roots read whole, whole `metadata`, or managedFields."""
    return frozenset(
        read.root
        for expression in _expressions(graph)
        for read in expression.dependencies
        if read.path in ("", "metadata") or read.path.startswith("metadata.managedFields")
    )
