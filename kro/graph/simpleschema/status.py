"""kro.graph.simpleschema.status: the shape of `spec.schema.status`.

Unlike `spec`, the status section holds no types: every leaf is a `${...}` expression or string
template whose type is inferred from CEL (reference §1.J, done by the graph builder). This module
only checks the shape and lists the expressions:

* T-01 every leaf except the top-level `conditions` key must contain an expression; literals are
  reported all at once: `status fields without expressions are not supported: [status.a ...]`.
  Nested maps and arrays are fine (`endpoints: ["${a}", "${b}"]`).
* K-01 `conditions`, if present, is the author-conditions block: a list of strings, each exactly
  one standalone `${...}` (C-07).
* T-05 `state` is walked like any other field; that kro ignores its value is the runtime's job.

Paths start with the `status` segment (`status.endpoints[0]`), as in upstream's messages; to
substitute values, wrap the section: `substitute({"status": section}, values)`.

Public API:
    walk_status(status) -> StatusSection         raises StatusShapeError / TemplateError
    StatusSection(fields, conditions)            conditions is None when the block is absent
    STATUS_PATH, CONDITIONS_KEY
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.graph.errors import StatusShapeError, TemplateError
from kro.graph.simpleschema._gocompat import go_type_name
from kro.graph.template.fieldpath import FieldPath
from kro.graph.template.fields import FieldDescriptor, walk_leaves
from kro.graph.template.scanner import parse_standalone, parse_template

STATUS_PATH: Final = FieldPath(("status",))
CONDITIONS_KEY: Final = "conditions"


@dataclass(frozen=True, slots=True)
class StatusSection:
    """The expressions of `spec.schema.status`.

    fields: one descriptor per projected field, document order.
    conditions: the expression of each `conditions` entry, or None if there is no block (then
    kro writes its built-in conditions).
    """

    fields: tuple[FieldDescriptor, ...]
    conditions: tuple[str, ...] | None


def walk_status(status: Any) -> StatusSection:
    """Check the status section's shape and list its expressions."""
    if status is None:
        return StatusSection((), None)
    if not isinstance(status, Mapping):
        raise StatusShapeError(
            f"unexpected type: {go_type_name(status)}", field_path=str(STATUS_PATH)
        )
    conditions = _conditions(status[CONDITIONS_KEY]) if CONDITIONS_KEY in status else None
    projected = {k: v for k, v in status.items() if k != CONDITIONS_KEY}
    fields: list[FieldDescriptor] = []
    literals: list[str] = []
    for path, value in walk_leaves(projected, base=STATUS_PATH):
        template = None
        if isinstance(value, str) and "${" in value:
            try:
                template = parse_template(value)
            except TemplateError as err:
                raise err.with_context(field_path=str(path)) from None
        if template is not None and template.has_expressions:
            fields.append(FieldDescriptor(path, template))
        else:
            literals.append(str(path))
    if literals:
        raise StatusShapeError(
            f"status fields without expressions are not supported: [{' '.join(literals)}]",
            paths=tuple(literals),
        )
    return StatusSection(tuple(fields), conditions)


def _conditions(block: Any) -> tuple[str, ...]:
    path = STATUS_PATH.child(CONDITIONS_KEY)
    if not isinstance(block, list):
        raise StatusShapeError(
            f"{path} must be a list, got {go_type_name(block)}", field_path=str(path)
        )
    out: list[str] = []
    for i, entry in enumerate(block):
        where = str(path.child(i))
        if not isinstance(entry, str):
            raise StatusShapeError(
                f"{where} must be a CEL expression string, got {go_type_name(entry)}",
                field_path=where,
            )
        try:
            out.append(parse_standalone(entry))
        except TemplateError as err:
            raise err.with_context(field_path=where) from None
    return tuple(out)
