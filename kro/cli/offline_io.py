"""kro.cli.offline_io: what every offline command shares: its input flags, reading and building
what they name, reporting what failed, and printing documents.

`kro validate`, `kro generate crd|rbac`, `kro graph` and `kro render` all take `-f` and `--crd`,
build RGDs and Graphs together (a Graph may create instances of an RGD given with it), prefix
messages with the file and name only where the input has several, and exit 0 / 1 / 2. The
commands live in their own modules (kro.cli.offline, kro.cli.rbac, kro.cli.render) and import
this one, which imports none of them: `kro.cli.offline` registers `generate rbac`, so the
plumbing `kro.cli.rbac` builds on cannot live there.

Heavy modules (the graph builder, the CEL engine) are imported inside the functions that need
them, so `kro --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kro.cli.build_result import BuildResult
from kro.cli.flags import parse_feature_gates
from kro.cli.inputs import InputError

if TYPE_CHECKING:
    from kro.cli.inputs import Document
    from kro.graph.builder import BuildOptions
    from kro.graph.resolver import OfflineSchemaResolver

__all__ = [
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "Inputs",
    "Prefixes",
    "add_input_flags",
    "build_all",
    "build_options",
    "format_documents",
    "load_inputs",
    "report_failures",
]

EXIT_OK: Final = 0
EXIT_INVALID: Final = 1
EXIT_USAGE: Final = 2


# --- input --------------------------------------------------------------------------------


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
    from kro.api.names import (
        FEATURE_CEL_OMIT_FUNCTION,
        FEATURE_DEFERRED_SCHEMA_RESOLUTION,
        FEATURE_DELETION_POLICY,
        FEATURE_MULTI_CLUSTER,
    )
    from kro.graph.builder import BuildOptions

    gates = args.feature_gates or {}
    return BuildOptions(
        max_collection_size=args.max_collection_size,
        max_collection_dimension_size=args.max_collection_dimension_size,
        omit_function=bool(gates.get(FEATURE_CEL_OMIT_FUNCTION, False)),
        deletion_policy=bool(gates.get(FEATURE_DELETION_POLICY, False)),
        deferred_schema_resolution=bool(gates.get(FEATURE_DEFERRED_SCHEMA_RESOLUTION, False)),
        multi_cluster=bool(gates.get(FEATURE_MULTI_CLUSTER, False)),
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


def build_all(inputs: Inputs, options: BuildOptions) -> list[BuildResult]:
    """The RGDs, then the Graphs: a Graph may create instances of an RGD given with it."""
    from kro.cli.graph_documents import build_graphs
    from kro.cli.rgds import build_rgds as build

    results = build(inputs.rgds, inputs.resolver, options)
    return results + build_graphs(inputs.graphs, inputs.resolver, options)


# --- output ---------------------------------------------------------------------------------


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
