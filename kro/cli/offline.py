"""kro.cli.offline: `kro validate`, `kro generate crd` and `kro graph`, without a cluster.

Upstream's CLI needs a reachable cluster for schema discovery. These commands run offline
instead: kinds resolve from the built-in Kubernetes schema bundle plus any `--crd FILE`
given, and RGDs given together may build on each other, so a platform's whole set of RGDs
can be checked in CI. `kro validate --kubeconfig K` also resolves kinds from a live cluster's
OpenAPI, for RGDs that use CRDs installed there; the bundle and `--crd` files come first.

What "valid" means is `rgds` (strict decoding, admission, build, CRD rules); where input
comes from is `inputs`; how results look is here (text) and in `output` (`-o json|yaml`).
Exit codes: 0 ok, 1 invalid input, 2 usage errors (argparse's own, and unknown formats).
Heavy modules (the graph builder, the CEL engine, the HTTP client) are imported inside the
handlers, so `kro --help` stays fast.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kro.cli import output
from kro.cli.build_result import BuildResult
from kro.cli.flags import parse_feature_gates
from kro.cli.inputs import InputError

if TYPE_CHECKING:
    from kro.cli.inputs import Document
    from kro.graph.builder import BuildOptions
    from kro.graph.model import Graph
    from kro.graph.resolver import OfflineSchemaResolver

__all__ = [
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "VALID_MESSAGE",
    "BuildResult",
    "InputError",
    "add_offline_commands",
    "build_rgds",
    "format_documents",
    "load_rgds",
]

EXIT_OK: Final = 0
EXIT_INVALID: Final = 1
EXIT_USAGE: Final = 2
CLI_VERSION: Final = "dev"
VALID_MESSAGE: Final = "Validation successful! The ResourceGraphDefinition is valid."
OUTPUT_FORMATS: Final = ("yaml", "json")

VALIDATE_HELP: Final = """\
Check ResourceGraphDefinitions the way a cluster would, without one: unknown or duplicate
fields (kubectl's strict validation), the RGD API's admission rules, every resource template
against its kind's schema, every ${...} expression and its type, and the generated CRD.

Kinds resolve from the built-in Kubernetes schemas, from CRDs given with --crd, from other
RGDs given in the same run, and, with --kubeconfig, from a cluster.

Exit status: 0 all valid, 1 something is invalid, 2 usage error.

examples:
  kro validate -f rgd.yaml
  kro validate -f platform/ -R --crd crds/ -o json
  cat rgd.yaml | kro validate -f -
"""


# --- input flags --------------------------------------------------------------------------------


def add_input_flags(parser: argparse.ArgumentParser, what: str = "ResourceGraphDefinition") -> None:
    """`-f` (file, directory or `-`), `-R`, `--crd` and the build limits every command shares."""
    parser.add_argument(
        "-f",
        "--filename",
        "--file",
        dest="files",
        action="append",
        required=True,
        metavar="PATH",
        help=f"{what} YAML file, directory, or - for standard input (repeatable)",
    )
    parser.add_argument(
        "-R",
        "--recursive",
        action="store_true",
        help="read directories given with -f (and --crd) recursively",
    )
    parser.add_argument(
        "--crd",
        action="append",
        default=[],
        metavar="PATH",
        help="CustomResourceDefinition YAML (file or directory) for custom kinds (repeatable)",
    )
    parser.add_argument(
        "--feature-gates",
        type=parse_feature_gates,
        default=None,
        metavar="GATES",
        help="Name=true|false,... as the controller takes them, e.g. CELOmitFunction=true",
    )
    parser.add_argument(
        "--max-collection-size",
        type=int,
        default=1000,
        metavar="N",
        help="most items one forEach may expand to (default: 1000)",
    )
    parser.add_argument(
        "--max-collection-dimension-size",
        type=int,
        default=10,
        metavar="N",
        help="most forEach iterators per resource (default: 10)",
    )


def build_options(args: argparse.Namespace) -> BuildOptions:
    from kro.api.names import FEATURE_CEL_OMIT_FUNCTION, FEATURE_DELETION_POLICY
    from kro.graph.builder import BuildOptions

    gates = args.feature_gates or {}
    return BuildOptions(
        max_collection_size=args.max_collection_size,
        max_collection_dimension_size=args.max_collection_dimension_size,
        omit_function=bool(gates.get(FEATURE_CEL_OMIT_FUNCTION, False)),
        deletion_policy=bool(gates.get(FEATURE_DELETION_POLICY, False)),
    )


@dataclass(frozen=True, slots=True)
class Inputs:
    """What `-f` and `--crd` named: the RGD documents, the Graph documents (for the commands
    that take them), and the resolver for their kinds."""

    rgds: list[Document]
    files: list[str]
    resolver: OfflineSchemaResolver
    graphs: list[Document] = field(default_factory=list)


def load_inputs(args: argparse.Namespace, *, graphs: bool = False) -> Inputs:
    """Read `-f` and `--crd`; raises InputError with a one-line message naming the file.
    graphs: also take `Graph` documents (`validate`, `graph`, `render`, `generate rbac`)."""
    from kro.cli.graph_documents import graph_documents
    from kro.cli.inputs import expand_sources, read_documents
    from kro.cli.rgds import rgd_documents
    from kro.graph.resolver import OfflineSchemaResolver, SchemaSourceError

    files = expand_sources(args.files, recursive=args.recursive)
    documents = read_documents(files)
    rgds = rgd_documents(documents)
    found_graphs = graph_documents(documents) if graphs else []
    if not rgds and not found_graphs:
        what = "ResourceGraphDefinition or Graph" if graphs else "ResourceGraphDefinition"
        raise InputError(f"no {what} found in {', '.join(args.files)}")
    resolver = OfflineSchemaResolver.from_files()
    for document in _crd_documents(args.crd, args.recursive):
        try:
            resolver.add_crd(document.body)
        except SchemaSourceError as error:
            raise InputError(f"{document.source}: {error}") from error
    return Inputs(rgds, files, resolver, found_graphs)


def _crd_documents(paths: Sequence[str], recursive: bool) -> list[Document]:
    """The CustomResourceDefinitions of `--crd`, read like `-f` (files, dirs, `-`)."""
    from kro.cli.inputs import expand_sources, read_documents

    found: list[Document] = []
    for path in paths:
        documents = read_documents(expand_sources([path], recursive=recursive))
        crds = [d for d in documents if d.body.get("kind") == "CustomResourceDefinition"]
        if not crds:
            raise InputError(f"no CustomResourceDefinition found in {path}")
        found += crds
    return found


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


def build_all(inputs: Inputs, options: BuildOptions) -> list[BuildResult]:
    """The RGDs, then the Graphs: a Graph may create instances of an RGD given with it."""
    from kro.cli.graph_documents import build_graphs
    from kro.cli.rgds import build_rgds as build

    results = build(inputs.rgds, inputs.resolver, options)
    return results + build_graphs(inputs.graphs, inputs.resolver, options)


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
    except (InputError, SchemaSourceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    return report(inputs, build_all(inputs, build_options(args)))


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


class Prefixes:
    """`file: name: ` in front of each message, only where the input has several of them."""

    def __init__(self, results: Sequence[BuildResult], files: Sequence[str]) -> None:
        self._files = len(set(files)) > 1
        self._names = len(results) > 1

    def __call__(self, result: BuildResult) -> str:
        name = f"{result.name}: " if self._names and result.name else ""
        return self.file(result) + name

    def file(self, result: BuildResult) -> str:
        return f"{result.source}: " if self._files and result.source else ""


def report_failures(results: Sequence[BuildResult], prefix: Prefixes) -> bool:
    """One `validation failed: ...` line on stderr per problem; True if there was any."""
    failed = False
    for result in results:
        for error in result.errors or ((result.error,) if result.error else ()):
            print(f"{prefix(result)}validation failed: {error}", file=sys.stderr)
            failed = True
    return failed


# --- validate ----------------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> int:
    if args.output not in args.output_formats:
        print(output.unsupported(args.output), file=sys.stderr)
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
    """Expressions whose run-time cost the schema does not bound (advice, not an error)."""
    from kro.graph.cost import graph_warnings

    return {
        id(r): [str(w) for w in graph_warnings(r.graph)] for r in results if r.graph is not None
    }


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


def format_documents(documents: Sequence[dict[str, Any]], output_format: str) -> str:
    """YAML (multi-document) or JSON (one object, or a v1 List for several)."""
    import yaml

    if output_format == "json":
        body: Any = documents[0]
        if len(documents) > 1:
            body = {"apiVersion": "v1", "kind": "List", "items": list(documents)}
        return json.dumps(body, indent=2) + "\n"
    text: str = yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False)
    return text


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
    formats = output.add_output_flag(validate)
    validate.set_defaults(handler=_validate, output_formats=formats)


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
    from kro.cli.rbac import add_rbac_command  # it builds on this module's input handling

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
