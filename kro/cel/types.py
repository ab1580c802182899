"""kro.cel.types: CEL types for kro variables, derived from OpenAPI v3 schemas.

Why: upstream kro type-checks every expression against the OpenAPI schema of each resource
(`WithTypedResources`, G-18), so `${schema.spec.replicsa}` or `${deployment.spec.replicas + "x"}`
fail when the RGD is applied, not in some later reconcile. The engine's checker only knows
field types through protobuf descriptors, so each declared schema is translated into a
synthetic `.proto` file built at runtime (no protoc): objects become messages, arrays
repeated fields, `additionalProperties` maps, and the open-ended parts (`x-kubernetes-
preserve-unknown-fields`, `x-kubernetes-int-or-string`, untyped or union schemas) become
`google.protobuf.Value`, which the checker treats as `dyn`. `format: date-time`/`date`
become timestamps, `format: duration` durations and `format: byte` bytes (C-34).

These descriptors are used for *checking only*. Evaluation runs on plain dicts in an
untyped environment (see `engine`), so a missing field stays "no such key" (data pending)
instead of turning into a proto3 zero value.

The other direction lives here too: `CelType` describes a checked expression's result, with
the upstream type name (`list(string)`, used in G-21 messages) and the OpenAPI schema a status
field of that type gets (T-03).
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cel_expr_python import cel
from google.protobuf import descriptor_pb2

Kind = Literal[
    "bool", "int", "uint", "double", "string", "bytes", "null", "timestamp", "duration",
    "dyn", "list", "map", "optional", "object", "opaque", "type", "error",
]  # fmt: skip

_FD = descriptor_pb2.FieldDescriptorProto
_MAX_DEPTH: Final = 64
WELL_KNOWN_FILES: Final = (
    "google/protobuf/struct.proto",
    "google/protobuf/timestamp.proto",
    "google/protobuf/duration.proto",
)
_VALUE, _STRUCT, _LIST_VALUE = (
    ".google.protobuf.Value",
    ".google.protobuf.Struct",
    ".google.protobuf.ListValue",
)
_TIMESTAMP, _DURATION = ".google.protobuf.Timestamp", ".google.protobuf.Duration"


@dataclass(frozen=True, slots=True)
class CelType:
    """A CEL type as seen by kro: what an expression returns or a variable holds.

    `schema` is set for object types that came from a declared OpenAPI schema, so a status
    field projecting a whole sub-object can copy its schema (T-03).
    """

    kind: Kind
    params: tuple[CelType, ...] = ()
    name: str = ""
    schema: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def cel_name(self) -> str:
        """The name upstream (cel-go) prints: `int`, `list(string)`, `map(string, int)`."""
        if self.kind in ("object", "opaque"):
            return self.name
        if self.kind == "optional":
            return f"optional_type({self.params[0].cel_name})"
        if self.kind == "null":
            return "null_type"
        if self.params:
            return f"{self.kind}({', '.join(p.cel_name for p in self.params)})"
        return self.kind

    def to_openapi(self) -> dict[str, Any]:
        """The OpenAPI schema of a status field holding this type (upstream T-03)."""
        simple = _SIMPLE_OPENAPI.get(self.kind)
        if simple is not None:
            return dict(simple)
        if self.kind == "list":
            return {"type": "array", "items": self.params[0].to_openapi()}
        if self.kind == "map":
            return {"type": "object", "additionalProperties": self.params[1].to_openapi()}
        if self.kind == "object" and self.schema is not None:
            return copy.deepcopy(dict(self.schema))
        if self.kind in ("dyn", "null"):
            return {"x-kubernetes-preserve-unknown-fields": True}
        return {
            "x-kubernetes-preserve-unknown-fields": True,
            "description": f"unknown CEL type: {self.cel_name}",
        }

    def __str__(self) -> str:
        return self.cel_name


_SIMPLE_OPENAPI: Final[Mapping[str, Mapping[str, str]]] = {
    "bool": {"type": "boolean"},
    "int": {"type": "integer"},
    "uint": {"type": "integer"},
    "double": {"type": "number"},
    "string": {"type": "string"},
    "bytes": {"type": "string", "format": "byte"},
    "timestamp": {"type": "string", "format": "date-time"},
}

BOOL: Final = CelType("bool")
INT: Final = CelType("int")
UINT: Final = CelType("uint")
DOUBLE: Final = CelType("double")
STRING: Final = CelType("string")
BYTES: Final = CelType("bytes")
NULL: Final = CelType("null")
TIMESTAMP: Final = CelType("timestamp")
DURATION: Final = CelType("duration")
DYN: Final = CelType("dyn")


def list_of(element: CelType) -> CelType:
    return CelType("list", (element,))


def map_of(key: CelType, value: CelType) -> CelType:
    return CelType("map", (key, value))


_ENGINE_SCALARS: Final[Mapping[str, CelType]] = {
    "BOOL": BOOL, "INT": INT, "UINT": UINT, "DOUBLE": DOUBLE, "STRING": STRING,
    "BYTES": BYTES, "NULL": NULL, "NULL_TYPE": NULL, "TIMESTAMP": TIMESTAMP,
    "DURATION": DURATION, "DYN": DYN, "ERROR": CelType("error"), "TYPE": CelType("type"),
    "google.protobuf.Value": DYN, "google.protobuf.Timestamp": TIMESTAMP,
    "google.protobuf.Duration": DURATION,
}  # fmt: skip
_TOKEN: Final = re.compile(r"\s*([A-Za-z0-9_.]+|<|>|,)")


def parse_engine_type(name: str, messages: Mapping[str, Mapping[str, Any]]) -> CelType:
    """Read a `Type.name()` string (`LIST<kro.t1.spec>`, `optional_type<INT>`, ...).

    `messages` maps the synthetic message names of a declaration back to their schemas;
    message names found there are objects, other message names (kubernetes.Quantity, ...)
    are opaque library types.
    """
    tokens = _TOKEN.findall(name)
    parsed, rest = _parse_tokens(tokens, 0, messages)
    if rest != len(tokens):
        return DYN
    return parsed


def _parse_tokens(
    tokens: list[str], i: int, messages: Mapping[str, Mapping[str, Any]]
) -> tuple[CelType, int]:
    head = tokens[i]
    i += 1
    params: list[CelType] = []
    if i < len(tokens) and tokens[i] == "<":
        i += 1
        while True:
            param, i = _parse_tokens(tokens, i, messages)
            params.append(param)
            if tokens[i] == ",":
                i += 1
                continue
            i += 1  # ">"
            break
    upper = head.upper()
    if upper == "LIST":
        return list_of(params[0] if params else DYN), i
    if upper == "MAP":
        return (map_of(params[0], params[1]) if len(params) == 2 else map_of(DYN, DYN)), i
    if upper == "OPTIONAL_TYPE":
        return CelType("optional", (params[0] if params else DYN,)), i
    if upper == "TYPE":
        return CelType("type", tuple(params)), i
    known = _ENGINE_SCALARS.get(upper) or _ENGINE_SCALARS.get(head)
    if known is not None:
        return known, i
    if head == "google.protobuf.Struct":
        return map_of(STRING, DYN), i
    if head == "google.protobuf.ListValue":
        return list_of(DYN), i
    schema = messages.get(head)
    if schema is not None:
        return CelType("object", name=head, schema=schema), i
    return CelType("opaque", name=head), i


# --------------------------------------------------------------------------------------
# OpenAPI schema -> protobuf descriptors


@dataclass(frozen=True, slots=True)
class _Shape:
    """How one schema node is stored: a scalar, a message, a list or a map of shapes."""

    proto_type: int  # FieldDescriptorProto.TYPE_*
    type_name: str = ""  # for messages
    element: _Shape | None = None  # list element / map value
    is_list: bool = False
    is_map: bool = False
    cel_type: CelType = DYN


_SCALARS: Final[Mapping[str, tuple[int, CelType]]] = {
    "integer": (_FD.TYPE_INT64, INT),
    "number": (_FD.TYPE_DOUBLE, DOUBLE),
    "boolean": (_FD.TYPE_BOOL, BOOL),
    "string": (_FD.TYPE_STRING, STRING),
}
_DYN_SHAPE: Final = _Shape(_FD.TYPE_MESSAGE, _VALUE, cel_type=DYN)
_file_ids = itertools.count(1)


# CEL's reserved symbols (Kubernetes `celReservedSymbols`); the first four are lexer
# keywords, which no parser accepts after a dot.
RESERVED_WORDS: Final = frozenset({
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
    "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
    "void", "while",
})  # fmt: skip
_KEYWORDS: Final = frozenset({"true", "false", "null", "in"})
_ESCAPED: Final = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_EXPAND: Final = re.compile(r"__|[-./]|[^a-zA-Z0-9\-./_]")


def escape_field_name(name: str) -> str | None:
    """Kubernetes' `Escape`: the CEL name of a property, or None if it has none.

    Reserved words become `__{word}__`; `__`, `.`, `-` and `/` become `__underscores__`,
    `__dot__`, `__dash__` and `__slash__`; a name starting with a digit or holding any other
    character cannot be selected (upstream leaves it out of the object type).
    """
    if not name or name[0].isdigit():
        return None
    if name in RESERVED_WORDS:
        return f"__{name}__"
    out: list[str] = []
    last = 0
    for match in _EXPAND.finditer(name):
        escaped = _ESCAPED.get(match.group(0))
        if escaped is None:
            return None
        out += [name[last : match.start()], escaped]
        last = match.end()
    out.append(name[last:])
    return "".join(out)


def cel_field_names(schema: Mapping[str, Any]) -> dict[str, str]:
    """Every name a property of `schema` can be selected by (CEL name -> property).

    Like upstream's DeclTypes [C-16]: the escaped name of each property, and, for reserved
    words that are not keywords, the plain name too (`SetRecognizeKeywordAsFieldName`:
    `schema.metadata.namespace` as well as `schema.metadata.__namespace__`).
    """
    properties = schema.get("properties")
    names: dict[str, str] = {}
    if not isinstance(properties, Mapping):
        return names
    for prop in properties:
        if not isinstance(prop, str):
            continue
        escaped = escape_field_name(prop)
        if escaped is None:
            continue
        if prop in RESERVED_WORDS and prop not in _KEYWORDS:
            names[prop] = prop
        names[escaped] = prop
    return names


def is_dyn_schema(schema: Mapping[str, Any]) -> bool:
    """True when the checker must accept anything below this node (C-17)."""
    if schema.get("x-kubernetes-int-or-string") or schema.get(
        "x-kubernetes-preserve-unknown-fields"
    ):
        return True
    kind = schema.get("type")
    if kind is None:
        return not schema.get("properties") and not isinstance(
            schema.get("additionalProperties"), Mapping
        )
    return False


class SchemaTranslator:
    """Builds one `.proto` file describing one declared variable's schema.

    Each object node becomes a message named after its path (`deployment_spec_template`), so
    the checker's messages read like `undefined field 'x' not found in struct
    'kro.t3.deployment_spec'`. Shared schema dicts (recursive schemas) map to one message.
    """

    def __init__(self, variable: str) -> None:
        file_id = next(_file_ids)
        self.package = f"kro.t{file_id}"
        self.file = descriptor_pb2.FileDescriptorProto(
            name=f"kro/t{file_id}.proto", package=self.package, syntax="proto3"
        )
        self.file.dependency.extend(WELL_KNOWN_FILES)
        self.messages: dict[str, Mapping[str, Any]] = {}
        self._memo: dict[int, str] = {}
        self._names: set[str] = set()
        self._variable = variable

    def translate(self, schema: Mapping[str, Any]) -> tuple[Any, CelType]:
        """The engine type to declare the variable with, and its CelType."""
        shape = self._shape(schema, self._variable, 0)
        return self._engine_type(shape), shape.cel_type

    def _engine_type(self, shape: _Shape) -> Any:
        if shape.is_list:
            assert shape.element is not None
            return cel.Type.List(self._engine_type(shape.element))
        if shape.is_map:
            assert shape.element is not None
            return cel.Type.Map(cel.Type.STRING, self._engine_type(shape.element))
        if shape.type_name == _VALUE:
            return cel.Type.DYN
        if shape.type_name in (_TIMESTAMP, _DURATION, _STRUCT, _LIST_VALUE):
            return _ENGINE_BY_WKT[shape.type_name]()
        if shape.proto_type == _FD.TYPE_MESSAGE:
            return cel.Type(shape.type_name.lstrip("."))
        return _ENGINE_BY_PROTO[shape.proto_type]()

    def _shape(self, schema: Mapping[str, Any], path: str, depth: int) -> _Shape:
        if depth > _MAX_DEPTH or not isinstance(schema, Mapping) or is_dyn_schema(schema):
            return _DYN_SHAPE
        kind = schema.get("type")
        if kind == "string":
            fmt = schema.get("format")
            if fmt in ("date-time", "date"):
                return _Shape(_FD.TYPE_MESSAGE, _TIMESTAMP, cel_type=TIMESTAMP)
            if fmt == "duration":
                return _Shape(_FD.TYPE_MESSAGE, _DURATION, cel_type=DURATION)
            if fmt == "byte":
                return _Shape(_FD.TYPE_BYTES, cel_type=BYTES)
        if isinstance(kind, str) and kind in _SCALARS:
            proto_type, cel_type = _SCALARS[kind]
            return _Shape(proto_type, cel_type=cel_type)
        if kind == "array":
            items = schema.get("items")
            element = (
                self._shape(items, path + "_items", depth + 1)
                if isinstance(items, Mapping)
                else _DYN_SHAPE
            )
            return _Shape(
                _FD.TYPE_MESSAGE, element=element, is_list=True, cel_type=list_of(element.cel_type)
            )
        if kind == "object":
            properties = schema.get("properties")
            if isinstance(properties, Mapping) and properties:
                name = self._message(schema, properties, path, depth)
                return _Shape(
                    _FD.TYPE_MESSAGE, "." + name,
                    cel_type=CelType("object", name=name, schema=schema),
                )  # fmt: skip
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping):
                value = self._shape(extra, path + "_values", depth + 1)
                return _Shape(
                    _FD.TYPE_MESSAGE, element=value, is_map=True,
                    cel_type=map_of(STRING, value.cel_type),
                )  # fmt: skip
        return _DYN_SHAPE

    def _message(
        self,
        schema: Mapping[str, Any],
        properties: Mapping[str, Any],
        path: str,
        depth: int,
    ) -> str:
        memo = self._memo.get(id(schema))
        if memo is not None:
            return memo
        base = re.sub(r"[^A-Za-z0-9_]", "_", path) or "root"
        if not base[0].isalpha():
            base = "m_" + base
        short = base
        for n in itertools.count(2):
            if short not in self._names:
                break
            short = f"{base}_{n}"
        self._names.add(short)
        full = f"{self.package}.{short}"
        self._memo[id(schema)] = full
        self.messages[full] = schema
        message = self.file.message_type.add(name=short)
        entries: set[str] = set()
        for number, (field_name, prop) in enumerate(cel_field_names(schema).items(), start=1):
            shape = self._shape(properties[prop], f"{path}_{prop}", depth + 1)
            if shape.is_map:
                # Two names for one map property would need two nested entry types of the
                # same (CamelCase) name: keep the first (the escaped one is the rarer).
                entry = _map_entry_name(field_name)
                if entry in entries:
                    continue
                entries.add(entry)
            self._add_field(message, field_name, number, shape)
        return full

    def _add_field(
        self, message: descriptor_pb2.DescriptorProto, name: str, number: int, shape: _Shape
    ) -> None:
        fld = message.field.add(name=name, number=number, json_name=name)
        if shape.is_map:
            assert shape.element is not None
            entry_name = _map_entry_name(name)
            entry = message.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            entry.field.add(
                name="key", number=1, type=_FD.TYPE_STRING, label=_FD.LABEL_OPTIONAL,
                json_name="key",
            )  # fmt: skip
            value = entry.field.add(name="value", number=2, label=_FD.LABEL_OPTIONAL)
            value.json_name = "value"
            self._set_element(value, shape.element)
            fld.label = _FD.LABEL_REPEATED
            fld.type = _FD.TYPE_MESSAGE
            fld.type_name = f".{self.package}.{message.name}.{entry_name}"
            return
        if shape.is_list:
            assert shape.element is not None
            fld.label = _FD.LABEL_REPEATED
            self._set_element(fld, shape.element)
            return
        fld.label = _FD.LABEL_OPTIONAL
        fld.type = shape.proto_type  # type: ignore[assignment]
        if shape.type_name:
            fld.type_name = shape.type_name

    @staticmethod
    def _set_element(fld: descriptor_pb2.FieldDescriptorProto, element: _Shape) -> None:
        """Lists of lists and maps of maps are not protobuf: store the inner one as dyn."""
        if element.is_list:
            fld.type, fld.type_name = _FD.TYPE_MESSAGE, _LIST_VALUE
        elif element.is_map:
            fld.type, fld.type_name = _FD.TYPE_MESSAGE, _STRUCT
        else:
            fld.type = element.proto_type  # type: ignore[assignment]
            if element.type_name:
                fld.type_name = element.type_name


def _map_entry_name(field_name: str) -> str:
    """protobuf requires map entry types to be named `<CamelCaseField>Entry`."""
    out: list[str] = []
    upper_next = True
    for char in field_name:
        if char == "_":
            upper_next = True
        elif upper_next:
            out.append(char.upper())
            upper_next = False
        else:
            out.append(char)
    return "".join(out) + "Entry"


_ENGINE_BY_PROTO: Final[Mapping[int, Any]] = {
    _FD.TYPE_INT64: lambda: cel.Type.INT,
    _FD.TYPE_DOUBLE: lambda: cel.Type.DOUBLE,
    _FD.TYPE_BOOL: lambda: cel.Type.BOOL,
    _FD.TYPE_STRING: lambda: cel.Type.STRING,
    _FD.TYPE_BYTES: lambda: cel.Type.BYTES,
}
_ENGINE_BY_WKT: Final[Mapping[str, Any]] = {
    _TIMESTAMP: lambda: cel.Type.TIMESTAMP,
    _DURATION: lambda: cel.Type.DURATION,
    _STRUCT: lambda: cel.Type.Map(cel.Type.STRING, cel.Type.DYN),
    _LIST_VALUE: lambda: cel.Type.List(cel.Type.DYN),
}


def engine_type(cel_type: CelType) -> Any:
    """The engine type for a declared CelType (scalars and containers; objects by name)."""
    if cel_type.kind == "list":
        return cel.Type.List(engine_type(cel_type.params[0]))
    if cel_type.kind == "map":
        return cel.Type.Map(engine_type(cel_type.params[0]), engine_type(cel_type.params[1]))
    if cel_type.kind in ("object", "opaque"):
        return cel.Type(cel_type.name)
    simple = {
        "bool": cel.Type.BOOL, "int": cel.Type.INT, "uint": cel.Type.UINT,
        "double": cel.Type.DOUBLE, "string": cel.Type.STRING, "bytes": cel.Type.BYTES,
        "timestamp": cel.Type.TIMESTAMP, "duration": cel.Type.DURATION, "null": cel.Type.NULL,
    }  # fmt: skip
    return simple.get(cel_type.kind, cel.Type.DYN)
