"""kro.cli.explain_format: print an explanation as text (for people) or JSON/YAML (for tools).

Text puts the root cause on the first line, because that is the line a person reads (and the
line a CI log shows); then the instance and where its graph came from, the graph one node per
row with its state and, indented under it, why. JSON and YAML carry the same findings, with
the camelCase keys kubectl users expect.

Every string goes through `SecretMask` on its way out: explain prints no object bodies, but a
message can quote a value (an expression error over a Secret's data), so every Secret explain
reads leaves its values in the mask, as stored and decoded. Values shorter than
`MIN_MASKED_LENGTH` are not: masking every "1" would destroy the output and protect nothing.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, Final

from kro.cli.explain_report import (
    ConditionReport,
    DeletionReport,
    EventReport,
    GraphReport,
    GraphSource,
    InstanceReport,
    NodeReport,
    RGDReport,
    ShardReport,
    held_label,
)
from kro.cli.output import MACHINE_FORMATS, dump
from kro.runtime.redact import REDACTED, scrub

OUTPUT_FORMATS: Final = ("text", *MACHINE_FORMATS)
_VALUE_TYPES: Final = frozenset({"Value", "ValueCollection"})  # a Graph's def nodes
_INDENT: Final = "  "
_SHARD_INDENT: Final = " " * len("Shard:     ")
_CLUSTER_SCOPED: Final = "cluster-scoped instances (the empty namespace)"
_NO_UID: Final = "no uid yet: deleted only if it carries the Graph's field manager"
MIN_MASKED_LENGTH: Final = 3


class SecretMask:
    """Collects Secret values while the cluster is read; `apply` masks them in output."""

    def __init__(self) -> None:
        self._values: set[str] = set()

    def add(self, obj: Mapping[str, Any]) -> None:
        """Remember the values of `obj` if it is a Secret (anything else is ignored)."""
        if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1":
            return
        for key in ("data", "stringData"):
            values = obj.get(key)
            for value in values.values() if isinstance(values, Mapping) else ():
                decoded = _decoded(str(value)) if key == "data" else ""
                self._values |= {v for v in (str(value), decoded) if len(v) >= MIN_MASKED_LENGTH}

    def apply(self, text: str) -> str:
        """`text` without any remembered Secret value and without credentials."""
        for value in sorted(self._values, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        return scrub(text)


def _decoded(value: str) -> str:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""


def render(report: InstanceReport | RGDReport | GraphReport, output: str, mask: SecretMask) -> str:
    """The report in `output` format (one of OUTPUT_FORMATS), Secret values masked."""
    if output in MACHINE_FORMATS:
        explanation = {InstanceReport: "instance", GraphReport: "graph"}.get(type(report))
        data = {"explanation": explanation or "resourcegraphdefinition", **asdict(report)}
        return dump(_data(data, mask), output)
    if isinstance(report, InstanceReport):
        return mask.apply(render_instance(report))
    if isinstance(report, GraphReport):
        return mask.apply(render_graph(report))
    return mask.apply(render_rgd(report))


def _data(value: Any, mask: SecretMask) -> Any:
    """JSON-ready: camelCase keys, enums as their values, every string masked."""
    if isinstance(value, dict):
        return {_camel(k): _data(v, mask) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_data(v, mask) for v in value]
    return mask.apply(str(value)) if isinstance(value, str) else value


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _page(report: InstanceReport | RGDReport | GraphReport, body: list[str]) -> str:
    """The root cause first, the report's own sections, then what every report ends with."""
    lines = [f"Root cause: {report.root_cause}", "", *body, *_conditions(report.conditions)]
    if not isinstance(report, RGDReport):
        lines += _section("Warning events", [_event(e) for e in report.events])
    notes = [f"- {_hang(n, _INDENT * 2)}" for n in report.notes]
    return "\n".join([*lines, *_section("Notes", notes)]) + "\n"


def _section(title: str, items: Sequence[str]) -> list[str]:
    """A titled block, one indented line per item; nothing without items."""
    return ["", f"{title}:", *[f"{_INDENT}{item}" for item in items]] if items else []


def _generation(generation: int | None) -> str:
    return f", generation {generation}" if generation is not None else ""


def _dry_pass(report: InstanceReport | GraphReport, title: str = "") -> list[str]:
    """The node table, then what kro's next pass would write."""
    lines = ["", *_nodes(report.nodes, title)] if report.nodes else []
    return lines + _section("kro's next pass would write", report.would_write)


# --- instances -----------------------------------------------------------------------------


def _hang(text: str, indent: str) -> str:
    """Continuation lines of a multi-line message (a CEL error's caret excerpt) indented under
    its first line, so they do not read as entries of their own."""
    return text.replace("\n", "\n" + indent)


def render_instance(report: InstanceReport) -> str:
    where = f"{report.namespace}/{report.name}" if report.namespace else report.name
    lines = [
        f"Instance:  {report.kind} {where} ({report.api_version}): state "
        f"{report.state or 'none'}{_generation(report.generation)}",
    ]
    if report.source is not None:
        lines.append(f"Graph:     {_source(report.source)}")
    for shard in report.shards:
        lines += _shard(shard)
    if report.deletion is not None:
        lines += _deletion(report.deletion)
    return _page(report, lines + _dry_pass(report))


def _source(source: GraphSource) -> str:
    state = f" ({source.rgd_state})" if source.rgd_state else ""
    rgd = f"ResourceGraphDefinition {source.rgd}{state}"
    if source.from_revision:
        return f"{rgd}, GraphRevision {source.revision_name} (revision {source.revision})"
    return f"{rgd}, built from its spec (GraphRevisions not read)"


def _shard(shard: ShardReport) -> list[str]:
    where = f'namespace "{shard.namespace}"' if shard.namespace else _CLUSTER_SCOPED
    group = f'shard group "{shard.group}" in namespace {shard.lease_namespace}'
    if not shard.owner_lease:
        return [
            f"Shard:     no live replica owns {where}: every member Lease of {group} has "
            f"expired ({', '.join(shard.expired)})"
        ]
    lines = [
        f"Shard:     replica {shard.owner} owns {where} (hash {shard.namespace_hash} in "
        f"{shard.owner_range}; member Lease {shard.owner_lease}, one of {len(shard.members)} "
        f"live in {group})"
    ]
    if shard.handover:
        lines.append(
            f"{_SHARD_INDENT}handover in progress: not every live replica has acknowledged "
            "this membership yet, and the owner takes its range only once all have"
        )
    return lines


def _nodes(nodes: Sequence[NodeReport], title: str = "") -> list[str]:
    """The node table; a CLUSTER column (M-07) only for a graph with targets, whose nodes
    name their clusters (a graph without one prints as it always did)."""
    placed = any(n.clusters for n in nodes)
    rows = [
        (
            n.id,
            str(n.wave),
            _objects(n),
            *((", ".join(n.clusters) or "-",) if placed else ()),
            n.status.value,
            ", ".join(n.dependencies) or "-",
        )
        for n in nodes
    ]
    header = ("NODE", "WAVE", "OBJECT", *(("CLUSTER",) if placed else ()), "STATE", "NEEDS")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        title or "Resources (topological order; WAVE is the deletion wave, highest deleted first):",
        _INDENT + _row(header, widths),
    ]
    for node, row in zip(nodes, rows, strict=True):
        lines.append(_INDENT + _row(row, widths))
        detail = ": ".join(p for p in (node.reason, node.message) if p)
        if detail:
            lines.append(_INDENT * 3 + _hang(detail, _INDENT * 4))
    return lines


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()


def _objects(node: NodeReport) -> str:
    if node.type in _VALUE_TYPES:
        return "(def: a value, nothing applied)"
    if not node.objects:
        return f"{node.kind} (not rendered)"
    if len(node.objects) == 1:
        return str(node.objects[0])
    return f"{len(node.objects)} x {node.kind}"


def _deletion(deletion: DeletionReport) -> list[str]:
    wave = "none (no child left)" if deletion.wave is None else str(deletion.wave)
    items = [f"wave in progress: {wave}"]
    if deletion.blockers:
        items += [
            "blocked by:",
            *(f"{_INDENT}- {_hang(b, _INDENT * 3)}" for b in deletion.blockers),
        ]
    items += ["children left:"] if deletion.members else []
    for member in deletion.members:
        state = "terminating" if member.terminating else "not deleted yet"
        if member.finalizers:
            state += f", finalizers: {', '.join(member.finalizers)}"
        items.append(f"{_INDENT}wave {member.wave}: {held_label(member)}: {state}")
    items.append(f"instance finalizers: {', '.join(deletion.instance_finalizers) or 'none'}")
    return _section("Deletion (kro deletes children in reverse apply-order waves)", items)


def _conditions(conditions: Sequence[ConditionReport]) -> list[str]:
    width = max((len(c.type) for c in conditions), default=0)
    rows = []
    for c in conditions:
        text = f"{c.type.ljust(width)}  {c.status.ljust(7)} {c.reason}"
        rows.append((f"{text}: {_hang(c.message, _INDENT * 2)}" if c.message else text).rstrip())
    return _section("Conditions", rows)


def _event(event: EventReport) -> str:
    repeated = f" (x{event.count})" if event.count > 1 else ""
    return f"{event.object}: {event.reason}: {event.message}{repeated}"


# --- Graphs --------------------------------------------------------------------------------

GRAPH_NODES_TITLE: Final = (
    "Nodes (topological order; WAVE is internal.kro.run/apply-order; teardown deletes the "
    "recorded objects in reverse order):"
)
MANAGED_TITLE: Final = "Managed resources (status.managedResources)"


def render_graph(report: GraphReport) -> str:
    applied = report.applied_service_account
    last = f" (last applied as {applied})" if applied not in ("", report.service_account) else ""
    lines = [
        f"Graph:      {report.namespace}/{report.name} (kro.run/v1alpha1)"
        f"{_generation(report.generation)}",
        f"Applies as: {report.service_account}{last}",
    ]
    if report.deleting:
        lines.append("Deleting: teardown works from status.managedResources, not the spec")
    if report.compile_error:
        lines += _section("Compile error", [_hang(report.compile_error, _INDENT * 2)])
    managed = []
    for entry in report.managed_resources:
        where = f"{entry.namespace}/{entry.name}" if entry.namespace else entry.name
        uid = f"uid {entry.uid}" if entry.uid else _NO_UID
        cluster = f", in cluster {entry.cluster}" if entry.cluster else ""  # M-07
        managed.append(
            f"{entry.node_id}: {entry.kind} {where} ({entry.api_version}, {uid}{cluster})"
        )
    lines += _dry_pass(report, GRAPH_NODES_TITLE)
    return _page(report, lines + _section(MANAGED_TITLE, managed or ["(none)"]))


# --- RGDs ----------------------------------------------------------------------------------


def render_rgd(report: RGDReport) -> str:
    lines = [
        f"ResourceGraphDefinition: {report.name} (kind {report.kind or '?'}): state "
        f"{report.state or 'none'}{_generation(report.generation)}",
    ]
    if report.deleting:
        lines.append(f"Deleting; finalizers: {', '.join(report.finalizers) or 'none'}")
    if report.build is not None:
        build = report.build
        labels = ("resource", "field", "expression", "rule")
        values = (build.resource_id, build.field_path, build.expression, build.rule)
        details = [build.message, *(f"{k}: {v}" for k, v in zip(labels, values, strict=True) if v)]
        lines += _section("Build error", [_hang(d, _INDENT * 2) for d in details])
    graph = []
    for node in report.graph:
        needs = f" <- {', '.join(node.dependencies)}" if node.dependencies else ""
        conditional = " (includeWhen)" if node.conditional else ""
        graph.append(f"{node.id}: {node.kind}, wave {node.wave}{conditional}{needs}")
    lines += _section("Graph (topological order)", graph)
    return _page(report, lines + _section("GraphRevisions (newest first)", report.revisions))
