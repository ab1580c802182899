"""kro.cli.explain_graph: `kro explain graph NAME` — why is this Graph not Ready, in one command.

A Graph (kro.run/v1alpha1, alpha) is its own program: explain compiles its nodes as the Graph
controller does (kro.graph.graph_kind) and runs the engine's pass over it, dry, as the caller
(`explain_dryrun`). Its conditions and `status.managedResources` (the record teardown works
from) are printed as recorded.

The controller applies as the Graph's ServiceAccount; explain reads as the caller, so a node
the caller may not read shows `unknown` rather than what the ServiceAccount would see.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kro.api.conditions import get_condition, is_condition_true
from kro.api.graph import (
    CONDITION_ACCEPTED,
    CONDITION_READY,
    CONDITION_RESOURCES_CONVERGED,
    REASON_APPLY_FAILED,
    REASON_DELETE_FAILED,
    REASON_FIELD_MANAGER_CONFLICT,
    service_account_username,
)
from kro.api.names import STATUS_FALSE, STATUS_TRUE
from kro.api.objects import metadata as _meta
from kro.cli.explain_cause import (
    condition_reports,
    describe_node,
    first_problem,
    generation_of,
    one_line,
    unreported,
)
from kro.cli.explain_cluster import survey
from kro.cli.explain_format import SecretMask
from kro.cli.explain_places import ClusterAccess
from kro.cli.explain_report import GraphReport, NodeReport
from kro.cli.explain_source import compile_graph, read_owner
from kro.controllers.graph.inventory import GRAPHS, entries_of
from kro.engine.results import object_id
from kro.graph.graph_kind import compile_graph_async
from kro.graph.model import Graph
from kro.runtime.client import Client

GRAPH_WORDS: Final = frozenset({"graph", "graphs", "graph.kro.run", "graphs.kro.run"})
_RECORDED: Final = re.compile(r'^node "(?P<id>[^"]+)": (?P<message>.*)$', re.DOTALL)


def recorded_apply_errors(graph_obj: Mapping[str, Any]) -> dict[str, str]:
    """The refusal the controller recorded for a node: `ResourcesConverged` False with
    `ApplyFailed` or `FieldManagerConflict`, message `node "x": ...`."""
    condition = get_condition(graph_obj.get("status"), CONDITION_RESOURCES_CONVERGED) or {}
    refused = condition.get("reason") in (REASON_APPLY_FAILED, REASON_FIELD_MANAGER_CONFLICT)
    found = _RECORDED.match(str(condition.get("message") or ""))
    if found and refused and condition.get("status") == STATUS_FALSE:
        return {found["id"]: found["message"]}
    return {}


def graph_root_cause(
    graph_obj: Mapping[str, Any], nodes: Sequence[NodeReport], compile_error: str
) -> str:
    """The first thing, in the order a user would fix them, that keeps the Graph from Ready."""
    status = graph_obj.get("status") or {}
    if _meta(graph_obj).get("deletionTimestamp"):
        converged = get_condition(status, CONDITION_RESOURCES_CONVERGED) or {}
        if converged.get("reason") == REASON_DELETE_FAILED:
            return f"teardown failed: {converged.get('message')}"
        held = ", ".join(str(f) for f in _meta(graph_obj).get("finalizers") or ()) or "none"
        return (
            f"the Graph is being deleted: kro deletes the {len(entries_of(graph_obj))} objects "
            f"recorded in status.managedResources, then removes its finalizer (finalizers: {held})"
        )
    accepted = get_condition(status, CONDITION_ACCEPTED) or {}
    if accepted.get("status") == STATUS_FALSE:
        return f"the Graph is not accepted ({accepted.get('reason')}): {accepted.get('message')}"
    if compile_error:
        return f"the Graph does not compile: {compile_error}"
    node = first_problem(nodes)
    return describe_node(node) if node is not None else _status_cause(graph_obj)


def _status_cause(graph_obj: Mapping[str, Any]) -> str:
    """Every node checks out: what kro itself last reported."""
    hint = "is the kro controller running with the GraphKind feature gate?"
    if late := unreported(graph_obj, "Graph", hint):
        return late
    ready = get_condition(graph_obj.get("status"), CONDITION_READY) or {}
    if ready.get("status") == STATUS_TRUE:
        return "no problem found: the Graph is Ready and every node is applied and ready"
    reported = f"Ready={ready.get('status')} ({ready.get('reason')})"
    return f"kro reports {reported}: {ready.get('message')}"


async def _compile(client: Client, graph_obj: Mapping[str, Any]) -> Graph | str:
    """Compile as the controller did (explain_source.compile_graph says how)."""
    accepted = is_condition_true(graph_obj.get("status"), CONDITION_ACCEPTED)
    built = await compile_graph(client, graph_obj, accepted=accepted, build=compile_graph_async)
    return built if isinstance(built, Graph) else one_line(built.message)


async def explain_graph(
    client: Client,
    name: str,
    namespace: str,
    mask: SecretMask,
    access: ClusterAccess | None = None,
) -> GraphReport:
    """Everything `kro explain graph NAME` prints; raises ExplainError when it cannot."""
    hint = " (is the graphs.kro.run CRD installed?)"
    obj = await read_owner(client, GRAPHS, "Graph", name, namespace, hint=hint)
    deleting = bool(_meta(obj).get("deletionTimestamp"))
    compiled = None if deleting else await _compile(client, obj)
    compile_error = compiled if isinstance(compiled, str) else ""
    graph = compiled if isinstance(compiled, Graph) else None
    recorded = recorded_apply_errors(obj)
    found = await survey(client, obj, GRAPHS, mask, graph=graph, recorded=recorded, access=access)
    notes = found.notes
    if any(n.status.value == "unknown" for n in found.nodes):
        notes += (
            "explain reads as you; kro applies as the Graph's ServiceAccount, which may be "
            "allowed what you are not",
        )
    ident = object_id(obj)
    account = str((obj.get("spec") or {}).get("serviceAccountName") or "")
    return GraphReport(
        root_cause=one_line(graph_root_cause(obj, found.nodes, compile_error)),
        namespace=ident.namespace,
        name=ident.name,
        generation=generation_of(obj),
        service_account=service_account_username(namespace, account),
        applied_service_account=str((obj.get("status") or {}).get("appliedServiceAccount") or ""),
        deleting=deleting,
        compile_error=compile_error,
        nodes=found.nodes,
        would_write=found.would_write,
        managed_resources=tuple(entries_of(obj)),
        conditions=condition_reports(obj),
        events=found.events,
        notes=notes,
    )
