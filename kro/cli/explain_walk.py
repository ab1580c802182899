"""kro.cli.explain_walk: classify every node of an instance the way the instance controller
sees it, without writing anything.

The walk is the controller's resources phase (`kro.controllers.instance.resources`) with the
writes taken out: in topological order, per node, includeWhen → render the desired objects →
read the live ones → readiness, all through `kro.graph.evaluate.InstanceEvaluation`, the same
pure evaluation the controller runs. Where the controller would apply, the walk observes what
is live instead, so a node kro could not create leaves its dependents waiting, as in the
cluster.

The evaluation only says *that* something waits ("data pending"); explain's job is to say on
*what*. So for every undecided node the walk looks one level deeper, with the same compiled
expressions: which node it waits for, or which expression reads which missing field of which
object (`MissingField`), or which readyWhen/includeWhen expression is false.

Reading is injected (`Fetch`), so the classification is tested with dict-backed fakes; the
live reader is `kro.cli.explain_cluster`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kro.cel import CompiledExpression, DataPending, Value, bind
from kro.cli.explain_report import MissingField, NodeReport, NodeStatus, ObjectId
from kro.graph.evaluate import EvaluationError, InstanceEvaluation, Pending
from kro.graph.model import Graph, Node, NodeType

SCHEMA: Final = "schema"
_SEGMENT: Final = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


@dataclass(frozen=True, slots=True)
class Observed:
    """What the reader found for a node: the live object (a list for collections; None when it
    does not exist), or why it could not be read."""

    value: Any = None
    error: str = ""


Fetch = Callable[[Node, Sequence[Mapping[str, Any]]], Awaitable[Observed]]


@dataclass(frozen=True, slots=True)
class Recorded:
    """What kro wrote in the instance's status about individual nodes (apply errors)."""

    errors: Mapping[str, str] = field(default_factory=dict)


def object_id(obj: Mapping[str, Any]) -> ObjectId:
    metadata = obj.get("metadata") or {}
    return ObjectId(
        str(obj.get("apiVersion") or ""),
        str(obj.get("kind") or ""),
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
    )


async def walk(
    graph: Graph, instance: Mapping[str, Any], fetch: Fetch, recorded: Recorded
) -> list[NodeReport]:
    """One report per node, in topological order."""
    evaluation = InstanceEvaluation(graph, instance, max_collection_size=graph.max_collection_size)
    walker = _Walker(graph, evaluation, fetch, recorded, object_id(instance))
    return [await walker.node(graph.node(node_id)) for node_id in graph.topological_order]


class _Walker:
    def __init__(
        self,
        graph: Graph,
        evaluation: InstanceEvaluation,
        fetch: Fetch,
        recorded: Recorded,
        instance: ObjectId,
    ) -> None:
        self.graph = graph
        self.evaluation = evaluation
        self.fetch = fetch
        self.recorded = recorded
        self.instance = instance

    def _report(self, node: Node, status: NodeStatus, **details: Any) -> NodeReport:
        return NodeReport(
            id=node.id,
            type=node.type.value,
            api_version=node.gvk.api_version,
            kind=node.gvk.kind,
            wave=node.apply_order,
            dependencies=node.dependencies,
            status=status,
            **details,
        )

    def _error(
        self, node: Node, error: EvaluationError, objects: tuple[ObjectId, ...] = ()
    ) -> NodeReport:
        return self._report(
            node,
            NodeStatus.ERROR,
            objects=objects,
            reason="an expression failed",
            expression=error.expression or "",
            field_path=error.field_path or "",
            message=str(error),
        )

    async def node(self, node: Node) -> NodeReport:
        try:
            ignored = self.evaluation.check_ignored(node.id)
        except EvaluationError as error:
            return self._error(node, error)
        if isinstance(ignored, Pending):
            return self._waiting(node, ignored, self._include_roots(node), node.include_when)
        if ignored:
            return self._excluded(node)
        try:
            desired = self.evaluation.desired(node.id)
        except EvaluationError as error:
            return self._error(node, error)
        if isinstance(desired, Pending):
            expressions = [d.expression for d in node.for_each] + [
                e for f in node.fields if f.kind != "iteration" for e in f.expressions
            ]
            return self._waiting(node, desired, node.dependencies, expressions)
        objects = tuple(object_id(d) for d in desired)
        observed = await self.fetch(node, desired)
        if observed.error:
            recorded = self.recorded.errors.get(node.id, "")
            if recorded:
                return self._report(
                    node,
                    NodeStatus.ERROR,
                    objects=objects,
                    reason="the last apply failed",
                    message=recorded,
                )
            return self._report(
                node,
                NodeStatus.UNKNOWN,
                objects=objects,
                reason=f"cannot read the live object: {observed.error}",
            )
        self.evaluation.observe(node.id, observed.value)
        return self._classify_live(node, objects, desired, observed.value)

    # -- live objects ------------------------------------------------------------------------

    def _classify_live(
        self,
        node: Node,
        objects: tuple[ObjectId, ...],
        desired: Sequence[Mapping[str, Any]],
        live: Any,
    ) -> NodeReport:
        recorded = self.recorded.errors.get(node.id, "")
        items: list[Mapping[str, Any]] = (
            list(live or []) if node.type.is_list else ([live] if live is not None else [])
        )
        absent = not items if node.type is not NodeType.COLLECTION else len(items) < len(desired)
        if absent and node.type is not NodeType.EXTERNAL_COLLECTION:
            return self._absent(node, objects, len(items), len(desired), recorded)
        terminating = [i for i in items if (i.get("metadata") or {}).get("deletionTimestamp")]
        if terminating and not node.type.is_external:
            return self._report(
                node,
                NodeStatus.DELETING,
                objects=objects,
                reason=f"{object_id(terminating[0])} is being deleted; kro waits for it to go "
                "before it re-creates it",
            )
        try:
            readiness = self.evaluation.readiness(node.id)
        except EvaluationError as error:
            return self._error(node, error, objects)
        if recorded:
            return self._report(
                node,
                NodeStatus.ERROR,
                objects=objects,
                reason="the last apply failed",
                message=recorded,
            )
        if readiness.ready:
            ready = bool(node.ready_when) or node.type.is_external
            return self._report(
                node, NodeStatus.READY if ready else NodeStatus.APPLIED, objects=objects
            )
        return self._not_ready(node, objects, items, readiness.reason)

    def _absent(
        self, node: Node, objects: tuple[ObjectId, ...], found: int, wanted: int, recorded: str
    ) -> NodeReport:
        if node.type is NodeType.EXTERNAL:
            return self._report(
                node,
                NodeStatus.WAITING,
                objects=objects,
                reason=f"the external reference {objects[0]} does not exist",
            )
        counted = f" ({found} of {wanted} items exist)" if node.type is NodeType.COLLECTION else ""
        if recorded:
            return self._report(
                node,
                NodeStatus.ERROR,
                objects=objects,
                reason=f"the API server refused it{counted}",
                message=recorded,
            )
        return self._report(
            node,
            NodeStatus.MISSING,
            objects=objects,
            reason=f"not created yet{counted}; kro recorded no error (is the kro controller "
            "running?)",
        )

    def _not_ready(
        self,
        node: Node,
        objects: tuple[ObjectId, ...],
        items: Sequence[Mapping[str, Any]],
        fallback: str,
    ) -> NodeReport:
        for item in items:
            scope = {"each": item} if node.type.is_list else {node.id: item}
            for expression in node.ready_when:
                result = expression.evaluate(bind(scope))
                if isinstance(result, DataPending):
                    missing = self._missing(expression, scope, object_id(item))
                    return self._report(
                        node,
                        NodeStatus.NOT_READY,
                        objects=objects,
                        reason=f'readyWhen "{expression.expression}" reads '
                        + _absent_data(missing, result),
                        expression=expression.expression,
                        missing=missing,
                    )
                if isinstance(result, Value) and result.value is not True:
                    return self._report(
                        node,
                        NodeStatus.NOT_READY,
                        objects=objects,
                        reason=f'readyWhen "{expression.expression}" is false'
                        + (f" for {object_id(item)}" if node.type.is_list else ""),
                        expression=expression.expression,
                    )
        return self._report(node, NodeStatus.NOT_READY, objects=objects, reason=fallback)

    # -- undecided nodes ---------------------------------------------------------------------

    def _include_roots(self, node: Node) -> tuple[str, ...]:
        roots = {r for e in node.include_when for r in e.roots if r in self.graph.nodes}
        return tuple(r for r in self.graph.topological_order if r in roots)

    def _waiting(
        self,
        node: Node,
        pending: Pending,
        dependencies: Sequence[str],
        expressions: Sequence[CompiledExpression],
    ) -> NodeReport:
        for dep in dependencies:
            if self.evaluation.is_ignored(dep):
                continue
            if not self.evaluation.readiness(dep).ready:
                return self._report(
                    node,
                    NodeStatus.WAITING,
                    reason=f'waits for node "{dep}", which is not ready',
                    waiting_on=dep,
                )
        scope = self._scope()
        activation = self.graph.environment.bind(scope)
        for expression in expressions:
            result = expression.evaluate(activation)
            if isinstance(result, DataPending):
                missing = self._missing(expression, scope, None)
                return self._report(
                    node,
                    NodeStatus.WAITING,
                    reason=f'expression "{expression.expression}" reads '
                    + _absent_data(missing, result),
                    expression=expression.expression,
                    field_path=self._field_path(node, expression),
                    missing=missing,
                )
        return self._report(node, NodeStatus.WAITING, reason=pending.reason)

    def _excluded(self, node: Node) -> NodeReport:
        for dep in node.dependencies:
            if self.evaluation.is_ignored(dep):
                return self._report(
                    node,
                    NodeStatus.EXCLUDED,
                    reason=f'depends on node "{dep}", which is excluded',
                )
        activation = self.graph.environment.bind(self._scope())
        for expression in node.include_when:
            result = expression.evaluate(activation)
            if isinstance(result, Value) and result.value is not True:
                return self._report(
                    node,
                    NodeStatus.EXCLUDED,
                    reason=f'includeWhen "{expression.expression}" is false',
                    expression=expression.expression,
                )
        return self._report(node, NodeStatus.EXCLUDED, reason="includeWhen is false")

    def _scope(self) -> dict[str, Any]:
        values: dict[str, Any] = {SCHEMA: self.evaluation.schema_value}
        for node_id in self.graph.nodes:
            observed = self.evaluation.observed(node_id)
            if observed is not None and not self.evaluation.is_ignored(node_id):
                values[node_id] = observed
        return values

    @staticmethod
    def _field_path(node: Node, expression: CompiledExpression) -> str:
        for template_field in node.fields:
            if expression in template_field.expressions:
                return str(template_field.path)
        return ""

    def _missing(
        self, expression: CompiledExpression, scope: Mapping[str, Any], obj: ObjectId | None
    ) -> MissingField | None:
        """The first field `expression` reads that is not in the bound objects."""
        for dependency in expression.dependencies:
            if dependency.root not in scope or not dependency.path:
                continue
            base = scope[dependency.root]
            if not isinstance(base, Mapping):
                continue
            missing = first_missing(base, dependency.path)
            if missing is None:
                continue
            if obj is not None:
                owner = obj
            elif dependency.root == SCHEMA:
                owner = self.instance
            else:
                owner = object_id(base)
            return MissingField(dependency.root, missing, owner)
        return None


def _absent_data(missing: MissingField | None, result: DataPending) -> str:
    if missing is not None:
        return f"{missing}, which does not exist yet"
    return f"data that does not exist yet ({result.message})"


def first_missing(obj: Mapping[str, Any], path: str) -> str | None:
    """The prefix of `path` (`data.token`, `spec.ports[0].port`) up to the first segment that is
    not there, or None when the whole path exists."""
    current: Any = obj
    walked = ""
    for match in _SEGMENT.finditer(path):
        index, key = match.group(1), match.group(2)
        if index is not None:
            walked += f"[{index}]"
            if not isinstance(current, list) or int(index) >= len(current):
                return walked
            current = current[int(index)]
            continue
        walked = f"{walked}.{key}" if walked else key
        if not isinstance(current, Mapping) or key not in current:
            return walked
        current = current[key]
    return None
