"""kro.graph.templatecheck: check a template's literal values against its kind's OpenAPI schema
and list its `${...}` fields with the schema each one must produce (G-10, G-11, G-12).

Upstream's `parser.ParseResource` walks the template and the schema together. A literal that
the apiserver would reject for its *type or shape* fails the RGD now rather than on the first
apply of the first instance; constraints (enum, pattern, min/max, required) are left to the
apiserver, exactly as upstream does. Expression fields are not evaluated here: they are returned
with their expected schema so the type checker (`typecheck`) can compare the CEL result type.

Rules:
* an unknown field fails: `error getting field schema for path spec.foo: schema not found for
  field foo`; `null` is accepted anywhere;
* a literal of the wrong JSON type fails: `expected integer type for path spec.replicas, got
  string` (`got` is Go's `%T` of the decoded YAML value, as upstream prints it; YAML `3.0` is a
  float64 and no integer, an integer is a valid number);
* a string template (`"${a}-x"`) is a string, so its field must accept strings;
* `x-kubernetes-preserve-unknown-fields`, `additionalProperties: true` and schema-less nodes
  accept anything below them (expressions there are expected to be `dyn`);
  `x-kubernetes-int-or-string` accepts integers and strings; `anyOf`/`oneOf` union their types;
* G-11 CustomResourceDefinition templates are parsed schemaless and allow expressions only
  under `metadata`; G-12 externalRefs are parsed schemaless.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.graph.build_errors import ResourceBuildError
from kro.graph.errors import TemplateError
from kro.graph.schema_validation import json_type
from kro.graph.template import (
    ROOT,
    FieldDescriptor,
    FieldPath,
    Segment,
    extract_fields,
    parse_template,
)

PRESERVE_UNKNOWN: Final = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING: Final = "x-kubernetes-int-or-string"
_STRUCTURE_KEYS: Final = ("type", "properties", "additionalProperties", "items", "anyOf", "oneOf")
_SHAPE_KEYS: Final = (*_STRUCTURE_KEYS, INT_OR_STRING)
# JSON types of decoded YAML/JSON values, looked up before the (slower) isinstance chain.
_EXACT_TYPES: Final[Mapping[type, str]] = {
    bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class TypedField:
    """A templated value and the schema its result must fit; `schema` None means anything."""

    descriptor: FieldDescriptor
    schema: Mapping[str, Any] | None

    @property
    def path(self) -> FieldPath:
        return self.descriptor.path


class _Failure(Exception):
    """Internal: carries the detail and path up to the function that knows the resource id."""

    def __init__(self, detail: str, path: FieldPath, rule: str = "G-10") -> None:
        super().__init__(detail)
        self.detail = detail
        self.path = path
        self.rule = rule


def go_type_name(value: Any) -> str:
    """Go's `%T` of a value decoded from YAML/JSON into `interface{}`."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    return type(value).__name__


def is_schemaless(schema: Mapping[str, Any] | None) -> bool:
    """True when anything is accepted below this node."""
    if schema is None or schema.get(PRESERVE_UNKNOWN):
        return True
    return not any(key in schema for key in _SHAPE_KEYS)


def schema_types(schema: Mapping[str, Any]) -> frozenset[str]:
    """The JSON types a schema node admits; empty means any."""
    if schema.get(INT_OR_STRING):
        return frozenset({"integer", "string"})
    kind = schema.get("type")
    if isinstance(kind, str) and kind:
        return frozenset({kind})
    found: set[str] = set()
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, Mapping):
                branch_types = schema_types(branch)
                if not branch_types:
                    return frozenset()
                found |= branch_types
    if not found and ("properties" in schema or "additionalProperties" in schema):
        found.add("object")
    if not found and "items" in schema:
        found.add("array")
    return frozenset(found)


def _value_type(value: Any) -> str:
    exact = _EXACT_TYPES.get(type(value))
    if exact is not None:
        return exact
    named = json_type(value)
    return named if named in _EXACT_TYPES.values() else "array"


def _accepts(types: frozenset[str], value_type: str) -> bool:
    if not types or value_type in types:
        return True
    return value_type == "integer" and "number" in types


def _expect(
    schema: Mapping[str, Any], value: Any, value_type: str, segments: tuple[Segment, ...]
) -> None:
    types = schema_types(schema)
    if not _accepts(types, value_type):
        path = FieldPath(segments)
        expected = " or ".join(sorted(types))
        raise _Failure(f"expected {expected} type for path {path}, got {go_type_name(value)}", path)


def _branches(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out = [schema]
    for key in ("anyOf", "oneOf", "allOf"):
        out.extend(b for b in schema.get(key) or () if isinstance(b, Mapping))
    return out


def field_schema(schema: Mapping[str, Any], name: str, path: FieldPath) -> Mapping[str, Any]:
    """The schema of field `name` of an object schema (upstream `getFieldSchema`)."""
    for branch in _branches(schema):
        properties = branch.get("properties")
        if isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping):
            sub: Mapping[str, Any] = properties[name]
            return sub
    for branch in _branches(schema):
        extra = branch.get("additionalProperties")
        if isinstance(extra, Mapping):
            return extra
        if extra is True:
            return {}
    raise _Failure(
        f"error getting field schema for path {path}: schema not found for field {name}", path
    )


def _walk(
    value: Any,
    schema: Mapping[str, Any] | None,
    segments: tuple[Segment, ...],
    out: list[TypedField],
) -> None:
    """Check `value` against `schema` and collect its expression fields; paths are built as
    plain tuples and only become `FieldPath`s where one is kept or reported."""
    if value is None:
        return
    if isinstance(value, str) and "${" in value:
        try:
            template = parse_template(value)
        except TemplateError as err:
            raise err.with_context(field_path=str(FieldPath(segments))) from None
        if template.has_expressions:
            if not template.is_standalone and not is_schemaless(schema):
                assert schema is not None
                _expect(schema, value, "string", segments)
            out.append(TypedField(FieldDescriptor(FieldPath(segments), template), schema))
            return
    if is_schemaless(schema):
        base = FieldPath(segments)
        out.extend(TypedField(d, None) for d in extract_fields(value, base=base))
        return
    assert schema is not None
    value_type = _value_type(value)
    _expect(schema, value, value_type, segments)
    if value_type == "object":
        for key, sub in value.items():
            child = (*segments, str(key))
            _walk(sub, _field_schema(schema, str(key), child), child, out)
    elif value_type == "array":
        items = schema.get("items")
        items = items if isinstance(items, Mapping) else None
        for i, sub in enumerate(value):
            _walk(sub, items, (*segments, i), out)


def _field_schema(
    schema: Mapping[str, Any], name: str, segments: tuple[Segment, ...]
) -> Mapping[str, Any]:
    properties = schema.get("properties")
    if type(properties) is dict:  # fast path of `field_schema`, without building a path
        sub = properties.get(name)
        if type(sub) is dict:
            return sub
    return field_schema(schema, name, FieldPath(segments))


def _raise(err: _Failure | TemplateError, resource_id: str, rgd: str) -> ResourceBuildError:
    path: str | None
    if isinstance(err, _Failure):
        detail, path, rule = err.detail, str(err.path), err.rule
    else:
        detail, path, rule = str(err), err.field_path, "C-04"
    return ResourceBuildError(
        f"failed to extract CEL expressions from schema for resource {resource_id}: {detail}",
        rule=rule,
        rgd=rgd,
        resource_id=resource_id,
        field_path=path,
        expression=getattr(err, "expression", None),
    )


def parse_template_fields(
    obj: Mapping[str, Any],
    schema: Mapping[str, Any] | None,
    *,
    resource_id: str,
    rgd: str,
    metadata_only: bool = False,
) -> list[TypedField]:
    """Check literals of `obj` against `schema` (None: schemaless) and list its expression
    fields in document order. `metadata_only` is G-11 (CRD templates)."""
    out: list[TypedField] = []
    try:
        _walk(obj, schema, ROOT.segments, out)
    except (_Failure, TemplateError) as err:
        raise _raise(err, resource_id, rgd) from err
    if metadata_only:
        for typed in out:
            if typed.path.segments[:1] != ("metadata",):
                raise ResourceBuildError(
                    "CEL expressions in CRDs are only supported for metadata fields, found in "
                    f'path "{typed.path}", resource {resource_id}',
                    rule="G-11",
                    rgd=rgd,
                    resource_id=resource_id,
                    field_path=str(typed.path),
                    expression=typed.descriptor.text,
                )
    return out
