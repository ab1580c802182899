"""kro.graph.deferred: resources whose literal kind is not served yet (DeferredSchemaResolution).

A graph that installs a CRD (or an operator that brings its CRDs) and then uses the kind it
brings cannot be compiled the usual way: the kind has no schema until the graph has run. With
the `DeferredSchemaResolution` gate on, such a resource compiles *deferred*: without a schema,
its fields and the expressions reading it untyped, exactly like a node whose kind is an
expression (`Node.dynamic_type`, V-48). At apply time it waits while its kind is not served
(`SchemaPending`), and the program is compiled again, typed, once the kind's CRD appears.

Only a resource that can plausibly wait may defer, so that a typo in a kind every instance
needs keeps its fast, clear build error:

* it has an `includeWhen` that reads another resource or node (a runtime signal: "the CRD
  node is Established", "the operator is ready"); an includeWhen on `schema.*` alone is
  decided by the instance, not by the cluster, and does not make a resource eligible;
* or it says `optional: true`.

And only a kind the API server does not serve defers (`SchemaNotFoundError`: discovery
answered, and the group version or kind is not there). A discovery error, a timeout or a
Forbidden never reaches the build (the resolver's prefetch raises it) and stays an error with
a retry: an outage must not silently switch a graph's nodes off.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any, Final

from kro.graph.errors import GraphError
from kro.graph.model import Node, NodeType
from kro.graph.plural import resource_plural
from kro.graph.resolver import GVK, ResolvedSchema, SchemaNotFoundError
from kro.graph.resources import ParsedResource, copy_tree, serialize_external_ref
from kro.graph.templatecheck import parse_template_fields
from kro.graph.validation import (
    OPTIONAL_FIELD,
    ResourceInput,
    optional_problem,
    validate_object_structure,
)

__all__ = [
    "ANY_OBJECT",
    "OPTIONAL_FIELD",
    "Deferrals",
    "deferral_message",
    "deferral_reason",
    "deferred_kinds",
    "optional_problem",
]

ANY_OBJECT: Final[Mapping[str, Any]] = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
}


def _absent_kind(error: BaseException) -> SchemaNotFoundError | None:
    """The resolver's "not served" behind a build error, if that is what it is."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, SchemaNotFoundError):
            return seen
        seen = seen.__cause__
    return None


def _untyped(resource: ResourceInput, gvk: GVK, rgd: str, namespaced: bool) -> ParsedResource:
    """A resource of a kind not served: its literal kind kept, its fields free-form. Its scope
    is a guess until the kind is served (`namespaced`: the owner's, so a namespaced owner's
    object is rendered into its namespace, which the apply drops for a cluster-scoped kind)."""
    if resource.external_ref is not None:
        obj: Mapping[str, Any] = serialize_external_ref(resource.external_ref)
        selector = obj["metadata"].get("selector") is not None
        node_type = NodeType.EXTERNAL_COLLECTION if selector else NodeType.EXTERNAL
    else:
        assert resource.template is not None
        obj = copy_tree(dict(resource.template))
        node_type = NodeType.COLLECTION if resource.for_each else NodeType.RESOURCE
    validate_object_structure(obj, resource.id, rgd)
    fields = parse_template_fields(obj, None, resource_id=resource.id, rgd=rgd)
    plural = resource_plural(gvk.kind)
    resolved = ResolvedSchema(gvk, ANY_OBJECT, namespaced=namespaced, resource=plural)
    return ParsedResource(resource, node_type, gvk, resolved, obj, tuple(fields))


class Deferrals:
    """One build's deferred resources: parsed untyped when their kind is not served, then
    confirmed eligible once their includeWhen expressions are compiled (the build error they
    would have had is raised for one that is not)."""

    def __init__(self, *, enabled: bool, instance_namespaced: bool = True) -> None:
        self.enabled = enabled
        self.instance_namespaced = instance_namespaced
        self._errors: dict[str, GraphError] = {}

    def parse(
        self,
        resource: ResourceInput,
        parse: Callable[[], ParsedResource],
        rgd: str,
        *,
        key: str = "",
    ) -> ParsedResource:
        """`parse()`, or the resource untyped when its kind is not served and it may defer.
        A resource that cannot be eligible (no includeWhen, not optional) fails at once.
        key: the id the compiled node will have (a nested Graph node's path), default its id."""
        try:
            return parse()
        except GraphError as error:
            absent = _absent_kind(error)
            may_wait = resource.optional or bool(resource.include_when)
            if not self.enabled or absent is None or not may_wait:
                raise
            self._errors[key or resource.id] = error
            return _untyped(resource, absent.gvk, rgd, self.instance_namespaced)

    @property
    def deferred(self) -> frozenset[str]:
        """The ids parsed untyped so far."""
        return frozenset(self._errors)

    def confirm(
        self, node: Node, readable: Collection[str], *, optional: bool, key: str = ""
    ) -> Node:
        """`node` marked deferred when it was parsed untyped and is eligible: optional, or
        an includeWhen expression reads one of `readable` (the other resources or nodes its
        frame sees). Not eligible: the build error its kind gave."""
        error = self._errors.get(key or node.id)
        if error is None:
            return node
        signals = {root for e in node.include_when for root in e.roots} & set(readable)
        signals.discard(node.id)
        if not optional and not signals:
            raise error
        return replace(node, dynamic_type=True, deferred=True)


def deferral_reason(node: Node) -> str:
    """Why a deferred node may wait: the nodes its includeWhen reads, else `optional: true`."""
    signals = sorted(
        {root for e in node.include_when for root in e.roots} & set(node.dependencies)
    )
    if signals:
        return "its includeWhen reads " + ", ".join(f'"{s}"' for s in signals)
    return f"it is marked {OPTIONAL_FIELD}: true"


def deferral_message(node: Node) -> str:
    """What `kro validate` says of a deferred node (a warning: the graph is valid)."""
    return (
        f"kind {node.gvk.kind} of {node.gvk.api_version} is not served (no schema found): "
        f"deferred, because {deferral_reason(node)}; it waits for its CRD when applied and is "
        "not type-checked until then (DeferredSchemaResolution)"
    )


def deferred_kinds(nodes: Collection[Node]) -> list[GVK]:
    """The kinds a compiled graph's deferred nodes wait for, each once, in node order."""
    found: list[GVK] = []
    for node in nodes:
        if node.deferred and node.gvk not in found:
            found.append(node.gvk)
    return found
