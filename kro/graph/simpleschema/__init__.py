"""kro.graph.simpleschema: kro's SimpleSchema language -> structural OpenAPI v3 (reference §1.C).

What lives here: the leaf grammar (`parser`: `"[]string"`, `"map[string]Person"`), the marker
tokenizer and semantics (`markers`: `| required=true default=3 ...`), custom-type ordering
(`customtypes`), schema assembly (`transform`), Go-regexp syntax checking for `pattern=`
(RE2 with Go's messages, from `kro.cel.go_regexp`), and the shape of the expression-only
`status` section (`status`). Schemas are plain dicts. What does not: the CRD object around
the spec schema (S-28), and inferring status field types from CEL (both in the graph builder).

Must not import: kro.runtime, aiohttp, kubernetes_asyncio, prometheus_client. Depends on
kro.graph.template (status expressions, Go quoting), kro.graph.errors and kro.cel.go_regexp
only.

Entry points:
    to_openapi_spec(spec, types=None) -> dict       the instance `spec` schema
    walk_status(status) -> StatusSection             projected fields + conditions expressions
    parse_field(text) -> FieldSpec, parse_type(text), parse_markers(text)
    re2_syntax_error(pattern) -> str | None

Example:
    >>> to_openapi_spec({"replicas": "integer | default=3 minimum=1"})["properties"]["replicas"]
    {'type': 'integer', 'default': 3, 'minimum': 1.0}
    >>> to_openapi_spec({"replicas": "integer | default=3"})["default"]
    {}
"""

from kro.cel.go_regexp import syntax_error as re2_syntax_error
from kro.graph.simpleschema.customtypes import build_order as build_order
from kro.graph.simpleschema.customtypes import type_dependencies as type_dependencies
from kro.graph.simpleschema.markers import Marker as Marker
from kro.graph.simpleschema.markers import MarkerKey as MarkerKey
from kro.graph.simpleschema.markers import apply_markers as apply_markers
from kro.graph.simpleschema.markers import parse_markers as parse_markers
from kro.graph.simpleschema.parser import ATOMIC_TYPES as ATOMIC_TYPES
from kro.graph.simpleschema.parser import MAX_NESTING_DEPTH as MAX_NESTING_DEPTH
from kro.graph.simpleschema.parser import ArrayType as ArrayType
from kro.graph.simpleschema.parser import AtomicType as AtomicType
from kro.graph.simpleschema.parser import CustomType as CustomType
from kro.graph.simpleschema.parser import FieldSpec as FieldSpec
from kro.graph.simpleschema.parser import MapType as MapType
from kro.graph.simpleschema.parser import TypeExpr as TypeExpr
from kro.graph.simpleschema.parser import custom_type_names as custom_type_names
from kro.graph.simpleschema.parser import parse_field as parse_field
from kro.graph.simpleschema.parser import parse_type as parse_type
from kro.graph.simpleschema.status import StatusSection as StatusSection
from kro.graph.simpleschema.status import walk_status as walk_status
from kro.graph.simpleschema.transform import to_openapi_spec as to_openapi_spec

__all__ = [
    "ATOMIC_TYPES",
    "MAX_NESTING_DEPTH",
    "ArrayType",
    "AtomicType",
    "CustomType",
    "FieldSpec",
    "MapType",
    "Marker",
    "MarkerKey",
    "StatusSection",
    "TypeExpr",
    "apply_markers",
    "build_order",
    "custom_type_names",
    "parse_field",
    "parse_markers",
    "parse_type",
    "re2_syntax_error",
    "to_openapi_spec",
    "type_dependencies",
    "walk_status",
]
