"""kro.cli.render: `kro render` — what an instance would produce, without a cluster.

Prints, in apply order, the YAML of every resource the instance renders to (instance defaults
applied, includeWhen evaluated, forEach expanded), and for every node that cannot render yet a
comment saying why: the data it waits for, or the condition that skipped it. `--observed`
supplies live objects (e.g. a Deployment with `status.availableReplicas`) so a user can step
through readiness exactly as the controller would; without it, a rendered object counts as
applied but without status, and external references count as missing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from kro.graph.builder import BuildOptions, build_graph
from kro.graph.defaults import apply_defaults
from kro.graph.errors import GraphError
from kro.graph.evaluate import InstanceEvaluation, Pending
from kro.graph.model import Graph, NodeType
from kro.graph.resolver import OfflineSchemaResolver, SchemaSourceError

EXIT_INVALID = 1


def add_render_command(commands: Any) -> None:
    render = commands.add_parser(
        "render",
        help="print the resources an instance would produce (offline)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    render.add_argument("-f", "--file", required=True, type=Path, help="the RGD YAML")
    render.add_argument("-i", "--instance", required=True, type=Path, help="the instance YAML")
    render.add_argument(
        "--observed",
        type=Path,
        action="append",
        default=[],
        help="YAML of live objects (repeatable)",
    )
    render.add_argument(
        "--crd",
        type=Path,
        action="append",
        default=[],
        help="CRD YAML for custom kinds the RGD uses (repeatable)",
    )
    render.set_defaults(handler=_handler)


def _documents(path: Path) -> list[dict[str, Any]]:
    with path.open() as stream:
        return [d for d in yaml.safe_load_all(stream) if isinstance(d, dict)]


def _handler(args: argparse.Namespace) -> int:
    try:
        rgds = [d for d in _documents(args.file) if d.get("kind") == "ResourceGraphDefinition"]
        instances = _documents(args.instance)
        observed = [d for path in args.observed for d in _documents(path)]
        resolver = OfflineSchemaResolver.from_files(crd_paths=args.crd)
    except (OSError, yaml.YAMLError, SchemaSourceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    if len(rgds) != 1 or not instances:
        print(
            "error: need exactly one ResourceGraphDefinition and at least one instance",
            file=sys.stderr,
        )
        return EXIT_INVALID
    try:
        graph = build_graph(rgds[0], resolver, options=BuildOptions())
    except GraphError as error:
        print(f"invalid ResourceGraphDefinition: {error}", file=sys.stderr)
        return EXIT_INVALID
    try:
        for instance in instances:
            render(graph, instance, observed, sys.stdout)
    except GraphError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    return 0


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


def render(
    graph: Graph,
    instance: Mapping[str, Any],
    observed: Sequence[Mapping[str, Any]],
    out: TextIO,
) -> None:
    """Write the instance's rendering to `out`."""
    instance = dict(instance)
    instance["spec"] = apply_defaults(graph.instance.spec_schema, instance.get("spec") or {})
    metadata = dict(instance.get("metadata") or {})
    if graph.instance.namespaced:
        metadata.setdefault("namespace", "default")
    instance["metadata"] = metadata
    evaluation = InstanceEvaluation(graph, instance)
    name = metadata.get("name", "")
    out.write(
        f"# instance {graph.instance.kind}/{name}: apply order "
        f"{', '.join(graph.topological_order) or '(no resources)'}\n"
    )
    for line in _render_nodes(graph, evaluation, observed):
        out.write(line)
    status = evaluation.status_fields()
    out.write("# status (fields whose data exists):\n")
    for line in yaml.safe_dump(status or {}, sort_keys=False).splitlines():
        out.write(f"#   {line}\n")


def _render_nodes(
    graph: Graph, evaluation: InstanceEvaluation, observed: Sequence[Mapping[str, Any]]
) -> Iterator[str]:
    for node_id in graph.topological_order:
        node = graph.node(node_id)
        ignored = evaluation.check_ignored(node_id)
        if isinstance(ignored, Pending):
            yield f"# {node_id}: waiting: {ignored.reason}\n"
            continue
        if ignored:
            yield f"# {node_id}: skipped: includeWhen is false or a dependency was skipped\n"
            continue
        desired = evaluation.desired(node_id)
        if isinstance(desired, Pending):
            yield f"# {node_id}: waiting: {desired.reason}\n"
            continue
        live = [_find(observed, d) for d in desired]
        if node.type is NodeType.EXTERNAL:
            evaluation.observe(node_id, live[0])
        elif node.type is NodeType.EXTERNAL_COLLECTION:
            evaluation.observe(node_id, [o for o in observed if _matches_kind(o, desired[0])])
        else:
            merged = [o if o is not None else d for o, d in zip(live, desired, strict=True)]
            evaluation.observe(node_id, merged if node.type.is_list else merged[0])
            for obj in desired:
                yield f"---\n# {node_id} (apply order {node.apply_order})\n"
                yield yaml.safe_dump(obj, sort_keys=False)
        readiness = evaluation.readiness(node_id)
        if not readiness.ready:
            yield f"# {node_id}: not ready: {readiness.reason}\n"


def _matches_kind(obj: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return (obj.get("apiVersion"), obj.get("kind")) == (
        desired.get("apiVersion"),
        desired.get("kind"),
    )
