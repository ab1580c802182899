"""kro.api.v1alpha1: the ResourceGraphDefinition API (`kro.run/v1alpha1`, reference §1.A).

Two views of the same object, for two different jobs:

* pydantic models (`ResourceGraphDefinition`, `ResourceGraphDefinitionSpec`, ...) parse *user
  input* — a YAML file given to the CLI, a snapshot being recompiled — and reject exactly what
  the apiserver's admission would reject for our CRD (`kro/api/crds/`): patterns, enums, list
  limits, set semantics and the two exactly-one-of rules, with the same messages. Unknown fields
  are ignored, as the apiserver prunes them (A-02, A-27). Rules the *graph builder* owns (id
  naming, reserved words, CEL) are not checked here.
* `TypedDict` views (`RGDSpecView`, ...) type the plain dicts that controllers read from the
  cluster; no model is built per watch event.

`parse_resource_graph_definition` is the entry point for untrusted input: it raises
`InvalidObjectError` whose message lists every problem as `<field path>: <message>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from kro.api.names import (
    KRO_DOMAIN,
    MSG_DELETION_POLICY_TEMPLATE_ONLY,
    RGD_API_VERSION,
    RGD_KIND,
    SCOPE_NAMESPACED,
)

KIND_PATTERN: Final = r"^[A-Z][a-zA-Z0-9]{0,62}$"
"""Admission pattern of `spec.schema.kind` (A-03); the builder re-checks UpperCamelCase."""
API_VERSION_PATTERN: Final = r"^v[0-9]+(alpha[0-9]+|beta[0-9]+)?$"
"""Admission pattern of `spec.schema.apiVersion`: a version only, never `group/version` (A-04)."""
SHORT_NAME_PATTERN: Final = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
"""Admission pattern of shortNames and categories items (A-11, A-12)."""
SHORT_NAME_MAX_LENGTH: Final = 63
SHORT_NAMES_MAX_ITEMS: Final = 32
DNS1123_SUBDOMAIN_PATTERN: Final = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
"""Object names of cluster-scoped kro objects (RGDs may contain dots: `somethings.kro.run`)."""
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253

MSG_TEMPLATE_XOR_EXTERNAL_REF: Final = "exactly one of template or externalRef must be provided"
MSG_NAME_XOR_SELECTOR: Final = "exactly one of name or selector must be provided"
"""Checked by the graph build since v0.10 (V-12), no longer by admission."""

Scope = Literal["Namespaced", "Cluster"]
ShortName = Annotated[
    str, StringConstraints(max_length=SHORT_NAME_MAX_LENGTH, pattern=SHORT_NAME_PATTERN)
]
ObjectName = Annotated[
    str,
    StringConstraints(max_length=DNS1123_SUBDOMAIN_MAX_LENGTH, pattern=DNS1123_SUBDOMAIN_PATTERN),
]


class KubeModel(BaseModel):
    """Base of kro's API models: camelCase on the wire, frozen, unknown fields pruned."""

    model_config = ConfigDict(
        extra="ignore",
        frozen=True,
        serialize_by_alias=True,
        validate_by_alias=True,
        validate_by_name=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, unset optional fields omitted (Go's `omitempty`)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def _unique(values: list[str] | None, what: str) -> list[str] | None:
    """`x-kubernetes-list-type: set`: the apiserver rejects duplicates (A-11)."""
    if values is None:
        return None
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f'duplicate {what} "{value}"')
        seen.add(value)
    return values


class ObjectMeta(KubeModel):
    """The parts of ObjectMeta kro reads from its own objects; the rest is carried through."""

    model_config = ConfigDict(extra="allow")

    name: ObjectName | None = None
    generate_name: str | None = Field(default=None, alias="generateName")
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    generation: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")
    creation_timestamp: str | None = Field(default=None, alias="creationTimestamp")


class CustomResourceColumnDefinition(KubeModel):
    """An extra `kubectl get` column of the generated CRD (A-10); replaces the defaults."""

    name: str
    type: str
    json_path: str = Field(alias="jsonPath")
    description: str | None = None
    format: str | None = None
    priority: int | None = None


class CRDMetadata(KubeModel):
    """Labels and annotations put on the generated CRD object, not on instances (A-13)."""

    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class Schema(KubeModel):
    """`spec.schema`: the instance API kro generates a CRD for (A-02..A-13)."""

    kind: Annotated[str, StringConstraints(pattern=KIND_PATTERN)]
    api_version: Annotated[str, StringConstraints(pattern=API_VERSION_PATTERN)] = Field(
        alias="apiVersion"
    )
    group: str = KRO_DOMAIN
    scope: Scope = SCOPE_NAMESPACED
    spec: dict[str, Any] | None = None
    types: dict[str, Any] | None = None
    status: dict[str, Any] | None = None
    additional_printer_columns: list[CustomResourceColumnDefinition] | None = Field(
        default=None, alias="additionalPrinterColumns"
    )
    metadata: CRDMetadata | None = None
    short_names: list[ShortName] | None = Field(
        default=None, alias="shortNames", max_length=SHORT_NAMES_MAX_ITEMS
    )
    categories: list[ShortName] | None = Field(default=None, max_length=SHORT_NAMES_MAX_ITEMS)

    @field_validator("short_names")
    @classmethod
    def _short_names_are_a_set(cls, value: list[str] | None) -> list[str] | None:
        return _unique(value, "short name")

    @field_validator("categories")
    @classmethod
    def _categories_are_a_set(cls, value: list[str] | None) -> list[str] | None:
        return _unique(value, "category")

    @property
    def effective_group(self) -> str:
        """The instance API group; an explicit empty group still means `kro.run` (A-05)."""
        return self.group or KRO_DOMAIN


class ExternalRefMetadata(KubeModel):
    """Which object(s) an externalRef reads: one by name, or a list by selector (X-02, X-03).

    `selector` is schemaless (V-12): a literal label selector or one `${...}` expression that
    yields one, so admission checks neither its shape nor "exactly one of name or selector";
    the graph build does both (kro.graph.validation, kro.graph.selectors), as upstream v0.10.
    """

    name: Annotated[str, StringConstraints(min_length=1)] | None = None
    namespace: str | None = None
    selector: Any = None


class ExternalRef(KubeModel):
    """A read-only reference to objects kro does not manage (A-17, §1.I)."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    metadata: ExternalRefMetadata


ForEachDimension = Annotated[dict[str, str], Field(min_length=1, max_length=1)]
"""One forEach dimension: exactly one `iterator: "${listExpr}"` pair (A-20)."""


class TargetCluster(KubeModel):
    """A member cluster by its registry Secret (M-10): a literal name or a `${}` expression."""

    kubeconfig_secret_name: str = Field(alias="kubeconfigSecretName", min_length=1)
    kubeconfig_secret_namespace: str | None = Field(
        default=None, alias="kubeconfigSecretNamespace"
    )


class Target(KubeModel):
    """Alpha (feature gate MultiCluster): where a resource, or every resource, is sent
    (kro.graph.targets); the builder refuses it while the gate is off."""

    cluster: TargetCluster


class Resource(KubeModel):
    """One node of the graph: a template kro applies, or an externalRef it reads (A-14)."""

    id: str
    template: dict[str, Any] | None = None
    external_ref: ExternalRef | None = Field(default=None, alias="externalRef")
    ready_when: list[str] | None = Field(default=None, alias="readyWhen")
    include_when: list[str] | None = Field(default=None, alias="includeWhen")
    for_each: list[ForEachDimension] | None = Field(default=None, alias="forEach")
    deletion_policy: Literal["Delete", "Orphaned"] | None = Field(
        default=None, alias="deletionPolicy"
    )
    """V-30 (alpha, feature gate DeletionPolicy): `Orphaned` leaves the object in place when
    kro lets go of it; the builder refuses the field while the gate is off."""
    optional: bool | None = None
    """Alpha (feature gate DeferredSchemaResolution): the resource may wait for a kind not
    served yet without an includeWhen (kro.graph.deferred); the builder refuses `true` while
    the gate is off."""
    target: Target | None = None
    """M-11: this resource's cluster, overriding `spec.target`."""

    @model_validator(mode="after")
    def _template_xor_external_ref(self) -> Resource:
        if (self.template is None) == (self.external_ref is None):
            raise ValueError(MSG_TEMPLATE_XOR_EXTERNAL_REF)
        if self.deletion_policy is not None and self.template is None:
            raise ValueError(MSG_DELETION_POLICY_TEMPLATE_ONLY)
        return self


class ResourceGraphDefinitionSpec(KubeModel):
    """`spec`: the instance schema plus the resources; resources may be empty (A-14)."""

    schema_: Schema = Field(alias="schema")
    resources: list[Resource] | None = None
    target: Target | None = None
    """M-10: the cluster every resource is sent to (the instance stays where it is)."""


class ResourceDependency(KubeModel):
    id: str


class ResourceInformation(KubeModel):
    """A status entry for a resource that has at least one dependency (A-24)."""

    id: str
    dependencies: list[ResourceDependency] | None = None


class ConditionModel(KubeModel):
    """A status condition (A-23); `kro.api.conditions.Condition` is the dict view."""

    type: str
    status: Literal["True", "False", "Unknown"]
    last_transition_time: str | None = Field(default=None, alias="lastTransitionTime")
    reason: str | None = None
    message: str | None = None
    observed_generation: Annotated[int, Field(ge=0)] | None = Field(
        default=None, alias="observedGeneration"
    )


class ResourceGraphDefinitionStatus(KubeModel):
    state: Literal["Active", "Inactive"] | None = None
    topological_order: list[str] | None = Field(default=None, alias="topologicalOrder")
    conditions: list[ConditionModel] | None = None
    resources: list[ResourceInformation] | None = None
    last_issued_revision: int | None = Field(default=None, alias="lastIssuedRevision")


class ResourceGraphDefinition(KubeModel):
    """A whole RGD object as a user writes it (cluster-scoped, A-01)."""

    api_version: Literal["kro.run/v1alpha1"] = Field(default=RGD_API_VERSION, alias="apiVersion")
    kind: Literal["ResourceGraphDefinition"] = RGD_KIND
    metadata: ObjectMeta
    spec: ResourceGraphDefinitionSpec
    status: ResourceGraphDefinitionStatus | None = None


# --- TypedDict views of the wire form ----------------------------------------------------------


class ExternalRefView(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]


class ResourceView(TypedDict, total=False):
    id: str
    template: dict[str, Any]
    externalRef: ExternalRefView
    readyWhen: list[str]
    includeWhen: list[str]
    forEach: list[dict[str, str]]
    deletionPolicy: str
    optional: bool


class SchemaView(TypedDict, total=False):
    kind: str
    apiVersion: str
    group: str
    scope: str
    spec: dict[str, Any]
    types: dict[str, Any]
    status: dict[str, Any]
    additionalPrinterColumns: list[dict[str, Any]]
    metadata: dict[str, dict[str, str]]
    shortNames: list[str]
    categories: list[str]


class RGDSpecView(TypedDict, total=False):
    schema: SchemaView
    resources: list[ResourceView]


class ResourceInformationView(TypedDict, total=False):
    id: str
    dependencies: list[dict[str, str]]


class RGDStatusView(TypedDict, total=False):
    state: str
    topologicalOrder: list[str]
    conditions: list[dict[str, Any]]
    resources: list[ResourceInformationView]
    lastIssuedRevision: int


# --- parsing untrusted input -------------------------------------------------------------------


class InvalidObjectError(ValueError):
    """User input that the apiserver would reject for kro's CRD; no retry can help.

    `causes` holds `(field path, message)` pairs, the path in the apiserver's dotted form
    (`spec.resources[0].id`), so a CLI can print them and tests can match them.
    """

    def __init__(self, kind: str, name: str, causes: list[tuple[str, str]]) -> None:
        self.kind, self.name, self.causes = kind, name, causes
        details = "; ".join(f"{path}: {message}" for path, message in causes)
        super().__init__(f'{kind} "{name}" is invalid: {details}')


def _field_path(loc: tuple[int | str, ...]) -> str:
    """pydantic's ('spec', 'resources', 0, 'id') -> `spec.resources[0].id`."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def causes_of(error: ValidationError) -> list[tuple[str, str]]:
    """Turn a pydantic ValidationError into apiserver-style `(path, message)` pairs."""
    causes: list[tuple[str, str]] = []
    for detail in error.errors(include_url=False):
        message = str(detail["msg"]).removeprefix("Value error, ")
        if detail["type"] == "string_pattern_mismatch":
            pattern = detail.get("ctx", {}).get("pattern", "")
            message = f"Invalid value: \"{detail['input']}\": should match '{pattern}'"
        causes.append((_field_path(tuple(detail["loc"])), message))
    return causes


def parse_resource_graph_definition(obj: Mapping[str, Any]) -> ResourceGraphDefinition:
    """Validate an RGD manifest like admission would; raise InvalidObjectError if it fails."""
    try:
        return ResourceGraphDefinition.model_validate(obj)
    except ValidationError as error:
        metadata = obj.get("metadata")
        name = str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""
        raise InvalidObjectError(RGD_KIND, name, causes_of(error)) from error
