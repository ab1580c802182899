"""kro.cli.render: `kro render`: what an instance would produce, without a cluster.

Prints, in apply order, the YAML of every resource the instance renders to (instance defaults
applied, includeWhen evaluated, forEach expanded), and for every node that cannot render yet a
comment saying why: the data it waits for, or the condition that skipped it. `--observed`
supplies live objects (e.g. a Deployment with `status.availableReplicas`) so a user can step
through readiness exactly as the controller would; without it, a rendered object counts as
applied but without status, and external references count as missing.

A node whose expression fails at run time (a division by zero, a value over kro's size limits)
is shown with the one-line message the controller would put in the instance's ResourcesReady
condition, and the command exits 1; the nodes that do not depend on it still render, so one
bad expression does not hide the rest of the output.

Before anything renders, the RGDs go through the same checks as `kro validate` (`rgds`) and
each instance through the API server's checks for the generated CRD (`instance_check`): an
instance `kubectl apply` would refuse is refused here, with every field path, exit 1.
Several RGDs may be given (`-f DIR`); each instance renders with the RGD of its kind.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TextIO

from kro.cli import output
from kro.cli.inputs import InputError

if TYPE_CHECKING:
    from kro.cli.inputs import Document
    from kro.graph.evaluate import InstanceEvaluation
    from kro.graph.model import Graph, Node

EXIT_INVALID: Final = 1
EXIT_USAGE: Final = 2
SKIPPED: Final = "includeWhen is false or a dependency was skipped"
FAILED_PREFIX: Final = "resource reconciliation failed: "
"""What the controller puts before an evaluation error in the ResourcesReady condition."""

RENDER_HELP: Final = """\
Print the resources an instance of a ResourceGraphDefinition would produce, in apply order,
without a cluster. The instance is first checked as the API server would check it against
the generated CRD (kind, required fields, types, enums, bounds, patterns, CEL rules; defaults
applied). Nodes that cannot render yet say what they wait for; --observed supplies live
objects (with their status) to step through readiness as the controller would.

Exit status: 0 rendered, 1 invalid RGD or instance, or an expression that fails for this
instance (the other resources are still printed), 2 usage error.

examples:
  kro render -f rgd.yaml -i instance.yaml
  kro render -f rgds/ -R -i instance.yaml --observed deployment.yaml -o json
"""


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    """What one node of the graph does for this instance."""

    id: str
    apply_order: int
    state: str  # rendered | external | value | patch | waiting | skipped | error
    reason: str = ""
    objects: tuple[dict[str, Any], ...] = ()
    ready: bool = False
    not_ready_reason: str = ""
    value: Any = None
    """A Graph's `def` (state `value`): what it computes; nothing is applied for it."""
    contributes: bool = False
    """A Graph's `patch`: `objects` are the fields it contributes to objects it does not own."""


@dataclass(frozen=True, slots=True)
class Rendering:
    """An instance's whole rendering: its nodes in apply order and its status projection."""

    instance: dict[str, Any]
    nodes: list[NodeOutcome] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    graph: bool = False
    """The owner is a Graph (kro.run/v1alpha1): no instance, no status fields."""

    def errors(self) -> list[str]:
        """One line per failed node: `SOURCE: Kind "name": resource reconciliation failed: ...`
        (for a Graph, `SOURCE: Graph "name": node "x": ...`, as its ResourcesConverged says)."""
        metadata = self.instance.get("metadata") or {}
        what = f'{self.instance.get("kind")} "{metadata.get("name", "")}"'
        prefix = f"{self.source}: " if self.source else ""
        return [f"{prefix}{what}: {n.reason}" for n in self.nodes if n.state == "error"]


def add_render_command(commands: Any) -> None:
    render_parser = commands.add_parser(
        "render",
        help="print the resources an instance would produce (offline)",
        description=RENDER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from kro.cli.offline import add_input_flags

    add_input_flags(render_parser)
    render_parser.add_argument(
        "-i",
        "--instance",
        action="append",
        default=[],
        metavar="PATH",
        help="instance YAML file, directory, or - for standard input (repeatable); required "
        "for RGDs (a Graph renders itself)",
    )
    render_parser.add_argument(
        "--observed",
        action="append",
        default=[],
        metavar="PATH",
        help="YAML of live objects, with status, as the cluster would show them (repeatable)",
    )
    formats = output.add_output_flag(render_parser)
    render_parser.set_defaults(handler=_handler, output_formats=formats)


def _usage(message: str) -> int:
    print(f"kro render: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _handler(args: argparse.Namespace) -> int:
    if args.output not in args.output_formats:
        print(output.unsupported(args.output), file=sys.stderr)
        return EXIT_USAGE
    renderings = _renderings(args)
    if isinstance(renderings, int):
        return renderings
    if output.is_machine(args.output):
        data: dict[str, Any] = {"instances": [rendering_data(r) for r in renderings if not r.graph]}
        if any(r.graph for r in renderings):
            data["graphs"] = [rendering_data(r) for r in renderings if r.graph]
        sys.stdout.write(output.dump(data, args.output))
    else:
        for rendering in renderings:
            write_text(rendering, sys.stdout)
    errors = [line for rendering in renderings for line in rendering.errors()]
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_INVALID if errors else 0


def _renderings(args: argparse.Namespace) -> list[Rendering] | int:
    """Every Graph of `-f`, then every instance of `-i`, rendered; or the exit code after
    saying why nothing can be."""
    try:
        if sum("-" in paths for paths in (args.files, args.instance, args.observed)) > 1:
            raise InputError("standard input (-) can be read only once")
        built = _graphs(args)
        if built is None:
            return EXIT_INVALID
        graphs, object_meta, owners = built
        if not owners and not args.instance:
            return _usage("the following arguments are required: -i/--instance")
        instances = _read(args.instance, args.recursive)
        observed = _observed(_read(args.observed, args.recursive))
        if args.instance and not instances:
            raise InputError(f"no instance found in {', '.join(args.instance)}")
        renderings = [
            render_instance(graph, document.body, observed, source=document.source)
            for graph, document in owners
        ]
        if instances:
            rendered = _render_all(graphs, instances, observed, object_meta)
            if rendered is None:
                return EXIT_INVALID
            renderings += rendered
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    return renderings


def _read(paths: Sequence[str], recursive: bool) -> list[Document]:
    from kro.cli.inputs import expand_sources, read_documents

    return read_documents(expand_sources(paths, recursive=recursive)) if paths else []


def _observed(documents: Sequence[Document]) -> list[dict[str, Any]]:
    """The `--observed` objects. Each is matched to a rendered one by identity, so it must
    look like what the API server returns: apiVersion and kind strings, and metadata (if
    given) an object whose name is a string."""
    for document in documents:
        body = document.body
        metadata = body.get("metadata", {})
        if not all(isinstance(body.get(key), str) for key in ("apiVersion", "kind")):
            problem = "apiVersion and kind must be strings"
        elif not isinstance(metadata, Mapping):
            problem = "metadata must be an object"
        elif not isinstance(metadata.get("name", ""), str):
            problem = "metadata.name must be a string"
        else:
            continue
        raise InputError(f"{document.source}: an observed object is invalid: {problem}")
    return [d.body for d in documents]


def _graphs(
    args: argparse.Namespace,
) -> tuple[list[Graph], Mapping[str, Any] | None, list[tuple[Graph, Document]]] | None:
    """Every RGD of `-f`, built, ObjectMeta's schema, and every Graph of `-f` compiled (with
    its document: a Graph renders itself); None (after saying why) if any is invalid."""
    from kro.api.graph import GRAPH_KIND
    from kro.cli.offline import Prefixes, build_all, build_options, load_inputs
    from kro.cli.strict import object_meta_schema

    inputs = load_inputs(args, graphs=True)
    results = build_all(inputs, build_options(args))
    if any(r.graph is None for r in results):
        prefix = Prefixes(results, inputs.files)
        for result in results:
            for problem in result.errors:
                print(f"{prefix(result)}invalid {result.kind}: {problem}", file=sys.stderr)
        return None
    graphs = [r.graph for r in results if r.graph is not None and r.kind != GRAPH_KIND]
    compiled = [r.graph for r in results if r.graph is not None and r.kind == GRAPH_KIND]
    owners = list(zip(compiled, inputs.graphs, strict=True))
    return graphs, object_meta_schema(inputs.resolver), owners


def _render_all(
    graphs: Sequence[Graph],
    instances: Sequence[Document],
    observed: Sequence[Mapping[str, Any]],
    object_meta: Mapping[str, Any] | None,
) -> list[Rendering] | None:
    """Check every instance, then render them all; None (after printing why) if any fails."""
    from kro.cli.instance_check import WrongKindError, check_instance

    checked: list[tuple[Graph, dict[str, Any]]] = []
    failed = False
    for document in instances:
        try:
            graph = _graph_for(graphs, document.body)
        except WrongKindError as error:
            print(f"error: {document.source}: {error}", file=sys.stderr)
            failed = True
            continue
        result = check_instance(graph, document.body, object_meta)
        what = f'{graph.instance.kind} "{_name(document.body)}" is invalid'
        for problem in result.errors:
            print(f"{document.source}: {what}: {problem}", file=sys.stderr)
        failed = failed or bool(result.errors)
        checked.append((graph, result.instance))
    if failed:
        return None
    return [
        render_instance(graph, instance, observed, source=document.source)
        for (graph, instance), document in zip(checked, instances, strict=True)
    ]


def _graph_for(graphs: Sequence[Graph], obj: Mapping[str, Any]) -> Graph:
    from kro.cli.instance_check import WrongKindError, check_kind, expected_kind

    if len(graphs) == 1:
        check_kind(graphs[0], obj)
        return graphs[0]
    for graph in graphs:
        if (obj.get("apiVersion"), obj.get("kind")) == (
            graph.instance.api_version,
            graph.instance.kind,
        ):
            return graph
    expected = ", ".join(expected_kind(g) for g in graphs)
    got = f"kind {obj.get('kind')} (apiVersion {obj.get('apiVersion')})"
    raise WrongKindError(f"expected an instance of one of: {expected}; got {got}")


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""


def render_instance(
    graph: Graph,
    instance: Mapping[str, Any],
    observed: Sequence[Mapping[str, Any]],
    *,
    source: str = "",
) -> Rendering:
    """Evaluate the graph for a checked, defaulted instance (the namespace defaults too), or
    a Graph's program for the Graph object itself."""
    from kro.cli.graph_documents import is_graph
    from kro.graph.evaluate import InstanceEvaluation

    instance = dict(instance)
    metadata = dict(instance.get("metadata") or {})
    if graph.instance.namespaced:
        metadata.setdefault("namespace", "default")
    instance["metadata"] = metadata
    evaluation = InstanceEvaluation(graph, instance)
    nodes = [_outcome(graph, node_id, evaluation, observed) for node_id in graph.topological_order]
    if is_graph(graph):
        return Rendering(instance, nodes, {}, source, graph=True)
    return Rendering(instance, nodes, dict(evaluation.status_fields() or {}), source)


def _outcome(
    graph: Graph,
    node_id: str,
    evaluation: InstanceEvaluation,
    observed: Sequence[Mapping[str, Any]],
) -> NodeOutcome:
    """What one node does. An expression that fails makes the node an error, with the
    controller's message; a node that reads it then waits for it, as it would in a cluster."""
    from kro.cli.messages import one_line
    from kro.graph.evaluate import EvaluationError, Pending
    from kro.graph.model import NodeType

    node = graph.node(node_id)
    order = node.apply_order
    objects: tuple[dict[str, Any], ...] = ()
    try:
        ignored = evaluation.check_ignored(node_id)
        if isinstance(ignored, Pending):
            return NodeOutcome(node_id, order, "waiting", ignored.reason)
        if ignored:
            return NodeOutcome(node_id, order, "skipped", SKIPPED)
        desired = evaluation.desired(node_id)
        if isinstance(desired, Pending):
            return NodeOutcome(node_id, order, "waiting", desired.reason)
        if node.deferred or node.type.is_value or node.type is NodeType.PATCH:
            return _graph_only_outcome(node, evaluation, desired, observed)
        live = [_find(observed, d) for d in desired]
        state = "external" if node.type.value.startswith("External") else "rendered"
        objects = tuple(dict(d) for d in desired) if state == "rendered" else ()
        if node.type is NodeType.EXTERNAL:
            evaluation.observe(node_id, live[0])
        elif node.type is NodeType.EXTERNAL_COLLECTION:
            evaluation.observe(node_id, [o for o in observed if _selected(o, desired[0])])
        else:
            merged = [o if o is not None else d for o, d in zip(live, desired, strict=True)]
            evaluation.observe(node_id, merged if node.type.is_list else merged[0])
        readiness = evaluation.readiness(node_id)
    except EvaluationError as error:
        from kro.cli.graph_documents import is_graph

        prefix = f'node "{node_id}": ' if is_graph(graph) else FAILED_PREFIX
        return NodeOutcome(node_id, order, "error", one_line(f"{prefix}{error}"), objects)
    return NodeOutcome(node_id, order, state, "", objects, readiness.ready, readiness.reason or "")


def _schema_pending(node: Node) -> str:
    """A deferred node (DeferredSchemaResolution) waits for its kind: what it would apply
    once the kind is served is shown, not type-checked."""
    return (
        f"SchemaPending: kind {node.gvk.kind} of {node.gvk.api_version} is not served; "
        "waiting for its CRD (give the CRD with --crd to render it typed)"
    )


def _graph_only_outcome(
    node: Node,
    evaluation: InstanceEvaluation,
    desired: Sequence[dict[str, Any]],
    observed: Sequence[Mapping[str, Any]],
) -> NodeOutcome:
    """A Graph's `def` is computed, never applied (V-45). A `patch` waits, as in the cluster,
    while a target it contributes to is not known (only `--observed` makes it known offline);
    what it would contribute is shown either way (V-46). A deferred node's kind is never
    served offline: it waits for it, as it would in a cluster until its CRD appears."""
    node_id, order = node.id, node.apply_order
    if node.deferred:
        objects = tuple(dict(d) for d in desired)
        return NodeOutcome(node_id, order, "waiting", _schema_pending(node), objects)
    if node.type.is_value:
        value: Any = list(desired) if node.type.is_list else desired[0]
        evaluation.observe(node_id, value)
        readiness = evaluation.readiness(node_id)
        reason = readiness.reason or ""
        return NodeOutcome(node_id, order, "value", "", (), readiness.ready, reason, value)
    live = [_find(observed, d) for d in desired]
    objects = tuple(dict(d) for d in desired)
    missing = [d for d, found in zip(desired, live, strict=True) if found is None]
    if missing:
        target = missing[0]
        where = "/".join(p for p in _identity(target)[2:] if p)
        reason = f"patch target {target.get('kind')} {where} not found (give it with --observed)"
        return NodeOutcome(node_id, order, "waiting", reason, objects, contributes=True)
    return NodeOutcome(node_id, order, "patch", "", objects, True, contributes=True)


def write_text(rendering: Rendering, out: TextIO) -> None:
    """The text form: YAML documents with `#` comments for what did not render."""
    import yaml

    metadata = rendering.instance.get("metadata") or {}
    order = ", ".join(n.id for n in rendering.nodes) or "(no resources)"
    kind = rendering.instance.get("kind")
    if rendering.graph:
        where = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
        out.write(f"# Graph {where}: apply order {order}\n")
    else:
        out.write(f"# instance {kind}/{metadata.get('name', '')}: apply order {order}\n")
    for node in rendering.nodes:
        for obj in node.objects:
            what = "patch of an object kro does not own, " if node.contributes else ""
            out.write(f"---\n# {node.id} ({what}apply order {node.apply_order})\n")
            out.write(yaml.safe_dump(obj, sort_keys=False))
        if node.state == "value":
            value = json.dumps(node.value, sort_keys=False, ensure_ascii=False)
            out.write(f"# {node.id}: value (def, not applied): {value}\n")
        if node.state in ("waiting", "skipped", "error"):
            out.write(f"# {node.id}: {node.state}: {node.reason}\n")
        elif not node.ready:
            out.write(f"# {node.id}: not ready: {node.not_ready_reason}\n")
    if rendering.graph:
        return
    out.write("# status (fields whose data exists):\n")
    for line in yaml.safe_dump(rendering.status or {}, sort_keys=False).splitlines():
        out.write(f"#   {line}\n")


def rendering_data(rendering: Rendering) -> dict[str, Any]:
    """The machine-readable form for `-o json|yaml` (for a Graph: `graph` instead of
    `instance`, each def's `value`, and no status)."""
    owner = {"graph": rendering.instance} if rendering.graph else {"instance": rendering.instance}
    return {
        **owner,
        "resources": [
            {
                "id": n.id,
                "applyOrder": n.apply_order,
                "state": n.state,
                **({"reason": n.reason} if n.reason else {}),
                **(
                    {"ready": n.ready, "notReadyReason": n.not_ready_reason or None}
                    if n.state in ("rendered", "external", "value", "patch")
                    else {}
                ),
                **({"value": n.value} if n.state == "value" else {}),
                "objects": list(n.objects),
            }
            for n in rendering.nodes
        ],
        **({} if rendering.graph else {"status": rendering.status}),
    }


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (
        str(obj.get("apiVersion")),
        str(obj.get("kind")),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


def _find(observed: Sequence[Mapping[str, Any]], desired: Mapping[str, Any]) -> Any:
    """The observed object with the same identity; a namespace-less one matches any."""
    api_version, kind, namespace, name = _identity(desired)
    for obj in observed:
        o_api, o_kind, o_ns, o_name = _identity(obj)
        if (o_api, o_kind, o_name) == (api_version, kind, name) and o_ns in ("", namespace):
            return obj
    return None


def _selected(obj: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether a reference by selector would list `obj`: its kind, in the namespace the
    reference names (any, when none), with labels its selector matches."""
    from kro.dynamic import LabelSelector

    if not _matches_kind(obj, desired):
        return False
    want = _meta(desired)
    have = _meta(obj)
    namespace = str(want.get("namespace") or "")
    if namespace and str(have.get("namespace") or "") not in ("", namespace):
        return False
    selector = want.get("selector")
    if not isinstance(selector, Mapping):
        return True
    labels = have.get("labels")
    return LabelSelector.from_dict(selector).matches(labels if isinstance(labels, Mapping) else {})


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _matches_kind(obj: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return (obj.get("apiVersion"), obj.get("kind")) == (
        desired.get("apiVersion"),
        desired.get("kind"),
    )
