"""kro.graph.status: the instance status projection and the CRD schema inferred from it
(T-01..T-03, T-05; upstream `buildStatusSchema` / `inferStatusSchema`).

An author writes `status` as expressions only (`availableReplicas:
${deployment.status.availableReplicas}`); kro infers each field's OpenAPI type from the checked
CEL output type so the generated CRD is exact and the apiserver keeps the values:
`int`→integer, `string`→string, a typed sub-object of a resource → its schema copied the way
upstream writes it back (`copied_object_schema`), `dyn` → preserve-unknown (see
`CelType.to_openapi`). String templates are strings. Map keys along the
path nest objects, `[i]` segments make arrays (the first element decides the item schema).

Status fields read resources and `schema` only, and must read at least one of them: a constant
has nothing to project (T-02). `conditions` is not a projection but the author-conditions block
(`conditions` module); `state` may be declared, it shapes the CRD but kro writes its value (T-05).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kro.cel import CelCompileError, CelEnvironment, CelType, CompiledExpression
from kro.graph.build_errors import StatusSchemaError
from kro.graph.environment import SCHEMA_VARIABLE
from kro.graph.expressions import OMIT_ONLY_IN_TEMPLATES, ExpressionProblem, compile_checked
from kro.graph.model import TemplateField
from kro.graph.template import FieldDescriptor, FieldPath, Segment
from kro.graph.typecheck import is_string_like


@dataclass(frozen=True, slots=True)
class CompiledStatus:
    """Projected fields (paths relative to `status`) and the inferred `status` schema."""

    fields: tuple[TemplateField, ...]
    schema: dict[str, Any]


def _error(detail: str, rule: str, rgd: str, path: str, expression: str | None = None) -> Exception:
    return StatusSchemaError(detail, rule=rule, rgd=rgd, field_path=path, expression=expression)


def _compile_part(
    env: CelEnvironment, source: str, readable: frozenset[str], path: str, rgd: str
) -> CompiledExpression:
    try:
        compiled = compile_checked(env, source, allowed=readable)
    except ExpressionProblem as problem:
        if problem.kind == "compile":
            detail = f'failed to type-check status expression "{source}" at path "{path}": '
            raise _error(detail + problem.detail, "T-03", rgd, path, source) from problem
        raise _error(f'status field "{path}": {problem.detail}', "T-02", rgd, path, source) from (
            problem
        )
    if compiled.uses_omit:
        raise _error(OMIT_ONLY_IN_TEMPLATES, "C-31", rgd, path, source)
    return compiled


def _field_schema(
    descriptor: FieldDescriptor, parts: Sequence[CompiledExpression], env: CelEnvironment, rgd: str
) -> dict[str, Any]:
    path = str(descriptor.path)
    if descriptor.standalone:
        schema: dict[str, Any] = without_defaults(status_schema_of(parts[0].output_type))
        return schema
    for part in parts:
        if not is_string_like(part.output_type):
            try:  # the concatenation gives upstream's message (C-03)
                env.compile(descriptor.cel_source())
            except CelCompileError as err:
                detail = f'failed to type-check status expression "{descriptor.text}" at path '
                raise _error(
                    f'{detail}"{path}": {err.message}', "C-03", rgd, path, descriptor.text
                ) from None
    return {"type": "string"}


def compile_status_field(
    descriptor: FieldDescriptor,
    env: CelEnvironment,
    resource_ids: frozenset[str],
    rgd: str,
) -> tuple[TemplateField, dict[str, Any]]:
    """One projected field: compiled parts, and the schema of its value."""
    readable = resource_ids | {SCHEMA_VARIABLE}
    path = str(descriptor.path)
    parts = [_compile_part(env, s, readable, path, rgd) for s in descriptor.expressions]
    roots = frozenset(root for part in parts for root in part.roots)
    if not roots & readable:
        raise _error(
            f"instance status field must refer to a resource or schema: {path}",
            "T-02",
            rgd,
            path,
            descriptor.text,
        )
    schema = _field_schema(descriptor, parts, env, rgd)
    relative = FieldPath(descriptor.path.segments[1:])
    field = TemplateField(
        path=relative,
        standalone=descriptor.standalone,
        text=descriptor.text,
        expressions=tuple(parts),
        kind="dynamic" if roots & resource_ids else "static",
    )
    return field, schema


def _container(next_segment: Segment) -> dict[str, Any]:
    if isinstance(next_segment, int):
        return {"type": "array"}
    return {"type": "object", "properties": {}}


def insert_schema(root: dict[str, Any], segments: Sequence[Segment], leaf: dict[str, Any]) -> None:
    """Place `leaf` at `segments` below `root`, creating objects for keys, arrays for indexes."""
    node = root
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        wanted = leaf if last else _container(segments[i + 1])
        if isinstance(segment, int):
            node = node.setdefault("items", wanted)
        else:
            properties = node.setdefault("properties", {})
            node = properties.setdefault(segment, wanted)


def compile_status(
    fields: Sequence[FieldDescriptor],
    env: CelEnvironment,
    *,
    resource_ids: frozenset[str],
    rgd: str,
) -> CompiledStatus:
    """T-01..T-03 over the projected fields of `spec.schema.status` (document order)."""
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    compiled: list[TemplateField] = []
    for descriptor in fields:
        field, leaf = compile_status_field(descriptor, env, resource_ids, rgd)
        insert_schema(schema, field.path.segments, leaf)
        compiled.append(field)
    return CompiledStatus(tuple(compiled), schema)


COPIED_SCHEMA_DROPPED: Final = frozenset({
    "description", "required", "default", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type", "x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy",
})  # fmt: skip
"""Keywords of a resource's published schema that upstream's status schema does not carry.

Upstream types a projected sub-object from its CEL declaration (the DeclType built from the
OpenAPI schema) and writes that back as OpenAPI: the declaration holds types and fields, not
descriptions, `required` lists, defaults or list/map topology. The topology has to go with
`required` anyway: a `x-kubernetes-list-type: map` list whose keys are not required is a CRD
the API server refuses."""
_TIMESTAMP_FORMATS: Final = frozenset({"date-time", "date"})
_PRESERVE_UNKNOWN: Final = "x-kubernetes-preserve-unknown-fields"


def status_schema_of(output: CelType) -> dict[str, Any]:
    """The OpenAPI schema of a status field holding a value of this CEL type (T-03).

    Scalars, lists and maps as `CelType.to_openapi`; a typed object copied from a resource's
    (or the instance's) schema goes through `copied_object_schema`, at any depth of lists and
    maps (`${deployment.status.conditions}` is a list of DeploymentCondition objects).
    """
    if output.kind == "object" and output.schema is not None:
        copied: dict[str, Any] = copied_object_schema(output.schema)
        return copied
    if output.kind == "list":
        return {"type": "array", "items": status_schema_of(output.params[0])}
    if output.kind == "map":
        return {"type": "object", "additionalProperties": status_schema_of(output.params[1])}
    return output.to_openapi()


def copied_object_schema(schema: Any) -> Any:
    """A resource's sub-schema as upstream's generated CRD carries it (issue 26 B4).

    Without the keywords of `COPIED_SCHEMA_DROPPED`, and with every `metav1.Time`-like field
    (a string of format `date-time` or `date`, which CEL declares as a timestamp) turned into
    `x-kubernetes-preserve-unknown-fields: true`: upstream's conversion back from the CEL
    declaration has no OpenAPI form for a nested timestamp. A CRD equal to upstream's for the
    same RGD means no spurious schema change for anyone moving between the two. Property
    *names* (keys of `properties`) are kept, even one called `description` or `required`; the
    input is not modified.
    """
    return _rebuilt(schema, COPIED_SCHEMA_DROPPED, timestamps=True)


def without_defaults(schema: Any) -> Any:
    """A copy of an inferred status schema without `default` keywords.

    Schemas projected from a resource's OpenAPI (`${deployment.status.conditions}`) carry the
    API server's `default: {}` on list items whose fields are required, and the API server then
    rejects the CRD ("items.default.type: Required value"). kro writes status itself, so a
    status default could never apply anyway. Property *names* (keys of `properties`) are kept,
    even a property called `default`.
    """
    return _rebuilt(schema, _DEFAULT_ONLY, timestamps=False)


_DEFAULT_ONLY: Final = frozenset({"default"})


def _rebuilt(schema: Any, dropped: frozenset[str], *, timestamps: bool) -> Any:
    """A copy of `schema` without the `dropped` keywords at any depth; with `timestamps`, a
    `date-time`/`date` string becomes preserve-unknown. Only schema-valued keywords are
    descended, so property names are never taken for keywords."""
    if not isinstance(schema, Mapping):
        return schema
    if timestamps and schema.get("type") == "string" and schema.get("format") in _TIMESTAMP_FORMATS:
        return {_PRESERVE_UNKNOWN: True}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in dropped:
            continue
        if key in ("properties", "patternProperties") and isinstance(value, Mapping):
            out[key] = {
                name: _rebuilt(sub, dropped, timestamps=timestamps) for name, sub in value.items()
            }
        elif key in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
            out[key] = _rebuilt(value, dropped, timestamps=timestamps)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [_rebuilt(sub, dropped, timestamps=timestamps) for sub in value]
        else:
            out[key] = value
    return out
