"""kro.graph.evaluate: one reconcile of one instance, without I/O (upstream's `pkg/runtime`).

The instance controller walks `graph.topological_order` and, per node, asks this module whether
the node is excluded (includeWhen), what its desired objects are, and — after it has read the
live objects from the cluster and handed them back with `observe()` — whether the node is ready.
The same object powers `kro render`, where "observed" objects come from a file.

Outcomes are values, not exceptions, wherever the reference treats them as normal progress:
`Pending` means "the data this needs does not exist yet, come back later" (I-03, I-04, I-09);
`EvaluationError` is raised for fatal problems (a failing expression, a collection over its
limit, an identity collision), which abort the pass before anything is applied (N-36).

One CEL activation is built per change of the observed state and shared by every expression
that runs until the next change; iteration expressions of forEach items get their own.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from kro.api.names import ANNOTATION_TARGET_CLUSTER
from kro.cel import (
    OMIT,
    Activation,
    CompiledExpression,
    DataPending,
    ExpressionError,
    Value,
    bind,
    to_cel_value,
)
from kro.graph.errors import GraphError
from kro.graph.model import Graph, Node, NodeType, TemplateField
from kro.graph.selectors import selector_problem
from kro.graph.template import FieldPath, parse_template, substitute

DEFAULT_MAX_COLLECTION_SIZE: Final = 1000


class NodeState(StrEnum):
    """Per-node progress within one reconcile (upstream's node states)."""

    IN_PROGRESS = "IN_PROGRESS"
    SKIPPED = "SKIPPED"
    SYNCED = "SYNCED"
    WAITING_FOR_READINESS = "WAITING_FOR_READINESS"
    ERROR = "ERROR"
    DELETING = "DELETING"
    DELETED = "DELETED"


class EvaluationError(GraphError):
    """A fatal evaluation problem: the pass stops and the instance reports ERROR."""


@dataclass(frozen=True, slots=True)
class Pending:
    """The node cannot be resolved yet; `reason` is shown in the instance's conditions."""

    node_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Readiness:
    ready: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ConditionResults:
    """Author conditions (K-05..K-08): what evaluated, and whether anything was missing."""

    conditions: tuple[Mapping[str, Any], ...]
    pending: bool
    errors: tuple[str, ...]


_MISSING: Final = object()
_READY: Final = Readiness(True)


class InstanceEvaluation:
    """The evaluation state of one instance during one reconcile."""

    def __init__(
        self,
        graph: Graph,
        instance: Mapping[str, Any],
        *,
        max_collection_size: int = DEFAULT_MAX_COLLECTION_SIZE,
    ) -> None:
        self.graph = graph
        self.instance = instance
        self.schema_value = _for_expressions(
            {k: v for k, v in instance.items() if k != "status"},
            keep="schema" in graph.managed_fields_readers,
        )
        self.namespace = str((instance.get("metadata") or {}).get("namespace") or "")
        self.max_collection_size = max_collection_size
        self._observed: dict[str, Any] = {}
        self._bound: dict[str, Any] = {}  # what expressions get of each observed node
        self._ignored: set[str] = set()
        self._desired: dict[str, list[dict[str, Any]]] = {}
        self._activation: Activation | None = None
        self._frame_activations: dict[str, Activation] = {}
        self.eval_durations_s: list[float] = []

    # -- expression evaluation -------------------------------------------------------------

    def _eval(
        self, expression: CompiledExpression, activation: Activation, *, as_json: bool = True
    ) -> Value | DataPending | ExpressionError:
        """Evaluate and keep the duration: the controller reports them as upstream's
        cel_expr_eval_total / cel_expr_eval_duration_seconds (this module records nothing)."""
        started = time.perf_counter()
        result = (
            expression.evaluate_json(activation) if as_json else expression.evaluate(activation)
        )
        self.eval_durations_s.append(time.perf_counter() - started)
        return result

    # -- observed state ------------------------------------------------------------------

    def observe(self, node_id: str, value: Mapping[str, Any] | Sequence[Any] | None) -> None:
        """Record the live object (or list of objects) of a node; None means it does not exist."""
        if value is None:
            self._observed.pop(node_id, None)
            self._bound.pop(node_id, None)
        else:
            self._observed[node_id] = value
            keep = node_id in self.graph.managed_fields_readers
            self._bound[node_id] = _for_expressions(value, keep=keep)
        self._activation = None
        self._frame_activations.clear()

    def observed(self, node_id: str) -> Any:
        return self._observed.get(node_id)

    def is_ignored(self, node_id: str) -> bool:
        return node_id in self._ignored

    def _values(self, node: Node | None = None) -> dict[str, Any]:
        """What expressions of `node` see: every node by its id, or, for a node of a nested
        Graph frame, the names its frame sees (its siblings, then what it captures)."""
        scope = self.graph.scopes.get(node.id) if node is not None else None
        if scope is not None:
            return {
                name: self._bound[target]
                for name, target in scope.items()
                if target in self._bound and target not in self._ignored
            }
        values: dict[str, Any] = {"schema": self.schema_value}
        for node_id, value in self._bound.items():
            if node_id not in self._ignored:
                values[node_id] = value
        return values

    def _bind(self, node: Node | None = None) -> Activation:
        if node is not None and node.id in self.graph.scopes:
            frame = self.graph.frame_of(node.id)
            found = self._frame_activations.get(frame)
            if found is None:
                env = self.graph.environment_of(node)
                found = self._frame_activations[frame] = env.bind(self._values(node))
            return found
        if self._activation is None:
            self._activation = self.graph.environment.bind(self._values())
        return self._activation

    # -- includeWhen ---------------------------------------------------------------------

    def check_ignored(self, node_id: str) -> bool | Pending:
        """True when the node is excluded this pass (I-07, I-08); Pending when undecidable."""
        node = self.graph.node(node_id)
        if any(dep in self._ignored for dep in node.dependencies):
            self._ignored.add(node_id)
            return True
        if not node.include_when:
            return False
        for ref in _resource_roots(node.include_when, self.graph, node):
            readiness = self._available(ref)
            if not readiness.ready:
                return Pending(
                    node_id,
                    f'includeWhen dependency "{ref}" not ready: {readiness.reason} (data pending)',
                )
        activation = self._bind(node)
        for expression in node.include_when:
            result = self._eval(expression, activation, as_json=False)
            if isinstance(result, DataPending):
                return Pending(node_id, f"includeWhen {result.reason}: {result.message}")
            value = _checked(result, node, "includeWhen")
            if value is None or value is False:
                self._ignored.add(node_id)
                self._activation = None
                self._frame_activations.clear()
                return True
            if value is not True:
                raise EvaluationError(
                    f'expression "{expression.expression}" did not return bool',
                    resource_id=node_id,
                    expression=expression.expression,
                )
        return False

    # -- desired objects -----------------------------------------------------------------

    def desired(self, node_id: str) -> list[dict[str, Any]] | Pending:
        """The rendered objects of a node (one for plain resources and externalRefs)."""
        node = self.graph.node(node_id)
        for dep in node.dependencies:
            if dep in self._ignored:
                continue
            readiness = self._available(dep)
            if not readiness.ready:
                return Pending(
                    node_id,
                    f'node "{node_id}": dependent node "{dep}" not ready: '
                    f"{readiness.reason} (data pending)",
                )
        combos = self._iterations(node)
        if isinstance(combos, Pending):
            return combos
        objects: list[dict[str, Any]] = []
        activations = (
            self.graph.iteration_environment(node).bind_each(self._values(node), combos)
            if node.for_each
            else iter([self._bind(node)])
        )
        for activation in activations:
            rendered = self._render(node, activation)
            if isinstance(rendered, Pending):
                return rendered
            objects.append(rendered)
        if node.type is NodeType.EXTERNAL_COLLECTION:
            _check_selector(node, objects[0])
        if not node.type.is_value:
            _check_identities(node, objects)
        self._desired[node_id] = objects
        return objects

    def _iterations(self, node: Node) -> list[dict[str, Any]] | Pending:
        if not node.for_each:
            return [{}]
        activation = self._bind(node)
        dimensions: list[list[Any]] = []
        size = 1
        for dimension in node.for_each:
            # The rows are bound again, not written into an object: they keep their CEL
            # values as upstream iterates them (a Secret's `data` stays bytes). The rule
            # against bytes applies where a row's value lands in a template (`_field_value`).
            result = self._eval(dimension.expression, activation, as_json=False)
            if isinstance(result, DataPending):
                return Pending(node.id, f"waiting for unresolved resource: {result.message}")
            value = _checked(result, node, "forEach")
            if value is None:
                raise EvaluationError(
                    f'expression "{dimension.expression.expression}" returned null, expected list',
                    resource_id=node.id,
                    expression=dimension.expression.expression,
                )
            if not isinstance(value, list):
                raise EvaluationError(
                    f'expression "{dimension.expression.expression}" did not return a list',
                    resource_id=node.id,
                    expression=dimension.expression.expression,
                )
            size *= len(value)
            if size > self.max_collection_size:
                raise EvaluationError(
                    f"collection size of {size} is over the maximum collection size of "
                    f"{self.max_collection_size}",
                    resource_id=node.id,
                )
            dimensions.append([to_cel_value(item) for item in value])
        names = [d.name for d in node.for_each]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*dimensions)]

    def _render(self, node: Node, activation: Activation) -> dict[str, Any] | Pending:
        values: dict[FieldPath, Any] = {}
        for template_field in node.fields:
            value = self._field_value(node, template_field, activation)
            if isinstance(value, Pending):
                return value
            values[template_field.path] = value
        obj: dict[str, Any] = substitute(node.template, values, omit=OMIT)
        if node.type.is_value:  # a value, not an object: nothing to place in a namespace
            return obj
        metadata = obj.setdefault("metadata", {})
        if (
            node.namespaced
            and not metadata.get("namespace")
            and node.type != (NodeType.EXTERNAL_COLLECTION)
        ):
            if not self.namespace:
                raise EvaluationError(
                    f'node "{node.id}" is namespaced and must resolve metadata.namespace when '
                    "the instance is cluster-scoped",
                    resource_id=node.id,
                    field_path="metadata.namespace",
                )
            metadata["namespace"] = self.namespace
        return obj

    def _field_value(
        self, node: Node, template_field: TemplateField, activation: Activation
    ) -> Any:
        parts: list[Any] = []
        for expression in template_field.expressions:
            result = self._eval(expression, activation)
            if isinstance(result, DataPending):
                return Pending(node.id, f"waiting for unresolved resource: {result.message}")
            parts.append(_checked(result, node, str(template_field.path)))
        if template_field.standalone:
            return parts[0]
        for part, expression in zip(parts, template_field.expressions, strict=True):
            if not isinstance(part, str):
                raise EvaluationError(
                    f'expression "{expression.expression}" in string template '
                    f'"{template_field.text}" returned {type(part).__name__}, expected string',
                    resource_id=node.id,
                    field_path=str(template_field.path),
                    expression=expression.expression,
                )
        return parts

    # -- readiness -----------------------------------------------------------------------

    def _available(self, node_id: str) -> Readiness:
        """Whether a node may be read by the nodes that depend on it: ready in an RGD (V-03),
        merely observed in a `Graph`, whose readyWhen reports and does not gate (V-52)."""
        if self.graph.readiness_gates or node_id in self._ignored:
            return self.readiness(node_id)
        if node_id in self._observed:
            return _READY
        return self.readiness(node_id)  # not observed: says why

    def readiness(self, node_id: str) -> Readiness:
        """Observed and every readyWhen true (I-01, I-02, F-08); skipped nodes are ready."""
        if node_id in self._ignored:
            return _READY
        node = self.graph.node(node_id)
        observed = self._observed.get(node_id, _MISSING)
        if observed is _MISSING:
            if node.type is NodeType.EXTERNAL:
                return Readiness(False, f'waiting for external reference "{node_id}": not found')
            if node.type is NodeType.EXTERNAL_COLLECTION:
                return Readiness(False, f'external collection "{node_id}" not listed yet')
            return Readiness(False, f'resource "{node_id}" not observed yet')
        if node.type is NodeType.COLLECTION:
            desired = self._desired.get(node_id)
            if desired is None:
                return Readiness(False, f'collection "{node_id}" not resolved yet')
            if len(observed) < len(desired):
                return Readiness(
                    False, f'collection "{node_id}": {len(observed)} of {len(desired)} items exist'
                )
        if node.type.is_list:
            for item in observed:
                verdict = self._ready_when(node, {"each": item})
                if not verdict.ready:
                    return verdict
            return _READY
        return self._ready_when(node, {node_id.rpartition("/")[2]: observed})  # its own name

    def _ready_when(self, node: Node, values: Mapping[str, Any]) -> Readiness:
        if not node.ready_when:
            return _READY
        activation = bind(values)  # raw values, as upstream (C-34 exception)
        for expression in node.ready_when:
            result = self._eval(expression, activation, as_json=False)
            if isinstance(result, DataPending):
                return Readiness(False, f"readyWhen {result.reason}: {result.message}")
            value = _checked(result, node, "readyWhen")
            if value is None or value is False:
                return Readiness(
                    False, f'readyWhen condition evaluated to false: "{expression.expression}"'
                )
            if value is not True:
                raise EvaluationError(
                    f'expression "{expression.expression}" did not return bool',
                    resource_id=node.id,
                    expression=expression.expression,
                )
        return _READY

    # -- status --------------------------------------------------------------------------

    def status_fields(self) -> dict[str, Any]:
        """Projected status, rebuilt from scratch; unresolvable fields are omitted (T-04)."""
        activation = self._bind()
        out: dict[str, Any] = {}
        for template_field in self.graph.status_fields:
            parts: list[Any] = []
            for expression in template_field.expressions:
                result = self._eval(expression, activation)
                if not isinstance(result, Value):
                    break
                parts.append(result.value)
            else:
                if template_field.standalone:
                    _set_path(out, template_field.path, parts[0])
                elif all(isinstance(p, str) for p in parts):
                    _set_path(out, template_field.path, _join_template(template_field, parts))
        return out

    def author_conditions(
        self, builtin_conditions: Sequence[Mapping[str, Any]]
    ) -> ConditionResults:
        """Evaluate `status.conditions` expressions in declaration order (K-05)."""
        schema = dict(self.schema_value)
        schema["status"] = {"conditions": [dict(c) for c in builtin_conditions]}
        values = self._values()
        values["schema"] = schema
        activation = self.graph.environment.bind(values)
        produced: list[Mapping[str, Any]] = []
        errors: list[str] = []
        pending = False
        for expression in self.graph.conditions:
            result = self._eval(expression, activation)
            if isinstance(result, DataPending):
                pending = True
                continue
            if isinstance(result, ExpressionError):
                errors.append(f"{expression.expression}: {result.message}")
                continue
            items = result.value if isinstance(result.value, list) else [result.value]
            for item in items:
                if isinstance(item, Mapping) and item.get("type"):
                    produced.append(item)
                else:
                    errors.append(f"{expression.expression}: not a condition: {item!r}")
        return ConditionResults(tuple(produced), pending, tuple(errors))


_CONTEXTS: Final = frozenset({"includeWhen", "readyWhen", "forEach"})


def _checked(result: Value | DataPending | ExpressionError, node: Node, where: str) -> Any:
    """The value, or an EvaluationError that says which resource, field and expression failed.

    The message ends up in the instance's ResourcesReady condition. A field path is quoted:
    unquoted, `data.password: random.seededString: ...` reads like a credential to the
    redaction every condition goes through, and the reason would be lost.
    """
    if isinstance(result, ExpressionError):
        location = where if where in _CONTEXTS else f'path "{where}"'
        raise EvaluationError(
            f'node "{node.id}": failed to evaluate expression "{result.expression}" in '
            f"{location}: {result.message}",
            resource_id=node.id,
            field_path=where,
            expression=result.expression,
        )
    assert isinstance(result, Value)
    return result.value


def _resource_roots(
    expressions: Sequence[CompiledExpression], graph: Graph, node: Node | None = None
) -> Iterator[str]:
    """The nodes `expressions` of `node` read (names resolved in its frame, if nested)."""
    scope = graph.scopes.get(node.id, {}) if node is not None else {}
    seen: set[str] = set()
    for expression in expressions:
        for root in sorted(expression.roots):
            target = scope.get(root, root)
            if target in graph.nodes and target not in seen:
                seen.add(target)
                yield target


_SELECTOR_PATH: Final = ("metadata", "selector")


def _check_selector(node: Node, rendered: Mapping[str, Any]) -> None:
    """V-12: the rendered selector of an external collection must be a label selector.

    Any other shape (`matchLabel`, a bare label map, a string, null) is an evaluation error
    naming the expression(s) that produced it, never "no requirements" (which would select
    every object of the kind). `{}` is a selector and still selects everything (X-03).
    """
    selector = (rendered.get("metadata") or {}).get("selector")
    problem = selector_problem(selector)
    if problem is None:
        return
    expressions = [
        expression.expression
        for template_field in node.fields
        if template_field.path.segments[:2] == _SELECTOR_PATH
        for expression in template_field.expressions
    ]
    quoted = ", ".join(f'"{e}"' for e in expressions)
    source = f"expression {quoted}" if len(expressions) == 1 else f"expressions {quoted}"
    raise EvaluationError(
        f'node "{node.id}": selector {source if expressions else "(literal)"} did not yield '
        f"a label selector: {problem}",
        resource_id=node.id,
        field_path="metadata.selector",
        expression=expressions[0] if len(expressions) == 1 else None,
    )


def _check_identities(node: Node, objects: Sequence[Mapping[str, Any]]) -> None:
    """Every rendered item must have a distinct group/version/kind/namespace/name (F-05) in
    the cluster it targets (M-11: a bundle fanned out keeps one name in every member)."""
    if len(objects) < 2:
        return
    seen: set[tuple[str, ...]] = set()
    for obj in objects:
        metadata = obj.get("metadata") or {}
        identity: tuple[str, ...] = (
            str(obj.get("apiVersion")),
            str(obj.get("kind")),
            str(metadata.get("namespace") or ""),
            str(metadata.get("name") or ""),
        )
        target = (metadata.get("annotations") or {}).get(ANNOTATION_TARGET_CLUSTER)
        if target:
            identity = (str(target), *identity)
        if identity in seen:
            raise EvaluationError(
                f'node "{node.id}" identity collision: duplicate identity: {"/".join(identity)}',
                resource_id=node.id,
            )
        seen.add(identity)


def _join_template(template_field: TemplateField, parts: Sequence[str]) -> str:
    return parse_template(template_field.text).render(list(parts))


def _set_path(out: dict[str, Any], path: FieldPath, value: Any) -> None:
    """Set `value` at `path`, creating objects for keys and lists for indexes."""
    node: Any = out
    segments = path.segments
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        following = None if last else segments[position + 1]
        empty: Any = [] if isinstance(following, int) else {}
        if isinstance(segment, int):
            while len(node) <= segment:
                node.append(None)
            if last:
                node[segment] = value
            else:
                if node[segment] is None:
                    node[segment] = empty
                node = node[segment]
        elif last:
            node[segment] = value
        else:
            node = node.setdefault(segment, empty)


def _for_expressions(value: Any, *, keep: bool) -> Any:
    """`value` (an object, or a collection's list of them) as expressions get it: without
    `metadata.managedFields` unless the graph may read them (Graph.managed_fields_readers).
    Shallow: the object itself is not changed (the applier reads its managedFields)."""
    if keep:
        return value
    if isinstance(value, list):
        return [_for_expressions(item, keep=False) for item in value]
    if isinstance(value, Mapping):
        metadata = value.get("metadata")
        if isinstance(metadata, Mapping) and "managedFields" in metadata:
            trimmed = {k: v for k, v in metadata.items() if k != "managedFields"}
            return {**value, "metadata": trimmed}
    return value
