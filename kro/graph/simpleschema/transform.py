"""kro.graph.simpleschema.transform: SimpleSchema (`spec.schema.spec` + `types`) -> OpenAPI v3.

The result is a structural schema as plain dicts, ready to sit under the instance CRD's
`properties.spec` (the CRD itself, S-28, is assembled elsewhere). Rules (reference §1.C):

* leaf strings go through the type grammar (parser) and then the markers (markers), in order;
* a YAML map is a nested object (S-09); any other YAML value is `unexpected type: <go type>`;
* `required` lists are sorted (S-11) and de-duplicated;
* an object gets `default: {}` iff it has no required children and some direct child has a
  default (S-10), at every level including `spec` itself and custom struct types, so nested
  defaults materialise when the parent is omitted;
* custom types are built in dependency order (customtypes) and inlined as deep copies wherever
  referenced (S-12); an alias whose own markers say `required=true` makes every field declared
  with exactly that type required (S-13). Atomic keywords shadow custom types of the same name.

Public API:
    to_openapi_spec(spec, types=None) -> dict[str, Any]
        raises SchemaError subclasses with `field_path` such as "spec.ports" or "types.Person.age"
    MAX_OBJECT_DEPTH
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final

from kro.graph.errors import SchemaError, TypeSyntaxError
from kro.graph.simpleschema._gocompat import go_type_name
from kro.graph.simpleschema.customtypes import TYPES_PATH, build_order, type_dependencies
from kro.graph.simpleschema.markers import apply_markers
from kro.graph.simpleschema.parser import (
    ATOMIC_TYPES,
    ArrayType,
    AtomicType,
    CustomType,
    MapType,
    TypeExpr,
    parse_field,
)
from kro.graph.template.fieldpath import FieldPath

SPEC_PATH: Final = FieldPath(("spec",))
# Upstream has no limit; this one only turns absurd inputs into a SchemaError instead of a
# RecursionError. Real schemas are a handful of levels deep.
MAX_OBJECT_DEPTH: Final = 128


def to_openapi_spec(spec: Any, types: Any = None) -> dict[str, Any]:
    """The OpenAPI schema of an instance `spec` from its SimpleSchema and custom types.

    `spec` None (no `spec:` in the RGD) is an empty object.
    """
    builder = _Builder()
    try:
        builder.load_types(types)
        return builder.object_schema({} if spec is None else spec, SPEC_PATH)
    except RecursionError:
        raise SchemaError(f"schema nesting too deep (max {MAX_OBJECT_DEPTH})") from None


def _key(key: Any) -> str:
    # The RGD reaches kro as JSON, where keys are strings; YAML may hand us ints or bools.
    return key if isinstance(key, str) else json.dumps(key)


class _Builder:
    def __init__(self) -> None:
        self.types: dict[str, dict[str, Any]] = {}
        self.required_aliases: set[str] = set()

    def load_types(self, types: Any) -> None:
        if types is None:
            return
        if not isinstance(types, Mapping):
            raise SchemaError(f"unexpected type: {go_type_name(types)}", field_path=str(TYPES_PATH))
        definitions = {_key(k): v for k, v in types.items()}
        deps = {name: type_dependencies(name, d) for name, d in definitions.items()}
        for name in build_order(deps):
            definition, path = definitions[name], TYPES_PATH.child(name)
            if isinstance(definition, Mapping):
                self.types[name] = self.object_schema(definition, path)
            elif isinstance(definition, str):
                self.types[name], required = self.leaf_schema(definition, path)
                if required:
                    self.required_aliases.add(name)
            else:
                raise SchemaError(
                    f"unexpected type: {go_type_name(definition)}", field_path=str(path)
                )

    def object_schema(self, obj: Any, path: FieldPath, depth: int = 0) -> dict[str, Any]:
        if not isinstance(obj, Mapping):
            raise SchemaError(f"unexpected type: {go_type_name(obj)}", field_path=str(path))
        if depth > MAX_OBJECT_DEPTH:
            raise SchemaError(
                f"schema nesting too deep (max {MAX_OBJECT_DEPTH})", field_path=str(path)
            )
        properties: dict[str, Any] = {}
        required: set[str] = set()
        for raw_key, value in obj.items():
            key = _key(raw_key)
            child = path.child(key)
            if isinstance(value, Mapping):
                properties[key] = self.object_schema(value, child, depth + 1)
            elif isinstance(value, str):
                properties[key], is_required = self.leaf_schema(value, child)
                if is_required:
                    required.add(key)
            else:
                raise SchemaError(f"unexpected type: {go_type_name(value)}", field_path=str(child))
        schema: dict[str, Any] = {"type": "object"}
        if properties:
            schema["properties"] = properties
        if required:
            schema["required"] = sorted(required)
        elif any("default" in p for p in properties.values()):
            schema["default"] = {}
        return schema

    def leaf_schema(self, text: str, path: FieldPath) -> tuple[dict[str, Any], bool]:
        """Schema of one `"<type> | <markers>"` leaf, and whether its parent must require it."""
        try:
            spec = parse_field(text)
            schema = self.type_schema(spec.type)
            alias_required = isinstance(spec.type, CustomType) and (
                spec.type.name in self.required_aliases
            )
            return schema, apply_markers(schema, spec.markers) or alias_required
        except SchemaError as err:
            raise err.with_context(field_path=str(path)) from None

    def type_schema(self, expr: TypeExpr) -> dict[str, Any]:
        """A fresh (caller-owned) schema for a type expression."""
        if isinstance(expr, AtomicType):
            schema: dict[str, Any] = {"type": ATOMIC_TYPES[expr.name]}
            if expr.name == "object":
                schema["x-kubernetes-preserve-unknown-fields"] = True
            return schema
        if isinstance(expr, ArrayType):
            return {"type": "array", "items": self.type_schema(expr.items)}
        if isinstance(expr, MapType):
            return {"type": "object", "additionalProperties": self.type_schema(expr.values)}
        if expr.name not in self.types:
            raise TypeSyntaxError(f"unknown type: {expr.name}")
        return copy.deepcopy(self.types[expr.name])
