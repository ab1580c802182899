"""kro.cli.rbac: `kro generate rbac`, the least-privilege RBAC for each RGD and Graph given.

    kro generate rbac -f rgd.yaml [--mode standalone|aggregation] [--crd FILE] [-o yaml|json]

The graphs are built offline, as `kro validate` builds them (kro.cli.offline_io: `-f` files,
directories or `-`, the built-in schema bundle, `--crd` files, RGDs in the same input serving
each other's kinds and Graphs' instances). Each built graph then takes one path whatever it came
from: its owner (kro.cli.graph_rbac: kro for an RGD, a ServiceAccount for a Graph) says what no
rule can grant, on stderr, and prints the roles that let it apply the graph's objects.

For an RGD that is one ClusterRole, `<fullname>:controller:<rgd name>` (`--fullname`, default
`kro`, as the chart's `<fullname>`), with the very rules the controller's pre-flight checks, so
the printed role and the RGD's `PermissionsGranted` condition never disagree. kro's own needs
(RGDs, GraphRevisions, CRDs, leases, events) are not included: the chart's static role grants
them. For a Graph it is the applier's Role(s) or ClusterRole with their bindings, and the
list/watch ClusterRole kro's own watches need. `--mode aggregation` adds to kro's ClusterRoles
the label the chart's aggregated role selects (`rbac.kro.run/aggregate-to-controller: "true"`),
so applying them is enough; `--mode standalone` (default) prints them without it, to bind to
kro's ServiceAccount.

A resource or node whose target names a member cluster (MultiCluster, with
`--feature-gates=MultiCluster=true`) needs no hub rule for its kind: the member's own
credentials act there. It is left out of the roles, and comment lines (on stderr with `-o
json`) list per member cluster what its credentials must allow (kro.cli.rbac_targets); a
Graph's ServiceAccount gets a Role to `get` those clusters' Secrets (M-13). A graph without
targets prints exactly what it always did.

Exit codes: 0 ok, 1 invalid input (nothing printed), 2 usage. The graph builder, the CEL
engine and kro.controllers are imported inside the handler, so `kro --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import yaml

from kro.api.graph import GRAPH_KIND
from kro.api.names import LOCAL_CLUSTER_NAME_DEFAULT
from kro.cli import output
from kro.cli.clusters import DEFAULT_NAMESPACE as SECRETS_NAMESPACE_DEFAULT
from kro.cli.inputs import InputError
from kro.cli.offline_io import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Prefixes,
    add_input_flags,
    build_all,
    build_options,
    format_documents,
    load_inputs,
    report_failures,
)

if TYPE_CHECKING:
    from kro.cli.graph_rbac import Owner

MODE_STANDALONE: Final = "standalone"
MODE_AGGREGATION: Final = "aggregation"
MODES: Final = (MODE_STANDALONE, MODE_AGGREGATION)
OUTPUT_FORMATS: Final = ("yaml", "json")
DEFAULT_FULLNAME: Final = "kro"

DESCRIPTION: Final = """\
Print the ClusterRole that lets kro serve the given ResourceGraphDefinitions and nothing more:
their instance kind (read, watch, patch; patch of /status), each kind their resources create
(read, watch, create, patch, delete) and read-only access to the kinds their externalRefs read.
The RGD controller checks the same rules at run time and names any it lacks in the RGD's
PermissionsGranted condition.

For a Graph (kind: Graph), which applies as a ServiceAccount of its namespace rather than as
kro, it prints what that ServiceAccount needs: get, list and watch on every kind the Graph reads
or creates, and create, update, patch and delete on what it creates, as a Role and RoleBinding
in each namespace it names, or a ClusterRole and ClusterRoleBinding when it reaches a
cluster-scoped kind or a namespace it computes; then the ClusterRole with list and watch that
kro's own watches need (labelled for aggregation with --mode aggregation).

Exit status: 0 ok, 1 an RGD or Graph is invalid (nothing is printed), 2 usage error.

examples:
  kro generate rbac -f rgd.yaml --mode aggregation | kubectl apply -f -
  kro generate rbac -f platform/ -R --crd crds/ --fullname platform-kro
  kro generate rbac -f graph.yaml --mode aggregation | kubectl apply -f -
"""


class _RoleDumper(yaml.SafeDumper):
    """Block-style YAML as RBAC is usually written: lists indented under their key, and short
    lists of strings on one line."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(isinstance(item, str) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_RoleDumper.add_representer(list, _represent_list)


def format_roles(
    roles: Sequence[dict[str, Any]],
    output_format: str,
    comments: Mapping[int, Sequence[str]] | None = None,
) -> str:
    """YAML documents (lists of strings in flow style), or JSON as `kro generate crd` does.
    `comments`: YAML comment lines to put before the document at each index (at the end for
    `len(roles)`); JSON has no comments (the caller prints them on stderr)."""
    if output_format == "json":
        return format_documents(roles, output_format)
    if not comments:
        text: str = yaml.dump_all(
            roles, Dumper=_RoleDumper, sort_keys=False, default_flow_style=False
        )
        return text
    documents = [
        yaml.dump(role, Dumper=_RoleDumper, sort_keys=False, default_flow_style=False)
        for role in roles
    ]
    parts = []
    for index in range(len(documents) + 1):
        lines = "".join(f"# {line}\n" for line in (comments or {}).get(index, ()))
        if index < len(documents):
            parts.append(("---\n" if index else "") + lines + documents[index])
        elif lines:
            parts.append(lines)
    return "".join(parts)


def _generate_rbac(args: argparse.Namespace) -> int:
    if args.output not in OUTPUT_FORMATS:
        print(output.unsupported(args.output), file=sys.stderr)
        return EXIT_USAGE
    from kro.graph.resolver import SchemaSourceError

    try:
        inputs = load_inputs(args, graphs=True)
    except (InputError, SchemaSourceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    results = build_all(inputs, build_options(args))
    prefix = Prefixes(results, inputs.files)
    if report_failures(results, prefix):
        return EXIT_INVALID
    graph_bodies = iter(d.body for d in inputs.graphs)  # build_all keeps their order, last
    roles: list[dict[str, Any]] = []
    comments: dict[int, list[str]] = {}
    for result in results:
        if result.graph is None:  # not reached: report_failures reported it
            continue
        body = next(graph_bodies) if result.kind == GRAPH_KIND else None
        owner = _owner(body, args)
        for line in owner.warnings(result.graph):
            print(f"{prefix.file(result)}{line}", file=sys.stderr)
        notes = owner.notes(result.graph)
        if notes and args.output == "json":  # no comments in JSON: said on stderr instead
            for line in notes:
                print(f"{prefix.file(result)}note: {line}", file=sys.stderr)
        elif notes:
            comments.setdefault(len(roles), []).extend(notes)
        roles += owner.roles(result.graph)
    sys.stdout.write(format_roles(roles, args.output, comments))
    return EXIT_OK


def _owner(graph_body: dict[str, Any] | None, args: argparse.Namespace) -> Owner:
    """Who applies what was built: kro for an RGD; for a Graph (its document given), the
    ServiceAccount it names, in its namespace (`-n` when its metadata names none)."""
    from kro.cli.graph_documents import graph_namespace
    from kro.cli.graph_rbac import GraphOwner, RgdOwner, applier_of

    aggregation = args.mode == MODE_AGGREGATION
    if graph_body is None:
        return RgdOwner(
            aggregation=aggregation, fullname=args.fullname, local_cluster=args.local_cluster_name
        )
    return GraphOwner(
        namespace=graph_namespace(graph_body, args.namespace),
        service_account=applier_of(graph_body),
        aggregation=aggregation,
        fullname=args.fullname,
        local_cluster=args.local_cluster_name,
        secrets_namespace=args.cluster_secrets_namespace,
    )


def add_rbac_command(generate_subparsers: Any) -> None:
    """Add `rbac` to the sub-commands of `kro generate` (its `add_subparsers()` object)."""
    parser = generate_subparsers.add_parser(
        "rbac",
        help="print the least-privilege RBAC kro needs for an RGD, or a Graph's ServiceAccount",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_flags(parser)
    parser.add_argument(
        "--mode",
        choices=MODES,
        default=MODE_STANDALONE,
        help="aggregation: add the label the chart's rbac.mode=aggregation role selects; "
        "standalone (default): a plain ClusterRole to bind to kro's ServiceAccount yourself",
    )
    parser.add_argument(
        "--fullname",
        default=DEFAULT_FULLNAME,
        metavar="NAME",
        help="the chart's full name: roles are named NAME:controller:<rgd> (default: kro)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default="default",
        metavar="NS",
        help="the namespace of a Graph whose metadata names none (default: default)",
    )
    parser.add_argument(
        "--local-cluster-name",
        default=LOCAL_CLUSTER_NAME_DEFAULT,
        metavar="NAME",
        help="the hub's own name as a target: a resource targeting any other cluster needs "
        f"no role here (default: {LOCAL_CLUSTER_NAME_DEFAULT})",
    )
    parser.add_argument(
        "--cluster-secrets-namespace",
        default=SECRETS_NAMESPACE_DEFAULT,
        metavar="NS",
        help="namespace of the member clusters' Secrets, which a Graph's ServiceAccount must "
        f"read to reach them (default: {SECRETS_NAMESPACE_DEFAULT})",
    )
    parser.add_argument(
        "-o", "--output", default="yaml", metavar="FORMAT", help="yaml (default) or json"
    )
    parser.set_defaults(handler=_generate_rbac)
