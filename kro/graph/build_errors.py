"""kro.graph.build_errors: what `build_graph` raises, one class per build stage.

    GraphError (kro.graph.errors)
    └── BuildError                  base: adds `rule` (the reference ID, e.g. "G-21")
        ├── RGDValidationError      naming and shape of the RGD (G-01..G-03, A-14, A-17)
        ├── InstanceSchemaError     `spec.schema.spec`/`types` is not valid SimpleSchema (G-04)
        ├── ResourceBuildError      a resource's template/externalRef/kind is unusable (G-05..G-12)
        ├── DependencyGraphError    references, self references, cycles (G-13..G-15)
        │   └── GraphCycleError     `.cycle` holds the path that closes the cycle
        ├── ResourceValidationError an expression does not type-check in its context
        │                           (G-19..G-24, C-15, C-31)
        ├── StatusSchemaError       `spec.schema.status` cannot become a schema (T-01..T-03)
        └── ConditionsError         `spec.schema.status.conditions` is invalid (K-01..K-03, C-33)

Why one class per stage: the stage decides the message prefix upstream kro puts in front of the
specific problem (`failed to build resource "x": …`, `failed to build dependency graph: …`),
and callers (the RGD controller's `GraphAccepted` condition, the CLI, tests) show `str(err)`
verbatim. Where the problem is goes in the fields (`rgd`, `resource_id`, `field_path`,
`expression`) and `rule` names the reference row, so tests and tools need not parse prose.
Every error means the RGD must be edited: retrying the build cannot help, except for
`ResourceBuildError` with rule G-07 (a kind that is not installed yet).
"""

from __future__ import annotations

from typing import ClassVar, Final

from kro.graph.errors import GraphError

SPEC_PREFIX: Final = "spec."


class BuildError(GraphError):
    """An RGD that cannot be compiled; `detail` is the message without the stage prefix."""

    prefix: ClassVar[str] = ""

    def __init__(
        self,
        detail: str,
        *,
        rule: str,
        rgd: str | None = None,
        resource_id: str | None = None,
        field_path: str | None = None,
        expression: str | None = None,
    ) -> None:
        prefix = self.prefix.format(id=resource_id or "")
        super().__init__(
            prefix + detail,
            rgd=rgd,
            resource_id=resource_id,
            field_path=field_path,
            expression=expression,
        )
        self.detail = detail
        self.rule = rule


class RGDValidationError(BuildError):
    """Kind, resource ids or forEach names break kro's naming rules, or a resource's shape is
    wrong (neither or both of template/externalRef, externalRef with forEach)."""

    prefix = "failed to validate resourcegraphdefinition: "


class InstanceSchemaError(BuildError):
    """The instance `spec` SimpleSchema (or its custom types) does not convert to OpenAPI.

    Upstream builds the instance inside a wrapper that names the RGD, and its SimpleSchema
    converter names the field, so the message reads `failed to build resourcegraphdefinition
    "<name>": failed to build OpenAPI schema for instance: field imageID: <problem>`: with
    dozens of fields in a schema, the field is what the author needs. The field is the path
    below `spec` (`network.cidr`), or below the root for custom types (`types.Person.age`).
    An RGD without a name (a bare spec handed to the builder) gets no RGD prefix.
    """

    prefix = "failed to build OpenAPI schema for instance: "

    def __init__(
        self,
        detail: str,
        *,
        rule: str,
        rgd: str | None = None,
        field_path: str | None = None,
        expression: str | None = None,
    ) -> None:
        field = field_path.removeprefix(SPEC_PREFIX) if field_path else ""
        super().__init__(
            f"field {field}: {detail}" if field else detail,
            rule=rule,
            rgd=rgd,
            field_path=field_path,
            expression=expression,
        )
        if rgd:
            self.message = f'failed to build resourcegraphdefinition "{rgd}": {self.message}'


class ResourceBuildError(BuildError):
    """A template or externalRef is not a usable Kubernetes object for its kind: structure,
    apiVersion/kind, schema lookup, scope, reserved labels, literal values vs. OpenAPI."""

    prefix = 'failed to build resource "{id}": '


class DependencyGraphError(BuildError):
    """An expression names unknown identifiers or functions, a resource reads itself, or the
    resources depend on each other in a cycle."""

    prefix = "failed to build dependency graph: "


class GraphCycleError(DependencyGraphError):
    """The dependencies form a cycle; `cycle` starts and ends with the same resource id."""

    def __init__(self, cycle: tuple[str, ...], *, rgd: str | None = None) -> None:
        super().__init__(
            f"graph contains a cycle: {' -> '.join(cycle)}",
            rule="G-15",
            rgd=rgd,
            resource_id=cycle[0] if cycle else None,
        )
        self.cycle = cycle


class ResourceValidationError(BuildError):
    """An expression of a resource compiles but is not valid where it is used: wrong result
    type for its field (G-21/G-22), forEach (G-19/G-20), includeWhen/readyWhen (G-23/G-24),
    `runtime` outside conditions (C-15) or `omit()` misuse (C-31)."""

    prefix = 'failed to validate resource "{id}": '


class StatusSchemaError(BuildError):
    """A `spec.schema.status` field has no expression, reads nothing, or reads what status
    fields may not (iterators, `each`, `runtime`, `omit()`)."""

    prefix = "failed to build instance status schema: "


class ConditionsError(BuildError):
    """The author-conditions block is malformed, returns something that is not a condition,
    declares a type twice, or reads a condition it may not (K-01..K-03, C-33)."""

    prefix = "failed to build instance status conditions: "
