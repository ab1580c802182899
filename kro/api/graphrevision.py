"""kro.api.graphrevision: the GraphRevision API (`internal.kro.run/v1alpha1`, reference §1.B).

A GraphRevision is an immutable, numbered snapshot of an RGD spec (B-02..B-04). The RGD
controller issues one per distinct spec hash; the GraphRevision controller compiles it into the
in-memory registry instances resolve their graph from. The API is internal and unstable upstream,
but its shape is persisted in clusters, so it is mirrored exactly.

As in `kro.api.v1alpha1`, the pydantic models parse untrusted input (a snapshot being
recompiled is re-validated); controllers use the TypedDict views on plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

from pydantic import Field, ValidationError

from kro.api.names import GRAPH_REVISION_API_VERSION, GRAPH_REVISION_KIND
from kro.api.v1alpha1 import (
    ConditionModel,
    InvalidObjectError,
    KubeModel,
    ObjectMeta,
    ResourceGraphDefinitionSpec,
    ResourceInformation,
    ResourceInformationView,
    RGDSpecView,
    causes_of,
)


class GraphRevisionSnapshot(KubeModel):
    """What was issued: the RGD's name (its identity for adoption), generation and spec (B-04)."""

    name: Annotated[str, Field(min_length=1)]
    generation: int = 0
    spec: ResourceGraphDefinitionSpec


class GraphRevisionSpec(KubeModel):
    """Immutable as a whole (`spec is immutable`, B-02); `revision` is ≥ 1 and monotonic."""

    revision: Annotated[int, Field(ge=1)]
    snapshot: GraphRevisionSnapshot


class GraphRevisionStatus(KubeModel):
    """Compile result; runtime states Pending/Active/Failed are never persisted (B-05)."""

    topological_order: list[str] | None = Field(default=None, alias="topologicalOrder")
    resources: list[ResourceInformation] | None = None
    conditions: list[ConditionModel] | None = None


class GraphRevision(KubeModel):
    """A whole GraphRevision object (cluster-scoped, B-01)."""

    api_version: Literal["internal.kro.run/v1alpha1"] = Field(
        default=GRAPH_REVISION_API_VERSION, alias="apiVersion"
    )
    kind: Literal["GraphRevision"] = GRAPH_REVISION_KIND
    metadata: ObjectMeta
    spec: GraphRevisionSpec
    status: GraphRevisionStatus | None = None


class SnapshotView(TypedDict, total=False):
    name: str
    generation: int
    spec: RGDSpecView


class GraphRevisionSpecView(TypedDict, total=False):
    revision: int
    snapshot: SnapshotView


class GraphRevisionStatusView(TypedDict, total=False):
    topologicalOrder: list[str]
    resources: list[ResourceInformationView]
    conditions: list[dict[str, Any]]


def parse_graph_revision(obj: Mapping[str, Any]) -> GraphRevision:
    """Validate a GraphRevision manifest like admission would; raise InvalidObjectError."""
    try:
        return GraphRevision.model_validate(obj)
    except ValidationError as error:
        metadata = obj.get("metadata")
        name = str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""
        raise InvalidObjectError(GRAPH_REVISION_KIND, name, causes_of(error)) from error
