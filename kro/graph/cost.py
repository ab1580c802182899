"""kro.graph.cost: a static estimate of what an expression may cost, for `kro validate`.

Kubernetes estimates the worst-case cost of every CEL rule from the schema (`maxItems`,
`maxLength`, ...) and refuses rules that could exceed its budget; upstream kro estimates
nothing. kro-py bounds every evaluation at run time instead (`kro.cel.limits`: a time
budget, a memory budget, value sizes, and 10,000 iterations of any one comprehension), so
an expensive expression fails with a clear message rather than stalling the controller. This
module tells authors *before* that happens, without rejecting anything: it reads the checked
tree of each expression of a built `Graph` and reports what can grow without bound.

The model is deliberately small (it warns; it never decides):

- a comprehension (`map`, `filter`, `all`, `exists`, `transformList`, ...) runs once per
  element of its range. A range has a known size when it is a list literal,
  `lists.range(<constant>)`, a field whose schema says `maxItems` / `maxProperties` (read
  from a variable, an iterator or a comprehension variable), or a forEach collection /
  selector externalRef (at most `max_collection_size` items). Anything else is unbounded.
- comprehensions nested in the loop of another multiply. A nest with an unbounded level is
  reported, and so is a bounded one whose product is more than an evaluation's time budget
  runs (`BUDGET_ITERATIONS`).
  A single comprehension over an unbounded list is not: its cost is linear in data that
  the API server already bounds.
- `random.seededString` and `lists.range` build values whose size is their argument: a
  length computed at run time is reported, as is a constant above the per-value limit.
- regular expressions are not: RE2 is linear in the input.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kro.api.graph import GRAPH_GROUP, GRAPH_KIND
from kro.cel import CompiledExpression
from kro.cel.checked_ast import Call, Comprehension, Const, Ident, ListLit, Node, Select, children
from kro.cel.limits import DEFAULT_LIMITS, describe_bytes
from kro.graph.environment import EACH_VARIABLE, SCHEMA_VARIABLE
from kro.graph.model import Graph
from kro.graph.model import Node as GraphNode

BUDGET_ITERATIONS: Final = 100_000
"""About how many comprehension iterations one evaluation's time budget (100 ms) runs here:
nested loops are evaluated past the engine's own per-evaluation cap (kro.cel.limits), so the
time budget is what stops them."""

Schema = Mapping[str, Any]
_LENGTH_FUNCTIONS: Final = {"random.seededString": "length", "lists.range": "length"}
_INDEX: Final = frozenset({"_[_]", "_[?_]"})
_OPTIONAL_SELECT: Final = "_?._"


@dataclass(frozen=True, slots=True)
class CostWarning:
    """One expression whose cost the schema does not bound, and where it is.

    rgd: the name of the RGD or Graph the expression is in (`Graph.rgd_name` holds either);
    owner_kind says which, as the message names it (`rgd "x"`, `graph "x"`), so that a Graph's
    author is not told of an RGD.
    """

    rgd: str
    resource_id: str
    field_path: str
    expression: str
    reason: str
    owner_kind: str = "rgd"

    def __str__(self) -> str:
        where = [f'{self.owner_kind} "{self.rgd}"'] if self.rgd else []
        if self.resource_id:
            where.append(f'resource "{self.resource_id}"')
        where.append(f'field "{self.field_path}"')
        return f'{" ".join(where)}: expression "{self.expression}": {self.reason}'


@dataclass(frozen=True, slots=True)
class _Range:
    """What a comprehension iterates: its size (None: unbounded) and how the source reads."""

    size: int | None
    label: str


@dataclass(slots=True)
class _Walk:
    """The state of one expression's estimate: variable schemas in scope and findings."""

    scope: dict[str, Schema | None]
    reasons: dict[str, None] = field(default_factory=dict)


def expression_warnings(
    compiled: CompiledExpression, variables: Mapping[str, Schema | None]
) -> tuple[str, ...]:
    """Why `compiled` may be expensive, given the schemas of the variables it can read."""
    state = _Walk(dict(variables))
    _visit(compiled.checked_tree().root, state, ())
    return tuple(state.reasons)


def graph_warnings(graph: Graph) -> list[CostWarning]:
    """Every warning for every expression of `graph`, in document order."""
    base = _variables(graph)
    owner, kind = graph.rgd_name, _owner_kind(graph)
    out: list[CostWarning] = []
    for node in graph.nodes.values():
        for field_path, compiled, scope in _node_expressions(node, graph, base):
            for reason in expression_warnings(compiled, scope):
                out.append(
                    CostWarning(owner, node.id, field_path, compiled.expression, reason, kind)
                )
    for template_field in graph.status_fields:
        for compiled in template_field.expressions:
            for reason in expression_warnings(compiled, base):
                path = f"status.{template_field.path}"
                out.append(CostWarning(owner, "", path, compiled.expression, reason, kind))
    for index, compiled in enumerate(graph.conditions):
        for reason in expression_warnings(compiled, base):
            path = f"status.conditions[{index}]"
            out.append(CostWarning(owner, "", path, compiled.expression, reason, kind))
    return out


def _owner_kind(graph: Graph) -> str:
    """`graph` for a compiled `Graph` document, `rgd` for an RGD's program.

    `graph.rgd_name` holds either one's name; what tells them apart is the instance: a Graph
    compiles to the fixed `kro.run` `Graph` instance with no CRD (the test
    `kro.cli.graph_documents.is_graph` makes, which this layer cannot import), while an RGD's
    program always carries the CRD it generates."""
    instance = graph.instance
    is_graph = instance.kind == GRAPH_KIND and instance.group == GRAPH_GROUP and not instance.crd
    return "graph" if is_graph else "rgd"


# ------------------------------------------------------------------------ graph contexts


def _variables(graph: Graph) -> dict[str, Schema | None]:
    """`schema` and every resource id, as the expressions of `graph` see them."""
    out: dict[str, Schema | None] = {
        SCHEMA_VARIABLE: {"type": "object", "properties": {"spec": graph.instance.spec_schema}}
    }
    for node_id, node in graph.nodes.items():
        out[node_id] = _list_of(node.schema, graph) if node.type.is_list else node.schema
    return out


def _list_of(item: Schema, graph: Graph) -> Schema:
    return {"type": "array", "maxItems": graph.max_collection_size, "items": item}


def _node_expressions(
    node: GraphNode, graph: Graph, base: Mapping[str, Schema | None]
) -> Iterator[tuple[str, CompiledExpression, Mapping[str, Schema | None]]]:
    """(field path, expression, variables) for every expression of one resource."""
    iterators = dict(base)
    for dimension in node.for_each:
        yield f"forEach.{dimension.name}", dimension.expression, base
        source = _schema_of(dimension.expression.checked_tree().root, base)
        iterators[dimension.name] = _element(source)
    for template_field in node.fields:
        for compiled in template_field.expressions:
            yield str(template_field.path), compiled, iterators
    for index, compiled in enumerate(node.include_when):
        yield f"includeWhen[{index}]", compiled, base
    ready = {**base, EACH_VARIABLE: node.schema} if node.type.is_list else base
    for index, compiled in enumerate(node.ready_when):
        yield f"readyWhen[{index}]", compiled, ready


# ------------------------------------------------------------------------------ the walk


def _visit(node: Node, state: _Walk, loops: tuple[_Range, ...]) -> None:
    kind = node.kind
    if isinstance(kind, Comprehension):
        _comprehension(kind, state, loops)
        return
    if isinstance(kind, Call):
        _check_length(kind, state)
    for child in children(node):
        _visit(child, state, loops)


def _comprehension(kind: Comprehension, state: _Walk, loops: tuple[_Range, ...]) -> None:
    _visit(kind.iter_range, state, loops)
    _visit(kind.accu_init, state, loops)
    saved = {name: state.scope.get(name) for name in (kind.iter_var, kind.iter_var2)}
    binding = isinstance(kind.iter_range.kind, ListLit) and not kind.iter_range.kind.elements
    if binding:  # cel.bind(name, value, body): no iterations, `name` is the value
        outer = state.scope.get(kind.accu_var)
        state.scope[kind.accu_var] = _schema_of(kind.accu_init, state.scope)
        _visit(kind.result, state, loops)
        state.scope[kind.accu_var] = outer
        return
    source = _schema_of(kind.iter_range, state.scope)
    loop = _range_of(kind.iter_range, source)
    nest = (*loops, loop)
    if len(nest) > 1:
        _check_nest(nest, state)
    _bind_iteration(kind, source, state)
    for part in (kind.loop_condition, kind.loop_step):
        _visit(part, state, nest)
    for name, schema in saved.items():
        if name:
            state.scope[name] = schema
    _visit(kind.result, state, loops)


def _bind_iteration(kind: Comprehension, source: Schema | None, state: _Walk) -> None:
    """The comprehension variables' schemas: list index/element, or map key/value."""
    is_map = source is not None and _is_map(source)
    element = _map_value(source) if is_map else _element(source)
    if kind.iter_var2:  # two variables: (index, element) or (key, value)
        state.scope[kind.iter_var] = None
        state.scope[kind.iter_var2] = element
    elif kind.iter_var:
        state.scope[kind.iter_var] = None if is_map else element


def _check_nest(nest: tuple[_Range, ...], state: _Walk) -> None:
    unbounded = list(dict.fromkeys(r.label for r in nest if r.size is None))
    if unbounded:
        state.reasons[
            f"nested comprehensions over collections of unbounded size ({', '.join(unbounded)}):"
            " bound them with maxItems (maxProperties for maps) in the schema; an evaluation "
            "stops at its time budget"
        ] = None
        return
    total = 1
    for r in nest:
        total *= r.size or 1
    if total > BUDGET_ITERATIONS:
        state.reasons[
            f"nested comprehensions may run {total} iterations "
            f"({' x '.join(str(r.size) for r in nest)}); an evaluation stops at its time "
            f"budget (about {BUDGET_ITERATIONS} iterations)"
        ] = None


def _check_length(call: Call, state: _Walk) -> None:
    what = _LENGTH_FUNCTIONS.get(call.function)
    if what is None or not call.args:
        return
    argument = call.args[0].kind
    limit = DEFAULT_LIMITS.max_value_bytes
    if not isinstance(argument, Const):
        state.reasons[
            f"{call.function} with a {what} computed at run time: values larger than "
            f"{describe_bytes(limit)} fail at evaluation"
        ] = None
    elif isinstance(argument.value, int) and argument.value > limit:
        state.reasons[
            f"{call.function} {what} {argument.value} is above the per-value limit of "
            f"{describe_bytes(limit)}: it always fails at evaluation"
        ] = None


# --------------------------------------------------------------------- schemas and sizes


def _schema_of(node: Node, scope: Mapping[str, Schema | None]) -> Schema | None:
    """The OpenAPI schema of what `node` reads, when it is a path from a known variable."""
    kind = node.kind
    if isinstance(kind, Ident):
        return scope.get(kind.name)
    if isinstance(kind, Select) and not kind.test_only:
        return _property(_schema_of(kind.operand, scope), kind.field)
    if isinstance(kind, Call) and kind.function == _OPTIONAL_SELECT and len(kind.args) == 2:
        name = kind.args[1].kind
        if isinstance(name, Const) and isinstance(name.value, str):
            return _property(_schema_of(kind.args[0], scope), name.value)
    if isinstance(kind, Call) and kind.function in _INDEX and len(kind.args) == 2:
        container = _schema_of(kind.args[0], scope)
        if container is not None and _is_map(container):
            return _map_value(container)
        return _element(container)
    return None


def _property(schema: Schema | None, name: str) -> Schema | None:
    if schema is None:
        return None
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping):
        found: Schema = properties[name]
        return found
    return _map_value(schema)


def _element(schema: Schema | None) -> Schema | None:
    items = None if schema is None else schema.get("items")
    return items if isinstance(items, Mapping) else None


def _is_map(schema: Schema) -> bool:
    return schema.get("type") == "object" or "additionalProperties" in schema


def _map_value(schema: Schema | None) -> Schema | None:
    values = None if schema is None else schema.get("additionalProperties")
    return values if isinstance(values, Mapping) else None


def _range_of(node: Node, schema: Schema | None) -> _Range:
    """The size of what a comprehension over `node` (whose schema is `schema`) iterates."""
    kind = node.kind
    if isinstance(kind, ListLit):
        return _Range(len(kind.elements), "a list literal")
    if isinstance(kind, Call) and kind.function == "lists.range" and len(kind.args) == 1:
        argument = kind.args[0].kind
        if isinstance(argument, Const) and isinstance(argument.value, int):
            return _Range(max(argument.value, 0), f"lists.range({argument.value})")
        return _Range(None, "lists.range(...)")
    label = _label(node) or (f"the result of {kind.function}()" if isinstance(kind, Call) else "")
    if schema is not None:
        for key in ("maxItems", "maxProperties"):
            bound = schema.get(key)
            if isinstance(bound, int) and not isinstance(bound, bool):
                return _Range(bound, label)
    return _Range(None, label or "a computed list")


def _label(node: Node) -> str:
    """`schema.spec.items` for a plain path; "" for anything else."""
    kind = node.kind
    if isinstance(kind, Ident):
        return kind.name
    if isinstance(kind, Select) and not kind.test_only:
        operand = _label(kind.operand)
        return f"{operand}.{kind.field}" if operand else ""
    return ""
