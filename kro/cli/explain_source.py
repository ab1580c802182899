"""kro.cli.explain_source: find an instance's RGD and compile the graph kro runs for it.

kro runs an instance with the latest GraphRevision of its RGD (reference §1.N), not with the
RGD's current spec: an invalid RGD update never issues a revision, so the previous graph keeps
serving. Explain therefore prefers the latest GraphRevision's snapshot, and falls back to the
RGD's spec, saying so, when it cannot read revisions (the `view` role cannot). The graph is
compiled as the controller compiles it, with kinds from the cluster's OpenAPI (readable by
every authenticated user).

Which RGD: the instance's `kro.run/resource-graph-definition-name` label (kro's labeller puts it
there), else the generated CRD's label of the same name, else the RGD whose schema declares
the instance's group and kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kro.api.conditions import get_condition
from kro.api.names import (
    CONDITION_GRAPH_VERIFIED,
    GRAPH_REVISION_SNAPSHOT_NAME_FIELD,
    KRO_DOMAIN,
    LABEL_RGD_NAME,
    STATUS_FALSE,
)
from kro.api.objects import metadata as _meta
from kro.cli.explain_report import BuildFailure, GraphSource
from kro.controllers.crd import CRDS
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.rgd import RGDS
from kro.controllers.schemas import LiveSchemaResolver
from kro.graph.build_errors import BuildError
from kro.graph.builder import BuildOptions, build_graph_async
from kro.graph.errors import GraphError
from kro.graph.model import Graph
from kro.runtime.client import Client
from kro.runtime.discovery import ResourceInfo
from kro.runtime.errors import Forbidden, KubeError, NotFound

FROM_SPEC: Final = (
    "the graph is built from the ResourceGraphDefinition's spec, which is what kro runs unless "
    "an update of it was rejected (GraphAccepted=False)"
)


@dataclass(frozen=True, slots=True)
class LoadedGraph:
    """The graph kro runs (or why there is none) and what the reader should know about it.

    problem: something that by itself keeps instances from reconciling (a failed revision, a
    graph that does not compile); it becomes the root cause.
    """

    source: GraphSource | None = None
    graph: Graph | None = None
    problem: str = ""
    notes: tuple[str, ...] = ()


def forbidden_note(what: str, error: KubeError) -> str:
    return f"cannot read {what} with your permissions ({error})"


async def find_rgd_name(
    client: Client, instance: Mapping[str, Any], info: ResourceInfo
) -> tuple[str, list[str]]:
    """The RGD's name, and notes on lookups that were not allowed."""
    notes: list[str] = []
    label = str((_meta(instance).get("labels") or {}).get(LABEL_RGD_NAME) or "")
    if label:
        return label, notes
    crd_name = f"{info.gvr.resource}.{info.gvr.group}"
    try:
        crd = await client.get(CRDS, crd_name)
        label = str((_meta(crd).get("labels") or {}).get(LABEL_RGD_NAME) or "")
        if label:
            return label, notes
    except NotFound:
        pass
    except Forbidden as error:
        notes.append(forbidden_note(f"CustomResourceDefinition {crd_name}", error))
    try:
        page = await client.list(RGDS)
    except KubeError as error:
        notes.append(forbidden_note("ResourceGraphDefinitions", error))
        return "", notes
    for rgd in page.get("items") or []:
        schema = (rgd.get("spec") or {}).get("schema") or {}
        group = str(schema.get("group") or KRO_DOMAIN)
        if schema.get("kind") == info.gvk.kind and group == info.gvk.group:
            return str(_meta(rgd).get("name") or ""), notes
    return "", notes


async def read_revisions(
    client: Client, rgd_name: str
) -> tuple[tuple[Mapping[str, Any], ...], str]:
    """Live GraphRevisions of the RGD, newest first, or a note on why they are unknown."""
    try:
        page = await client.list(
            GRAPH_REVISIONS, field_selector=f"{GRAPH_REVISION_SNAPSHOT_NAME_FIELD}={rgd_name}"
        )
    except KubeError as error:
        return (), forbidden_note("GraphRevisions", error)
    items = [i for i in page.get("items") or [] if not _meta(i).get("deletionTimestamp")]
    items.sort(key=lambda i: int((i.get("spec") or {}).get("revision") or 0), reverse=True)
    return tuple(items), ""


async def compile_graph(
    client: Client, rgd_name: str, spec: Mapping[str, Any], *, accepted: bool = False
) -> Graph | BuildFailure:
    """Build like the controller does; a build error comes back with its location fields.

    accepted: the controller compiled this spec (a verified revision, an accepted RGD), so a
    kind not served yet may be deferred as it was (DeferredSchemaResolution); one the
    controller refused is built without, to show the error it gave. Targets compile as with the
    MultiCluster gate on, so they are explained where their nodes live; whether the
    controller's gate is on is the RGD's own condition to say."""
    resolver = LiveSchemaResolver(client)
    options = BuildOptions(deferred_schema_resolution=accepted, multi_cluster=True)
    try:
        return await build_graph_async(
            {"metadata": {"name": rgd_name}, "spec": spec}, resolver, options=options
        )
    except GraphError as error:
        return BuildFailure(
            message=str(error),
            resource_id=error.resource_id or "",
            field_path=error.field_path or "",
            expression=error.expression or "",
            rule=error.rule if isinstance(error, BuildError) else "",
        )


def revision_problem(revision: Mapping[str, Any]) -> str:
    """The GraphRevision did not compile (GraphVerified=False): instances stop (N-07)."""
    verified = get_condition(revision.get("status"), CONDITION_GRAPH_VERIFIED)
    if verified is not None and verified.get("status") == STATUS_FALSE:
        return f"the latest GraphRevision failed to compile: {verified.get('message')}"
    return ""


async def load_graph(client: Client, rgd_name: str) -> LoadedGraph:
    """The RGD, its revisions and the graph of the latest one (or of the RGD's spec)."""
    try:
        rgd = await client.get(RGDS, rgd_name)
    except NotFound:
        return LoadedGraph(problem=f'the ResourceGraphDefinition "{rgd_name}" does not exist')
    except KubeError as error:
        return LoadedGraph(notes=(forbidden_note(f"ResourceGraphDefinition {rgd_name}", error),))
    revisions, note = await read_revisions(client, rgd_name)
    notes = (f"{note}; {FROM_SPEC}",) if note else ()
    state = str((rgd.get("status") or {}).get("state") or "")
    latest = revisions[0] if revisions else None
    if latest is not None:
        spec = ((latest.get("spec") or {}).get("snapshot") or {}).get("spec") or {}
        number = int((latest.get("spec") or {}).get("revision") or 0)
        source = GraphSource(rgd_name, state, number, str(_meta(latest).get("name") or ""), True)
    else:
        spec = rgd.get("spec") or {}
        source = GraphSource(rgd_name, state)
    problem = revision_problem(latest) if latest is not None else ""
    built = await compile_graph(client, rgd_name, spec, accepted=latest is not None and not problem)
    if isinstance(built, BuildFailure):
        problem = problem or (
            f"the graph does not compile: {built.message} (see `kro explain rgd {rgd_name}`)"
        )
        return LoadedGraph(source, None, problem, notes)
    return LoadedGraph(source, built, problem, notes)
