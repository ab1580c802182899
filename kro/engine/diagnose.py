"""kro.engine.diagnose: say *on what* a node waits, when a pass is asked to.

The evaluation only says *that* a node cannot be decided yet or is not ready; a user wants to
know which node, expression and missing field. That costs evaluating the node's expressions
once more, one by one, so only `kro explain` asks; a controller keeps the evaluation's reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kro.cel import CompiledExpression, DataPending, Value, bind
from kro.engine.results import MissingField, ObjectId, object_id
from kro.graph.evaluate import InstanceEvaluation
from kro.graph.model import Graph, Node

__all__ = ["Diagnosis", "Diagnostician", "first_missing"]

OWNER: Final = "schema"
"""The name the owner's own fields go by in expressions."""

_SEGMENT: Final = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


@dataclass(frozen=True, slots=True)
class Diagnosis:
    message: str
    expression: str = ""
    field_path: str = ""
    waiting_on: str = ""
    missing: MissingField | None = None


@dataclass(frozen=True, slots=True)
class Diagnostician:
    """Diagnoses the nodes of one pass, against that pass's evaluation."""

    graph: Graph
    evaluation: InstanceEvaluation
    owner: ObjectId

    def waiting(self, node: Node, fallback: str, *, include_when: bool) -> Diagnosis:
        """A node that cannot be rendered (or whose includeWhen cannot be decided) yet."""
        if include_when:
            roots = {r for e in node.include_when for r in e.roots if r in self.graph.nodes}
            dependencies = tuple(r for r in self.graph.topological_order if r in roots)
            expressions: Sequence[CompiledExpression] = node.include_when
        else:
            dependencies = node.dependencies
            expressions = [d.expression for d in node.for_each] + [
                e for f in node.fields if f.kind != "iteration" for e in f.expressions
            ]
        for dep in dependencies:
            if self.evaluation.is_ignored(dep):
                continue
            if not self.evaluation.readiness(dep).ready:
                return Diagnosis(f'waits for node "{dep}", which is not ready', waiting_on=dep)
        scope = self._scope()
        activation = self.graph.environment.bind(scope)
        for expression in expressions:
            result = expression.evaluate(activation)
            if isinstance(result, DataPending):
                missing = self._missing(expression, scope, None)
                return Diagnosis(
                    f'expression "{expression.expression}" reads ' + _absent(missing, result),
                    expression=expression.expression,
                    field_path=_field_path(node, expression),
                    missing=missing,
                )
        return Diagnosis(fallback)

    def excluded(self, node: Node) -> Diagnosis:
        for dep in node.dependencies:
            if self.evaluation.is_ignored(dep):
                return Diagnosis(f'depends on node "{dep}", which is excluded')
        activation = self.graph.environment.bind(self._scope())
        for expression in node.include_when:
            result = expression.evaluate(activation)
            if isinstance(result, Value) and result.value is not True:
                return Diagnosis(
                    f'includeWhen "{expression.expression}" is false',
                    expression=expression.expression,
                )
        return Diagnosis("includeWhen is false")

    def not_ready(self, node: Node, items: Sequence[Mapping[str, Any]], fallback: str) -> Diagnosis:
        for item in items:
            scope = {"each": item} if node.type.is_list else {node.id: item}
            for expression in node.ready_when:
                result = expression.evaluate(bind(scope))
                if isinstance(result, DataPending):
                    missing = self._missing(expression, scope, object_id(item))
                    return Diagnosis(
                        f'readyWhen "{expression.expression}" reads ' + _absent(missing, result),
                        expression=expression.expression,
                        missing=missing,
                    )
                if isinstance(result, Value) and result.value is not True:
                    return Diagnosis(
                        f'readyWhen "{expression.expression}" is false'
                        + (f" for {object_id(item)}" if node.type.is_list else ""),
                        expression=expression.expression,
                    )
        return Diagnosis(fallback)

    def _scope(self) -> dict[str, Any]:
        values: dict[str, Any] = {OWNER: self.evaluation.schema_value}
        for node_id in self.graph.nodes:
            observed = self.evaluation.observed(node_id)
            if observed is not None and not self.evaluation.is_ignored(node_id):
                values[node_id] = observed
        return values

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
                return MissingField(dependency.root, missing, obj)
            if dependency.root == OWNER:
                return MissingField(dependency.root, missing, self.owner)
            return MissingField(dependency.root, missing, object_id(base))
        return None


def _field_path(node: Node, expression: CompiledExpression) -> str:
    for template_field in node.fields:
        if expression in template_field.expressions:
            return str(template_field.path)
    return ""


def _absent(missing: MissingField | None, result: DataPending) -> str:
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
