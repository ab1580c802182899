"""kro.cli.offline: `kro validate`, `kro generate crd` and `kro graph`, without a cluster.

Upstream's CLI needs a reachable cluster for schema discovery. These commands run offline
instead: kinds resolve from the built-in Kubernetes schema bundle plus any `--crd FILE`
given, and RGDs given together may build on each other, so a platform's whole set of RGDs
can be checked in CI. `kro validate --kubeconfig K` also resolves kinds from a live cluster's
OpenAPI, for RGDs that use CRDs installed there; the bundle and `--crd` files come first.

What "valid" means is `rgds` (strict decoding, admission, build, CRD rules); where input
comes from is `inputs`, and the flags, build and failure report every offline command shares
are `offline_io`'s; how results look is here (text) and in `output` (`-o json|yaml`).
Exit codes: 0 ok, 1 invalid input, 2 usage errors (argparse's own, and unknown formats).
Heavy modules (the graph builder, the CEL engine, the HTTP client) are imported inside the
handlers, so `kro --help` stays fast.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kro.cli import output
from kro.cli.build_result import BuildResult
from kro.cli.inputs import InputError
from kro.cli.offline_io import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Inputs,
    Prefixes,
    add_input_flags,
    build_all,
    build_options,
    format_documents,
    load_inputs,
    report_failures,
)
from kro.cli.rbac import add_rbac_command

if TYPE_CHECKING:
    from kro.cli.inputs import Document
    from kro.graph.builder import BuildOptions
    from kro.graph.model import Graph
    from kro.graph.resolver import OfflineSchemaResolver

# The input plumbing is kro.cli.offline_io's; its names are re-exported here, where the other
# commands (kro.cli.render) and callers have always imported them.
__all__ = [
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "VALID_MESSAGE",
    "BuildResult",
    "InputError",
    "Inputs",
    "Prefixes",
    "add_input_flags",
    "add_offline_commands",
    "build_all",
    "build_options",
    "build_rgds",
    "format_documents",
    "load_inputs",
    "load_rgds",
    "report_failures",
]

CLI_VERSION: Final = "dev"
VALID_MESSAGE: Final = "Validation successful! The ResourceGraphDefinition is valid."
OUTPUT_FORMATS: Final = ("yaml", "json")

VALIDATE_HELP: Final = """\
Check ResourceGraphDefinitions the way a cluster would, without one: unknown or duplicate
fields (kubectl's strict validation), the RGD API's admission rules, every resource template
against its kind's schema, every ${...} expression and its type, and the generated CRD.

Kinds resolve from the built-in Kubernetes schemas, from CRDs given with --crd, from other
RGDs given in the same run, and, with --kubeconfig, from a cluster. A resource whose target
names a member cluster (MultiCluster) resolves its kind from that cluster with
--cluster NAME=KUBECONFIG.

Exit status: 0 all valid, 1 something is invalid, 2 usage error.

examples:
  kro validate -f rgd.yaml
  kro validate -f platform/ -R --crd crds/ -o json
  cat rgd.yaml | kro validate -f -
  kro validate -f rgd.yaml --feature-gates=MultiCluster=true --cluster member-1=member-1.kubeconfig
"""


def load_rgds(paths: Sequence[Path | str]) -> list[dict[str, Any]]:
    """Every ResourceGraphDefinition document in `paths`, in order (files, dirs or `-`)."""
    from kro.cli.inputs import expand_sources, read_documents
    from kro.cli.rgds import rgd_documents

    documents = read_documents(expand_sources([str(p) for p in paths]))
    found = [d.body for d in rgd_documents(documents)]
    if not found:
        raise InputError(f"no ResourceGraphDefinition found in {', '.join(map(str, paths))}")
    return found


def build_rgds(
    rgds: Sequence[dict[str, Any] | Document],
    resolver: OfflineSchemaResolver,
    options: BuildOptions,
) -> list[BuildResult]:
    """Check and build RGDs given together (see `kro.cli.rgds.build_rgds`)."""
    from kro.cli import rgds as pipeline

    return pipeline.build_rgds(rgds, resolver, options)


def _run(
    args: argparse.Namespace,
    report: Callable[[Inputs, list[BuildResult]], int],
    *,
    graphs: bool = True,
) -> int:
    from kro.graph.resolver import SchemaSourceError

    try:
        inputs = load_inputs(args, graphs=graphs)
        if getattr(args, "kubeconfig", None):
            inputs = _with_cluster(args.kubeconfig, inputs)
        if getattr(args, "clusters", None):
            inputs = _with_members(dict(args.clusters), inputs)
    except (InputError, SchemaSourceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    return report(inputs, build_all(inputs, build_options(args)))


def _with_members(members: dict[str, str], inputs: Inputs) -> Inputs:
    """`--cluster NAME=KUBECONFIG`: targeted resources typed with their member's kinds."""
    from kro.cli.cluster_schemas import ClusterSchemaError
    from kro.cli.member_schemas import with_member_schemas

    bodies = [d.body for d in [*inputs.rgds, *inputs.graphs]]
    try:
        resolver, warnings = with_member_schemas(members, inputs.resolver, bodies)
    except ClusterSchemaError as error:
        raise InputError(str(error)) from error
    for warning in warnings:
        print(warning, file=sys.stderr)
    return Inputs(inputs.rgds, inputs.files, resolver, inputs.graphs)


def _cluster_usage(args: argparse.Namespace) -> str:
    """What is wrong with `--cluster` flags as given (a usage error), or ""."""
    from kro.api.names import FEATURE_MULTI_CLUSTER

    names = [name for name, _ in args.clusters or ()]
    if not names:
        return ""
    if not (args.feature_gates or {}).get(FEATURE_MULTI_CLUSTER):
        gate = FEATURE_MULTI_CLUSTER
        return (
            f"--cluster type-checks resources by their target, which needs the {gate} "
            f"feature gate: add --feature-gates={gate}=true"
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        return f"--cluster names {', '.join(repeated)} more than once"
    return ""


def _with_cluster(kubeconfig: str, inputs: Inputs) -> Inputs:
    from kro.cli.cluster_schemas import ClusterSchemaError, with_cluster_schemas

    bodies = [d.body for d in inputs.rgds] + [_as_rgd(d.body) for d in inputs.graphs]
    try:
        resolver = with_cluster_schemas(kubeconfig, inputs.resolver, bodies)
    except ClusterSchemaError as error:
        raise InputError(str(error)) from error
    return Inputs(inputs.rgds, inputs.files, resolver, inputs.graphs)


def _as_rgd(graph: dict[str, Any]) -> dict[str, Any]:
    """A Graph's nodes in an RGD's shape, for the cluster lookup of the kinds they name."""
    nodes = (graph.get("spec") or {}).get("nodes") if isinstance(graph.get("spec"), dict) else None
    resources = [
        {
            "id": n.get("id"),
            **({"template": n["template"]} if "template" in n else {}),
            **({"externalRef": n["ref"]} if "ref" in n else {}),
        }
        for n in (nodes if isinstance(nodes, list) else [])
        if isinstance(n, dict)
    ]
    return {"spec": {"resources": resources}}


# --- validate ----------------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> int:
    if args.output not in args.output_formats:
        print(output.unsupported(args.output), file=sys.stderr)
        return EXIT_USAGE
    usage = _cluster_usage(args)
    if usage:
        print(f"error: {usage}", file=sys.stderr)
        return EXIT_USAGE

    def report(inputs: Inputs, results: list[BuildResult]) -> int:
        warnings = _warnings(results)
        if output.is_machine(args.output):
            sys.stdout.write(output.dump(_validation_data(results, warnings), args.output))
            return EXIT_INVALID if any(r.graph is None for r in results) else EXIT_OK
        prefix = Prefixes(results, inputs.files)
        for result in results:
            if result.graph is not None:
                print(prefix(result) + valid_message(result))
        for result in results:
            for warning in warnings.get(id(result), []):  # a warning names its RGD itself
                print(f"{prefix.file(result)}warning: {warning}", file=sys.stderr)
        return EXIT_INVALID if report_failures(results, prefix) else EXIT_OK

    return _run(args, report)


def valid_message(result: BuildResult) -> str:
    """What `kro validate` says of a valid input: upstream's line for an RGD; for a Graph, the
    message of the `Accepted=True` condition the controller would set."""
    from kro.api.graph import GRAPH_KIND, compiled_message

    if result.kind == GRAPH_KIND and result.graph is not None:
        compiled = compiled_message(len(result.graph.nodes))
        return f"Validation successful! The Graph is valid: {compiled}."
    return VALID_MESSAGE


def _warnings(results: Sequence[BuildResult]) -> dict[int, list[str]]:
    """Advice, not errors: resources deferred because their kind is not served
    (DeferredSchemaResolution), and expressions whose run-time cost the schema does not
    bound."""
    from kro.graph.cost import graph_warnings

    return {
        id(r): [*_deferrals(r), *(str(w) for w in graph_warnings(r.graph))]
        for r in results
        if r.graph is not None
    }


def _deferrals(result: BuildResult) -> list[str]:
    """One warning per deferred node, naming its owner, the node, the kind and why."""
    from kro.api.graph import GRAPH_KIND
    from kro.graph.deferred import deferral_message

    assert result.graph is not None
    owner = "graph" if result.kind == GRAPH_KIND else "rgd"
    where, noun = (f'{owner} "{result.name}" ' if result.name else ""), (
        "node" if result.kind == GRAPH_KIND else "resource"
    )
    return [
        f'{where}{noun} "{node.id}": {deferral_message(node)}'
        for node in result.graph.nodes.values()
        if node.deferred
    ]


def _validation_data(
    results: Sequence[BuildResult], warnings: dict[int, list[str]]
) -> dict[str, Any]:
    return {
        "valid": all(r.graph is not None for r in results),
        "results": [
            {
                "file": r.source,
                "kind": r.kind,
                "name": r.name,
                "valid": r.graph is not None,
                "errors": list(r.errors or ((r.error,) if r.error else ())),
                "warnings": warnings.get(id(r), []),
            }
            for r in results
        ],
    }


# --- generate crd ------------------------------------------------------------------------------


def cli_crd(graph: Graph) -> dict[str, Any]:
    """The generated CRD with `kro.run/cli-version: dev`, as upstream's CLI prints it."""
    from kro.api.names import ANNOTATION_CLI_VERSION

    crd = copy.deepcopy(dict(graph.instance.crd))
    metadata = crd.setdefault("metadata", {})
    metadata.setdefault("annotations", {})[ANNOTATION_CLI_VERSION] = CLI_VERSION
    return crd


def _generate_crd(args: argparse.Namespace) -> int:
    if args.output not in OUTPUT_FORMATS:
        print(output.unsupported(args.output), file=sys.stderr)
        return EXIT_USAGE

    def report(inputs: Inputs, results: list[BuildResult]) -> int:
        if report_failures(results, Prefixes(results, inputs.files)):
            return EXIT_INVALID
        crds = [cli_crd(r.graph) for r in results if r.graph is not None]
        sys.stdout.write(format_documents(crds, args.output))
        return EXIT_OK

    return _run(args, report, graphs=False)  # a Graph defines no CRD


# --- graph -------------------------------------------------------------------------------------


def _graph(args: argparse.Namespace) -> int:
    if args.output not in args.output_formats:
        print(output.unsupported(args.output), file=sys.stderr)
        return EXIT_USAGE

    def report(inputs: Inputs, results: list[BuildResult]) -> int:
        from kro.cli.graph_formats import TEXT_RENDERERS, graph_data

        if report_failures(results, Prefixes(results, inputs.files)):
            return EXIT_INVALID
        graphs = [r.graph for r in results if r.graph is not None]
        if output.is_machine(args.output):
            data = {"graphs": [graph_data(g) for g in graphs]}
            sys.stdout.write(output.dump(data, args.output))
        else:
            sys.stdout.write("\n".join(TEXT_RENDERERS[args.output](g) for g in graphs))
        return EXIT_OK

    return _run(args, report)


# --- wiring ------------------------------------------------------------------------------------


def add_offline_commands(commands: Any) -> None:
    """Add `validate`, `generate crd` and `graph` to the `kro` sub-command parser."""
    add_validate_command(commands)
    add_generate_command(commands)
    add_graph_command(commands)


def add_validate_command(commands: Any) -> None:
    validate = commands.add_parser(
        "validate",
        help="check ResourceGraphDefinitions as a cluster would (offline)",
        description=VALIDATE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    validate.add_argument(
        "target", nargs="?", choices=["rgd"], help="what to validate: rgd (the default)"
    )
    add_input_flags(validate)
    validate.add_argument(
        "--kubeconfig",
        default=None,
        metavar="FILE",
        help="also resolve kinds (e.g. installed CRDs) from this cluster's OpenAPI",
    )
    validate.add_argument(
        "--cluster",
        dest="clusters",
        action="append",
        default=[],
        type=_cluster_flag,
        metavar="NAME=KUBECONFIG",
        help="resolve the kinds of resources whose target names cluster NAME from that "
        "cluster's OpenAPI (repeatable; needs --feature-gates=MultiCluster=true)",
    )
    formats = output.add_output_flag(validate)
    validate.set_defaults(handler=_validate, output_formats=formats)


def _cluster_flag(text: str) -> tuple[str, str]:
    from kro.cli.member_schemas import parse_cluster_flag

    return parse_cluster_flag(text)


def add_generate_command(commands: Any) -> None:
    generate = commands.add_parser(
        "generate",
        help="generate artifacts from an RGD",
        description="Generate artifacts from ResourceGraphDefinitions.",
    )
    kinds = generate.add_subparsers(dest="artifact", required=True, metavar="ARTIFACT")
    crd = kinds.add_parser(
        "crd",
        help="print the CustomResourceDefinition an RGD defines",
        description="Print the CustomResourceDefinition each ResourceGraphDefinition defines "
        "(annotated kro.run/cli-version: dev). Invalid RGDs are reported, and nothing is "
        "printed.",
    )
    add_input_flags(crd)
    crd.add_argument(
        "-o", "--output", default="yaml", metavar="FORMAT", help="yaml (default) or json"
    )
    crd.set_defaults(handler=_generate_crd)
    add_rbac_command(kinds)


def add_graph_command(commands: Any) -> None:
    graph = commands.add_parser(
        "graph",
        help="print an RGD's resource order, apply-order waves and dependencies",
        description="Print each ResourceGraphDefinition's resources in topological order, "
        "their apply-order waves (deletion runs from the highest wave down) and the "
        "dependency edges, as text, a Mermaid or Graphviz diagram, or data.",
    )
    add_input_flags(graph)
    formats = output.add_output_flag(graph, text=("text", "mermaid", "dot"), aliases=("--format",))
    graph.set_defaults(handler=_graph, output_formats=formats)
