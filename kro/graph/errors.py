"""kro.graph.errors: everything kro.graph raises while compiling a ResourceGraphDefinition.

    GraphError                      base: rgd, resource_id, field_path, expression (all optional)
    ├── SchemaError                 spec.schema (SimpleSchema spec, types, status) is invalid
    │   ├── TypeSyntaxError         a type string does not parse or names no type (S-02..S-08, S-12)
    │   ├── TypeCycleError          custom types reference each other in a cycle (S-12)
    │   ├── MarkerError             a marker is malformed, unknown or misapplied (S-14..S-27)
    │   └── StatusShapeError        schema.status has literal leaves or bad conditions (T-01, K-01)
    └── TemplateError               a `${...}` template or a field path is malformed (C-01..C-07)
        ├── NestedExpressionError   `${` inside an expression (C-04)
        ├── UnterminatedExpressionError  a `${` that no `}` closes (V-06)
        ├── NotStandaloneError      exactly one whole-value `${...}` was required (C-07)
        ├── FieldPathError          a field path does not parse or names no field of the object
        └── SubstitutionError       evaluated values do not fit the template they go back into

Every error defined in this module describes the RGD (or a caller's misuse), never the cluster:
retrying cannot help, only editing the RGD can. `str(err)` is exactly the upstream kro message
(the reference quotes it), so it can be compared in tests and shown in conditions; where the
problem is goes in the fields, and the layer that knows more (the builder knows the RGD and the
resource id) adds it with `with_context` on the way out instead of re-wrapping the text.
"""

from __future__ import annotations

from typing import Self


class GraphError(Exception):
    """Base for every error kro.graph raises; each subclass says whether a retry can help."""

    def __init__(
        self,
        message: str,
        *,
        rgd: str | None = None,
        resource_id: str | None = None,
        field_path: str | None = None,
        expression: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.rgd = rgd
        self.resource_id = resource_id
        self.field_path = field_path
        self.expression = expression

    def __str__(self) -> str:
        return self.message

    def with_context(
        self,
        *,
        rgd: str | None = None,
        resource_id: str | None = None,
        field_path: str | None = None,
        expression: str | None = None,
    ) -> Self:
        """Fill in context an outer layer knows; returns self for `raise err.with_context(...)`.

        Fields already set are kept: the innermost raiser saw the most precise location.
        """
        if self.rgd is None:
            self.rgd = rgd
        if self.resource_id is None:
            self.resource_id = resource_id
        if self.field_path is None:
            self.field_path = field_path
        if self.expression is None:
            self.expression = expression
        return self


class SchemaError(GraphError):
    """The SimpleSchema in `spec.schema` (spec, types or status) cannot become an OpenAPI schema."""


class TypeSyntaxError(SchemaError):
    """A type string is malformed (`[]`, `map[integer]string`, too deep) or names no type."""


class TypeCycleError(SchemaError):
    """Custom types in `spec.schema.types` reference each other in a cycle.

    `cycle` is the path as in the message, first and last element equal: ("A", "B", "A").
    """

    def __init__(self, message: str, *, cycle: tuple[str, ...], field_path: str | None = None):
        super().__init__(message, field_path=field_path)
        self.cycle = cycle


class MarkerError(SchemaError):
    """A `| key=value ...` marker section does not tokenize, names an unknown marker, has a value
    that does not parse, or does not apply to the field's type. `marker` is the key, when known."""

    def __init__(self, message: str, *, marker: str | None = None, field_path: str | None = None):
        super().__init__(message, field_path=field_path)
        self.marker = marker


class StatusShapeError(SchemaError):
    """`spec.schema.status` has leaves that are not expressions, or a malformed `conditions` block.

    `paths` lists every offending field path (all of them, so one edit can fix them all).
    """

    def __init__(self, message: str, *, paths: tuple[str, ...] = (), field_path: str | None = None):
        super().__init__(message, field_path=field_path)
        self.paths = paths


class TemplateError(GraphError):
    """A string's `${...}` expressions cannot be extracted, or a template cannot be filled."""


class NestedExpressionError(TemplateError):
    """`${` appears inside another expression (allowed only right after a `"`, C-04)."""


class UnterminatedExpressionError(TemplateError):
    """A `${` that no `}` closes (V-06). Upstream v0.9 kept such text literally (C-05); v0.10
    refuses it wherever expressions are parsed, because an author who typed `${` meant an
    expression, and silently shipping the text hid the typo until something read it."""


class NotStandaloneError(TemplateError):
    """A readyWhen/includeWhen/forEach/conditions entry is not exactly one whole `${...}` (C-07)."""


class FieldPathError(TemplateError):
    """A field path string does not parse, or names no field of the object it is applied to."""


class SubstitutionError(TemplateError):
    """Evaluated values do not fit their template (a string-template part is not a string, the
    number of values differs from the number of expressions, or a literal field was targeted)."""
