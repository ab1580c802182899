"""kro.cli.offline: `kro validate`, `kro generate crd` and `kro graph`, without a cluster
(reference §1.U CLI-02, CLI-03, CLI-06).

Upstream's CLI needs a reachable cluster for schema discovery (CLI-01). These commands run
offline instead: kinds resolve from the built-in Kubernetes schema bundle plus any
`--crd FILE` given, and RGDs given together may build on each other (an RGD whose resources
are instances of another RGD in the same `-f` files gets that RGD's generated CRD), so a
platform's whole set of RGDs can be checked in CI.

* `kro validate [rgd] -f FILE [-f FILE ...] [--crd FILE ...]` checks admission rules (§1.A)
  and builds every RGD (§1.E). Prints `Validation successful! The ResourceGraphDefinition is
  valid.` per RGD, or `validation failed: <error>`; exit 0 when all are valid, else 1. Valid
  RGDs whose expressions may be expensive at run time (`kro.graph.cost`: nested
  comprehensions over lists the schema does not bound, generated lengths computed at run
  time) get a `warning: ...` line on stderr each; warnings never change the exit code.
* `kro generate crd -f FILE [-o yaml|json]` prints each RGD's CRD with the annotation
  `kro.run/cli-version: dev`.
* `kro graph -f FILE [--format text|mermaid|dot]` prints the topological order, the
  apply-order waves (deletion runs from the highest wave down, G-17) and the dependency edges.

Exit codes: 0 ok, 1 invalid input, 2 usage errors (argparse's own, and unknown formats).
`kro validate --kubeconfig K` also resolves kinds from a live cluster's OpenAPI (CLI-01), for
RGDs that use CRDs installed there; the built-in bundle and `--crd` files are consulted first.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from kro.api.names import ANNOTATION_CLI_VERSION, FEATURE_CEL_OMIT_FUNCTION, RGD_KIND
from kro.api.v1alpha1 import InvalidObjectError, parse_resource_graph_definition
from kro.cli.flags import parse_feature_gates
from kro.graph.build_errors import ResourceBuildError
from kro.graph.builder import BuildOptions, build_graph
from kro.graph.cost import graph_warnings
from kro.graph.errors import GraphError
from kro.graph.model import Graph, NodeType
from kro.graph.resolver import (
    GVK,
    OfflineSchemaResolver,
    ResolvedSchema,
    SchemaNotFoundError,
    SchemaResolver,
    SchemaSourceError,
    referenced_gvks,
)
from kro.runtime.errors import KubeError

EXIT_OK: Final = 0
EXIT_INVALID: Final = 1
EXIT_USAGE: Final = 2
CLI_VERSION: Final = "dev"
VALID_MESSAGE: Final = "Validation successful! The ResourceGraphDefinition is valid."
OUTPUT_FORMATS: Final = ("yaml", "json")
GRAPH_FORMATS: Final = ("text", "mermaid", "dot")


class InputError(Exception):
    """A file cannot be read or holds no ResourceGraphDefinition."""


@dataclass(frozen=True, slots=True)
class BuildResult:
    """One RGD from the input files: its graph, or why it is invalid."""

    name: str
    graph: Graph | None
    error: str | None


# --- shared ------------------------------------------------------------------------------------


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--file",
        dest="files",
        type=Path,
        action="append",
        required=True,
        help="ResourceGraphDefinition YAML (repeatable; multi-document files allowed)",
    )
    parser.add_argument(
        "--crd",
        type=Path,
        action="append",
        default=[],
        help="CRD YAML for custom kinds the RGDs use (repeatable)",
    )
    parser.add_argument(
        "--feature-gates",
        type=parse_feature_gates,
        default=None,
        help="e.g. CELOmitFunction=true (as the controller flag)",
    )
    parser.add_argument("--max-collection-size", type=int, default=1000)
    parser.add_argument("--max-collection-dimension-size", type=int, default=10)


def load_rgds(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Every ResourceGraphDefinition document in `paths`, in order."""
    found: list[dict[str, Any]] = []
    for path in paths:
        try:
            documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError) as error:
            raise InputError(f"cannot read {path}: {error}") from error
        found += [d for d in documents if isinstance(d, dict) and d.get("kind") == RGD_KIND]
    if not found:
        raise InputError(f"no ResourceGraphDefinition found in {', '.join(map(str, paths))}")
    return found


def _options(args: argparse.Namespace) -> BuildOptions:
    gates = args.feature_gates or {}
    return BuildOptions(
        max_collection_size=args.max_collection_size,
        max_collection_dimension_size=args.max_collection_dimension_size,
        omit_function=bool(gates.get(FEATURE_CEL_OMIT_FUNCTION, False)),
    )


def _name(rgd: dict[str, Any]) -> str:
    metadata = rgd.get("metadata")
    return str(metadata.get("name", "")) if isinstance(metadata, dict) else ""


def _try_build(
    rgd: dict[str, Any], resolver: OfflineSchemaResolver, options: BuildOptions, *, final: bool
) -> BuildResult | None:
    """Build one RGD; None when it names a kind that a not-yet-built RGD may provide."""
    try:
        parse_resource_graph_definition(rgd)
        graph = build_graph(rgd, resolver, options=options)
    except InvalidObjectError as error:
        return BuildResult(_name(rgd), None, str(error))
    except ResourceBuildError as error:
        if error.rule == "G-07" and not final:
            return None
        return BuildResult(_name(rgd), None, str(error))
    except GraphError as error:
        return BuildResult(_name(rgd), None, str(error))
    resolver.add_crd(graph.instance.crd)
    return BuildResult(_name(rgd), graph, None)


def build_rgds(
    rgds: Sequence[dict[str, Any]], resolver: OfflineSchemaResolver, options: BuildOptions
) -> list[BuildResult]:
    """Build every RGD, each one's CRD served to the others (RGD chaining), input order kept.

    An RGD whose kind lookup fails is retried after the others, until no round makes progress.
    """
    results: dict[int, BuildResult] = {}
    pending = list(range(len(rgds)))
    while pending:
        progressed = False
        for index in list(pending):
            result = _try_build(rgds[index], resolver, options, final=False)
            if result is not None:
                results[index] = result
                pending.remove(index)
                progressed = True
        if not progressed:
            for index in pending:
                result = _try_build(rgds[index], resolver, options, final=True)
                assert result is not None
                results[index] = result
            pending = []
    return [results[i] for i in range(len(rgds))]


class _LiveBacked(OfflineSchemaResolver):
    """The offline bundle and `--crd` files first, then the schemas prefetched from a cluster."""

    def __init__(self, offline: OfflineSchemaResolver, live: SchemaResolver) -> None:
        super().__init__()
        self._entries = offline._entries
        self._live = live

    def resolve(self, gvk: GVK) -> ResolvedSchema:
        try:
            return super().resolve(gvk)
        except SchemaNotFoundError:
            return self._live.resolve(gvk)


async def _live_resolver(
    kubeconfig: str, offline: OfflineSchemaResolver, rgds: Sequence[dict[str, Any]]
) -> OfflineSchemaResolver:
    from kro.controllers.schemas import LiveSchemaResolver
    from kro.runtime.client import Client

    async with await Client.from_kubeconfig(kubeconfig) as client:
        live = LiveSchemaResolver(client)
        wanted = [gvk for rgd in rgds for gvk in referenced_gvks(rgd.get("spec") or {})]
        await live.prefetch(wanted)
    return _LiveBacked(offline, live)


def _run(args: argparse.Namespace, render: Callable[[list[BuildResult]], int]) -> int:
    try:
        rgds = load_rgds(args.files)
        resolver = OfflineSchemaResolver.from_files(crd_paths=args.crd)
        if getattr(args, "kubeconfig", None):
            resolver = asyncio.run(_live_resolver(args.kubeconfig, resolver, rgds))
    except (InputError, SchemaSourceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    except KubeError as error:
        print(f"error: cannot read schemas from the cluster: {error}", file=sys.stderr)
        return EXIT_INVALID
    return render(build_rgds(rgds, resolver, _options(args)))


def _report_failures(results: Sequence[BuildResult]) -> bool:
    failed = [r for r in results if r.error is not None]
    for result in failed:
        prefix = f"{result.name}: " if len(results) > 1 and result.name else ""
        print(f"{prefix}validation failed: {result.error}", file=sys.stderr)
    return bool(failed)


# --- validate ----------------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> int:
    def render(results: list[BuildResult]) -> int:
        for result in results:
            if result.error is None:
                prefix = f"{result.name}: " if len(results) > 1 and result.name else ""
                print(prefix + VALID_MESSAGE)
        _report_cost_warnings(results)
        return EXIT_INVALID if _report_failures(results) else EXIT_OK

    return _run(args, render)


def _report_cost_warnings(results: Sequence[BuildResult]) -> None:
    """Expressions whose run-time cost the schema does not bound (advice, not an error)."""
    for result in results:
        if result.graph is not None:
            for warning in graph_warnings(result.graph):
                print(f"warning: {warning}", file=sys.stderr)


# --- generate crd ------------------------------------------------------------------------------


def cli_crd(graph: Graph) -> dict[str, Any]:
    """The generated CRD with `kro.run/cli-version: dev` (CLI-03)."""
    crd = copy.deepcopy(dict(graph.instance.crd))
    metadata = crd.setdefault("metadata", {})
    metadata.setdefault("annotations", {})[ANNOTATION_CLI_VERSION] = CLI_VERSION
    return crd


def format_documents(documents: Sequence[dict[str, Any]], output: str) -> str:
    """YAML (multi-document) or JSON (one object, or a v1 List for several)."""
    if output == "json":
        body: Any = documents[0]
        if len(documents) > 1:
            body = {"apiVersion": "v1", "kind": "List", "items": list(documents)}
        return json.dumps(body, indent=2) + "\n"
    return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False)


def _generate_crd(args: argparse.Namespace) -> int:
    if args.output not in OUTPUT_FORMATS:
        print(f"error: unsupported output format: {args.output}", file=sys.stderr)
        return EXIT_USAGE

    def render(results: list[BuildResult]) -> int:
        if _report_failures(results):
            return EXIT_INVALID
        crds = [cli_crd(r.graph) for r in results if r.graph is not None]
        sys.stdout.write(format_documents(crds, args.output))
        return EXIT_OK

    return _run(args, render)


# --- graph -------------------------------------------------------------------------------------


def waves(graph: Graph) -> dict[int, list[str]]:
    """Apply-order wave -> node ids (topological order within a wave)."""
    out: dict[int, list[str]] = {}
    for node_id in graph.topological_order:
        out.setdefault(graph.nodes[node_id].apply_order, []).append(node_id)
    return dict(sorted(out.items()))


def edges(graph: Graph) -> list[tuple[str, str]]:
    """(dependency, dependent) pairs: the first must exist before the second."""
    return [(d, n) for n in graph.topological_order for d in graph.nodes[n].dependencies]


def render_text(graph: Graph) -> str:
    instance = graph.instance
    lines = [
        f"ResourceGraphDefinition: {graph.rgd_name or '(unnamed)'}",
        f"Instance: {instance.api_version}, Kind={instance.kind}",
        f"Topological order: {', '.join(graph.topological_order) or '(no resources)'}",
        "Apply-order waves (deletion runs from the highest wave down):",
    ]
    lines += [f"  {wave}: {', '.join(ids)}" for wave, ids in waves(graph).items()]
    lines.append("Nodes:")
    for node_id in graph.topological_order:
        node = graph.nodes[node_id]
        flags = [node.type.value, f"{node.gvk.api_version}/{node.gvk.kind}"]
        if node.include_when:
            flags.append("conditional")
        if node.for_each:
            flags.append("forEach " + " x ".join(d.name for d in node.for_each))
        lines.append(f"  {node_id}: {', '.join(flags)}")
    lines.append("Edges (dependency -> dependent):")
    lines += [f"  {d} -> {n}" for d, n in edges(graph)] or ["  (none)"]
    return "\n".join(lines) + "\n"


_MERMAID_SHAPES: Final = {
    NodeType.RESOURCE: ('["', '"]'),
    NodeType.COLLECTION: ('[["', '"]]'),
    NodeType.EXTERNAL: ('(["', '"])'),
    NodeType.EXTERNAL_COLLECTION: ('[("', '")]'),
}


def _label(graph: Graph, node_id: str, newline: str) -> str:
    node = graph.nodes[node_id]
    suffix = "?" if node.include_when else ""
    return f"{node_id}{suffix}{newline}{node.gvk.kind} (wave {node.apply_order})"


def render_mermaid(graph: Graph) -> str:
    lines = ["flowchart TD"]
    for node_id in graph.topological_order:
        left, right = _MERMAID_SHAPES[graph.nodes[node_id].type]
        lines.append(f"  {node_id}{left}{_label(graph, node_id, '<br/>')}{right}")
    lines += [f"  {d} --> {n}" for d, n in edges(graph)]
    return "\n".join(lines) + "\n"


def render_dot(graph: Graph) -> str:
    shapes = {NodeType.RESOURCE: "box", NodeType.COLLECTION: "box3d"}
    lines = [f"digraph {json.dumps(graph.rgd_name or 'rgd')} {{", "  rankdir=LR;"]
    for node_id in graph.topological_order:
        node = graph.nodes[node_id]
        shape = shapes.get(node.type, "ellipse")
        style = ', style="dashed"' if node.include_when else ""
        label = json.dumps(_label(graph, node_id, "\n"))
        lines.append(f'  "{node_id}" [label={label}, shape={shape}{style}];')
    lines += [f'  "{d}" -> "{n}";' for d, n in edges(graph)]
    lines.append("}")
    return "\n".join(lines) + "\n"


_RENDERERS: Final[dict[str, Callable[[Graph], str]]] = {
    "text": render_text,
    "mermaid": render_mermaid,
    "dot": render_dot,
}


def _graph(args: argparse.Namespace) -> int:
    renderer = _RENDERERS.get(args.format)
    if renderer is None:
        print(f"error: unsupported output format: {args.format}", file=sys.stderr)
        return EXIT_USAGE

    def render(results: list[BuildResult]) -> int:
        if _report_failures(results):
            return EXIT_INVALID
        sys.stdout.write("\n".join(renderer(r.graph) for r in results if r.graph is not None))
        return EXIT_OK

    return _run(args, render)


# --- wiring ------------------------------------------------------------------------------------


def add_offline_commands(commands: Any) -> None:
    """Add `validate`, `generate crd` and `graph` to the `kro` sub-command parser."""
    validate = commands.add_parser(
        "validate", help="validate ResourceGraphDefinitions offline", description=__doc__
    )
    validate.add_argument("target", nargs="?", choices=["rgd"], help="what to validate (rgd)")
    _common_arguments(validate)
    validate.add_argument(
        "--kubeconfig",
        default=None,
        help="also resolve kinds (e.g. installed CRDs) from this cluster's OpenAPI",
    )
    validate.set_defaults(handler=_validate)

    generate = commands.add_parser("generate", help="generate artifacts from an RGD")
    kinds = generate.add_subparsers(dest="artifact", required=True, metavar="ARTIFACT")
    crd = kinds.add_parser("crd", help="print the CRD an RGD defines")
    _common_arguments(crd)
    crd.add_argument("-o", "--output", default="yaml", help="yaml (default) or json")
    crd.set_defaults(handler=_generate_crd)

    graph = commands.add_parser(
        "graph", help="print an RGD's resource order, apply-order waves and dependencies"
    )
    _common_arguments(graph)
    graph.add_argument("--format", default="text", help="text (default), mermaid or dot")
    graph.set_defaults(handler=_graph)
