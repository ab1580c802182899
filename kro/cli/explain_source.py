"""kro.cli.explain_source: the object explain starts from, the RGD behind it and its graph.

kro runs an instance with the latest GraphRevision of its RGD (reference §1.N), not with the
RGD's current spec: an invalid RGD update never issues a revision, so the previous graph keeps
serving. Explain therefore prefers the latest GraphRevision's snapshot, and falls back to the
RGD's spec, saying so, when it cannot read revisions (the `view` role cannot). The graph is
compiled as the controller compiles it, with kinds from the cluster's OpenAPI.

`kro explain rgd NAME`: an RGD is Active when its graph is accepted, its CRD is ready and its
instance controller runs (reference §1.M, P-08). Its conditions say which failed, in prose;
explain compiles the spec again, so a build error comes back with its location.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kro.api.conditions import get_condition, is_condition_true
from kro.api.names import (
    CONDITION_CONTROLLER_READY,
    CONDITION_GRAPH_ACCEPTED,
    CONDITION_GRAPH_REVISIONS_RESOLVED,
    CONDITION_GRAPH_VERIFIED,
    CONDITION_KIND_READY,
    CONDITION_READY,
    GRAPH_REVISION_SNAPSHOT_NAME_FIELD,
    KRO_DOMAIN,
    LABEL_RGD_NAME,
    RGD_STATE_ACTIVE,
    STATUS_FALSE,
    STATUS_TRUE,
)
from kro.api.objects import metadata as _meta
from kro.cli.explain_cause import condition_reports, generation_of, one_line
from kro.cli.explain_report import BuildFailure, GraphNode, GraphSource, RGDReport
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
from kro.runtime.gvk import GVR

FROM_SPEC: Final = (
    "the graph is built from the ResourceGraphDefinition's spec, which is what kro runs unless "
    "an update of it was rejected (GraphAccepted=False)"
)
_ORDER: Final = (
    (CONDITION_GRAPH_ACCEPTED, "the graph is not accepted"),
    (CONDITION_GRAPH_REVISIONS_RESOLVED, "no graph revision serves it"),
    (CONDITION_KIND_READY, "its CRD is not ready"),
    (CONDITION_CONTROLLER_READY, "its instance controller does not run"),
    (CONDITION_READY, "it is not ready"),
)


class ExplainError(Exception):
    """Explain cannot say anything useful: the kind is unknown, the object does not exist or
    cannot be read. The message says which and what to try."""


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


async def read_owner(
    client: Client, gvr: GVR, kind: str, name: str, namespace: str | None, *, hint: str = ""
) -> dict[str, Any]:
    """The object to explain (an instance, a Graph, an RGD); ExplainError if unreadable."""
    where = f' in namespace "{namespace}"' if namespace else ""
    try:
        return await client.get(gvr, name, namespace=namespace)
    except NotFound:
        raise ExplainError(f'{kind} "{name}" not found{where}{hint}') from None
    except Forbidden as error:
        raise ExplainError(f'cannot read {kind} "{name}"{where}: {error.message}') from None


def forbidden_note(what: str, error: KubeError) -> str:
    return f"cannot read {what} with your permissions ({error})"


async def find_rgd_name(
    client: Client, instance: Mapping[str, Any], info: ResourceInfo
) -> tuple[str, list[str]]:
    """The RGD's name, and notes on lookups that were not allowed: the instance's label (kro's
    labeller puts it there), else its CRD's, else the RGD whose schema declares its kind."""
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
    client: Client,
    obj: Mapping[str, Any],
    *,
    accepted: bool,
    build: Callable[..., Awaitable[Graph]] = build_graph_async,
) -> Graph | BuildFailure:
    """Build an RGD (or, with `build`, a Graph) like the controller does; a build error comes
    back with its location fields. accepted: the controller compiled this spec, so a kind not
    served yet may be deferred as it was (DeferredSchemaResolution); one it refused is built
    without, to show its error. Targets compile as with the MultiCluster gate on, so they are
    explained where their nodes live; whether the gate is on is the owner's condition to say."""
    options = BuildOptions(deferred_schema_resolution=accepted, multi_cluster=True)
    try:
        return await build(obj, LiveSchemaResolver(client), options=options)
    except GraphError as error:
        return BuildFailure(
            message=str(error),
            resource_id=error.resource_id or "",
            field_path=error.field_path or "",
            expression=error.expression or "",
            rule=error.rule if isinstance(error, BuildError) else "",
        )


def revision_problem(revisions: Sequence[Mapping[str, Any]]) -> str:
    """The latest GraphRevision did not compile (GraphVerified=False): instances stop (N-07)."""
    latest = revisions[0].get("status") if revisions else None
    verified = get_condition(latest, CONDITION_GRAPH_VERIFIED) or {}
    if verified.get("status") == STATUS_FALSE:
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
    spec = rgd.get("spec") or {}
    source = GraphSource(rgd_name, state)
    if revisions:
        latest = revisions[0].get("spec") or {}
        spec = (latest.get("snapshot") or {}).get("spec") or {}
        name = str(_meta(revisions[0]).get("name") or "")
        source = GraphSource(rgd_name, state, int(latest.get("revision") or 0), name, True)
    problem = revision_problem(revisions)
    document = {"metadata": {"name": rgd_name}, "spec": spec}
    built = await compile_graph(client, document, accepted=bool(revisions) and not problem)
    if isinstance(built, Graph):
        return LoadedGraph(source, built, problem, notes)
    failed = f"the graph does not compile: {built.message} (see `kro explain rgd {rgd_name}`)"
    return LoadedGraph(source, None, problem or failed, notes)


def graph_nodes(graph: Graph) -> tuple[GraphNode, ...]:
    return tuple(
        GraphNode(
            id=node.id,
            api_version=node.gvk.api_version,
            kind=node.gvk.kind,
            wave=node.apply_order,
            dependencies=node.dependencies,
            conditional=bool(node.include_when),
        )
        for node in (graph.node(n) for n in graph.topological_order)
    )


def revision_lines(revisions: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    verified = [get_condition(r.get("status"), CONDITION_GRAPH_VERIFIED) or {} for r in revisions]
    return tuple(
        f"{_meta(r).get('name')}: GraphVerified={v.get('status', 'Unknown')}"
        + (f" ({v.get('message')})" if v.get("message") else "")
        for r, v in zip(revisions, verified, strict=True)
    )


def rgd_root_cause(rgd: Mapping[str, Any], build: BuildFailure | None, revision_issue: str) -> str:
    """The first thing that keeps the RGD from serving instances (see the module)."""
    metadata = _meta(rgd)
    status = rgd.get("status") or {}
    if metadata.get("deletionTimestamp"):
        held = ", ".join(str(f) for f in metadata.get("finalizers") or ()) or "none"
        return f"the ResourceGraphDefinition is being deleted (finalizers: {held})"
    if build is not None:
        where = f' (resource "{build.resource_id}")' if build.resource_id else ""
        return f"the graph does not compile{where}: {build.message}"
    for kind, what in _ORDER:
        condition = get_condition(status, kind)
        if condition is not None and condition.get("status") != STATUS_TRUE:
            detail = condition.get("message") or condition.get("reason") or condition["status"]
            if kind == CONDITION_GRAPH_REVISIONS_RESOLVED and revision_issue:
                detail = revision_issue
            return f"{what}: {detail}"
    state = str(status.get("state") or "")
    if state == RGD_STATE_ACTIVE:
        return "no problem found: the ResourceGraphDefinition is Active"
    return f"kro has not reported on this ResourceGraphDefinition yet (state {state or 'none'})"


async def explain_rgd(client: Client, name: str) -> RGDReport:
    rgd = await read_owner(client, RGDS, "ResourceGraphDefinition", name, None)
    revisions, note = await read_revisions(client, name)
    notes = [note] if note else []
    status = rgd.get("status") or {}
    state = str(status.get("state") or "")
    accepted = is_condition_true(status, CONDITION_GRAPH_ACCEPTED)
    document = {"metadata": {"name": name}, "spec": rgd.get("spec") or {}}
    built = await compile_graph(client, document, accepted=accepted)
    build = built if isinstance(built, BuildFailure) else None
    if build is not None and state == RGD_STATE_ACTIVE:
        notes.append(
            "the spec does not compile now, but kro accepted it earlier (a kind it uses may "
            f"have changed since): {build.message}"
        )
        build = None
    schema = (rgd.get("spec") or {}).get("schema") or {}
    return RGDReport(
        root_cause=one_line(rgd_root_cause(rgd, build, revision_problem(revisions))),
        name=name,
        state=state,
        generation=generation_of(rgd),
        kind=str(schema.get("kind") or ""),
        deleting=bool(_meta(rgd).get("deletionTimestamp")),
        finalizers=tuple(str(f) for f in _meta(rgd).get("finalizers") or ()),
        conditions=condition_reports(rgd),
        build=build,
        revisions=revision_lines(revisions),
        graph=graph_nodes(built) if not isinstance(built, BuildFailure) else (),
        notes=tuple(notes),
    )
