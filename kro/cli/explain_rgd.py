"""kro.cli.explain_rgd: `kro explain rgd NAME` — why a ResourceGraphDefinition is not Active.

An RGD is Active when its graph is accepted, its CRD is ready and its instance controller runs
(reference §1.M, P-08). The RGD's conditions say which of these failed, in prose; explain adds
the structure: it compiles the spec again with the cluster's schemas, the same build the
controller runs, so a build error comes back with its resource id, field path, expression and
reference rule. GraphRevisions are shown when readable (the latest one's compile result is what
instances run with). For an Active RGD it prints the graph: resources, waves and edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kro.api.conditions import get_condition, is_condition_true
from kro.api.names import (
    CONDITION_CONTROLLER_READY,
    CONDITION_GRAPH_ACCEPTED,
    CONDITION_GRAPH_REVISIONS_RESOLVED,
    CONDITION_GRAPH_VERIFIED,
    CONDITION_KIND_READY,
    CONDITION_READY,
    RGD_STATE_ACTIVE,
    STATUS_TRUE,
)
from kro.api.objects import metadata as _meta
from kro.cli.explain_cause import condition_reports, one_line
from kro.cli.explain_cluster import generation_of, read_owner
from kro.cli.explain_report import BuildFailure, GraphNode, RGDReport
from kro.cli.explain_source import compile_graph, read_revisions, revision_problem
from kro.controllers.rgd import RGDS
from kro.graph.model import Graph
from kro.runtime.client import Client

_ORDER: Final = (
    (CONDITION_GRAPH_ACCEPTED, "the graph is not accepted"),
    (CONDITION_GRAPH_REVISIONS_RESOLVED, "no graph revision serves it"),
    (CONDITION_KIND_READY, "its CRD is not ready"),
    (CONDITION_CONTROLLER_READY, "its instance controller does not run"),
    (CONDITION_READY, "it is not ready"),
)


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
    built = await compile_graph(client, name, rgd.get("spec") or {}, accepted=accepted)
    build = built if isinstance(built, BuildFailure) else None
    if build is not None and state == RGD_STATE_ACTIVE:
        notes.append(
            "the spec does not compile now, but kro accepted it earlier (a kind it uses may "
            f"have changed since): {build.message}"
        )
        build = None
    schema = (rgd.get("spec") or {}).get("schema") or {}
    return RGDReport(
        root_cause=one_line(
            rgd_root_cause(rgd, build, revision_problem(revisions[0]) if revisions else "")
        ),
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
