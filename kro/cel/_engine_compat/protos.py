"""_engine_compat.protos: protobuf message classes for the part of `cel.expr` kro reads.

cel-expr-python 0.1.3 serializes expressions as `cel.expr.CheckedExpr` / `ParsedExpr` (in a
`google.protobuf.Any`) but ships no Python classes for them, and registers none in the
protobuf runtime; no lightweight registry package provides them (xds-protos does, inside
envoy's whole API and with grpcio). So the messages kro reads are declared here, field by
field as cel-spec's `syntax.proto` and `checked.proto` define them, and the protobuf runtime
builds the classes and does the parsing. Fields kro never reads (macro calls, function types,
durations and timestamps in constants, reference values) are left out: the parser keeps them
as unknown fields and kro sees them as absent.

The declarations live in a private descriptor pool, so they cannot collide with real
`cel.expr` classes another package might register in the default pool.
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS: Final = {
    "int64": _F.TYPE_INT64,
    "uint64": _F.TYPE_UINT64,
    "int32": _F.TYPE_INT32,
    "bool": _F.TYPE_BOOL,
    "double": _F.TYPE_DOUBLE,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}

# message -> (field name, number, type, repeated?, oneof). A type not in _SCALARS is a message
# of this file (nested names are written with dots).
_Field = tuple[str, int, str, bool, str | None]
_MESSAGES: Final[dict[str, tuple[_Field, ...]]] = {
    "Expr": (
        ("id", 2, "int64", False, None),
        ("const_expr", 3, "Constant", False, "expr_kind"),
        ("ident_expr", 4, "Expr.Ident", False, "expr_kind"),
        ("select_expr", 5, "Expr.Select", False, "expr_kind"),
        ("call_expr", 6, "Expr.Call", False, "expr_kind"),
        ("list_expr", 7, "Expr.CreateList", False, "expr_kind"),
        ("struct_expr", 8, "Expr.CreateStruct", False, "expr_kind"),
        ("comprehension_expr", 9, "Expr.Comprehension", False, "expr_kind"),
    ),
    "Expr.Ident": (("name", 1, "string", False, None),),
    "Expr.Select": (
        ("operand", 1, "Expr", False, None),
        ("field", 2, "string", False, None),
        ("test_only", 3, "bool", False, None),
    ),
    "Expr.Call": (
        ("target", 1, "Expr", False, None),
        ("function", 2, "string", False, None),
        ("args", 3, "Expr", True, None),
    ),
    "Expr.CreateList": (
        ("elements", 1, "Expr", True, None),
        ("optional_indices", 2, "int32", True, None),
    ),
    "Expr.CreateStruct": (
        ("message_name", 1, "string", False, None),
        ("entries", 2, "Expr.CreateStruct.Entry", True, None),
    ),
    "Expr.CreateStruct.Entry": (
        ("id", 1, "int64", False, None),
        ("field_key", 2, "string", False, "key_kind"),
        ("map_key", 3, "Expr", False, "key_kind"),
        ("value", 4, "Expr", False, None),
        ("optional_entry", 5, "bool", False, None),
    ),
    "Expr.Comprehension": (
        ("iter_var", 1, "string", False, None),
        ("iter_range", 2, "Expr", False, None),
        ("accu_var", 3, "string", False, None),
        ("accu_init", 4, "Expr", False, None),
        ("loop_condition", 5, "Expr", False, None),
        ("loop_step", 6, "Expr", False, None),
        ("result", 7, "Expr", False, None),
        ("iter_var2", 8, "string", False, None),
    ),
    "Constant": (
        ("null_value", 1, "int32", False, "constant_kind"),  # an enum on the wire
        ("bool_value", 2, "bool", False, "constant_kind"),
        ("int64_value", 3, "int64", False, "constant_kind"),
        ("uint64_value", 4, "uint64", False, "constant_kind"),
        ("double_value", 5, "double", False, "constant_kind"),
        ("string_value", 6, "string", False, "constant_kind"),
        ("bytes_value", 7, "bytes", False, "constant_kind"),
    ),
    "SourceInfo": (("positions", 4, "SourceInfo.PositionsEntry", True, None),),
    "SourceInfo.PositionsEntry": (
        ("key", 1, "int64", False, None),
        ("value", 2, "int32", False, None),
    ),
    "ParsedExpr": (
        ("expr", 2, "Expr", False, None),
        ("source_info", 3, "SourceInfo", False, None),
    ),
    # Two views of one cel.expr.CheckedExpr, so that each reader parses only what it reads:
    # the tree (`ast_decode`) or the checker's maps (`checked_types`).
    "CheckedExpr": (
        ("expr", 4, "Expr", False, None),
        ("source_info", 5, "SourceInfo", False, None),
    ),
    "CheckedMaps": (
        ("reference_map", 2, "CheckedMaps.ReferenceMapEntry", True, None),
        ("type_map", 3, "CheckedMaps.TypeMapEntry", True, None),
    ),
    "CheckedMaps.ReferenceMapEntry": (
        ("key", 1, "int64", False, None),
        ("value", 2, "Reference", False, None),
    ),
    "CheckedMaps.TypeMapEntry": (
        ("key", 1, "int64", False, None),
        ("value", 2, "Type", False, None),
    ),
    "Reference": (
        ("name", 1, "string", False, None),
        ("overload_id", 3, "string", True, None),
    ),
    "Empty": (),  # google.protobuf.Empty, the same on the wire
    "Type": (
        ("dyn", 1, "Empty", False, "type_kind"),
        ("null", 2, "int32", False, "type_kind"),  # enums on the wire, as the next three
        ("primitive", 3, "int32", False, "type_kind"),
        ("wrapper", 4, "int32", False, "type_kind"),
        ("well_known", 5, "int32", False, "type_kind"),
        ("list_type", 6, "Type.ListType", False, "type_kind"),
        ("map_type", 7, "Type.MapType", False, "type_kind"),
        ("message_type", 9, "string", False, "type_kind"),
        ("type_param", 10, "string", False, "type_kind"),
        ("type", 11, "Type", False, "type_kind"),
        ("error", 12, "Empty", False, "type_kind"),
        ("abstract_type", 14, "Type.AbstractType", False, "type_kind"),
    ),
    "Type.ListType": (("elem_type", 1, "Type", False, None),),
    "Type.MapType": (
        ("key_type", 1, "Type", False, None),
        ("value_type", 2, "Type", False, None),
    ),
    "Type.AbstractType": (
        ("name", 1, "string", False, None),
        ("parameter_types", 2, "Type", True, None),
    ),
}
_MAP_ENTRIES: Final = frozenset(
    {"SourceInfo.PositionsEntry", "CheckedMaps.ReferenceMapEntry", "CheckedMaps.TypeMapEntry"}
)
_PACKAGE: Final = "cel.expr"


def _file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name="kro/cel_expr_subset.proto", package=_PACKAGE, syntax="proto3"
    )
    built: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name in _MESSAGES:  # parents come before their nested messages
        parent, _, short = name.rpartition(".")
        message = (built[parent].nested_type if parent else file.message_type).add(name=short)
        if name in _MAP_ENTRIES:
            message.options.map_entry = True
        built[name] = message
    for name, fields in _MESSAGES.items():
        message = built[name]
        oneofs: list[str] = []
        for field_name, number, kind, repeated, oneof in fields:
            field = message.field.add(name=field_name, number=number)
            field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if kind in _SCALARS:
                field.type = _SCALARS[kind]
            else:
                field.type = _F.TYPE_MESSAGE
                field.type_name = f".{_PACKAGE}.{kind}"
            if oneof is not None:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    message.oneof_decl.add(name=oneof)
                field.oneof_index = oneofs.index(oneof)
    return file


def _classes() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in ("CheckedExpr", "CheckedMaps", "ParsedExpr")
    }


_CLASSES: Final = _classes()
CheckedExpr: Final = _CLASSES["CheckedExpr"]
CheckedMaps: Final = _CLASSES["CheckedMaps"]
ParsedExpr: Final = _CLASSES["ParsedExpr"]
