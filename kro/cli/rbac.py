"""kro.cli.rbac: `kro generate rbac`, the least-privilege ClusterRole kro needs for an RGD.

    kro generate rbac -f rgd.yaml [--mode standalone|aggregation] [--crd FILE] [-o yaml|json]

The graph is built offline, as `kro validate` builds it (kro.cli.offline: `-f` files,
directories or `-`, the built-in schema bundle, `--crd` files, RGDs in the same input serving
each other's kinds), and its rules come from `kro.controllers.permissions.required_rules`, the
very table the controller's pre-flight checks, so the printed role and the RGD's
`PermissionsGranted` condition never disagree.

One ClusterRole per RGD, named `<fullname>:controller:<rgd name>` (`--fullname`, default `kro`,
as the chart's `<fullname>`). `--mode aggregation` adds the label the chart's aggregated role
selects (`rbac.kro.run/aggregate-to-controller: "true"`), so applying the role is enough;
`--mode standalone` (default) prints it without the label, to bind to kro's ServiceAccount.
kro's own needs (RGDs, GraphRevisions, CRDs, leases, events) are not included: the chart's
static role grants them.

A Graph's RBAC is its ServiceAccount's, not kro's: `kro.cli.graph_rbac` prints the applier's
Role(s) or ClusterRole with their bindings, and the list/watch ClusterRole kro's own watches need.

A template that creates RBAC objects gets a warning on stderr: the API server lets kro grant
only permissions it holds itself, so such an RGD needs more than its own rules.

Exit codes: 0 ok, 1 invalid input (nothing printed), 2 usage. The graph builder, the CEL
engine and kro.controllers are imported inside the handler, so `kro --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import yaml

from kro.api.graph import GRAPH_KIND
from kro.cli import output
from kro.cli.build_result import BuildResult
from kro.cli.inputs import InputError
from kro.cli.offline import (
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
    from kro.graph.model import Graph, Node

MODE_STANDALONE: Final = "standalone"
MODE_AGGREGATION: Final = "aggregation"
MODES: Final = (MODE_STANDALONE, MODE_AGGREGATION)
OUTPUT_FORMATS: Final = ("yaml", "json")
RBAC_GROUP: Final = "rbac.authorization.k8s.io"
RBAC_API_VERSION: Final = f"{RBAC_GROUP}/v1"
DEFAULT_FULLNAME: Final = "kro"
_GRANTING_KINDS: Final = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})

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


def cluster_role(
    graph: Graph, *, mode: str = MODE_STANDALONE, fullname: str = DEFAULT_FULLNAME
) -> dict[str, Any]:
    """The ClusterRole for one RGD's graph."""
    from kro.api.names import AGGREGATE_TO_CONTROLLER_VALUE, LABEL_AGGREGATE_TO_CONTROLLER
    from kro.controllers.permissions import required_rules

    metadata: dict[str, Any] = {"name": f"{fullname}:controller:{graph.rgd_name}"}
    if mode == MODE_AGGREGATION:
        metadata["labels"] = {LABEL_AGGREGATE_TO_CONTROLLER: AGGREGATE_TO_CONTROLLER_VALUE}
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": metadata,
        "rules": [rule.to_dict() for rule in required_rules(graph)],
    }


def escalation_warnings(graph: Graph) -> list[str]:
    """One line per resource that creates RBAC objects (escalation prevention applies)."""
    return [
        f"{graph.rgd_name}: resource {node_id!r} creates {node.gvk.kind} objects: the API server "
        "lets kro grant only permissions kro holds itself (or the escalate/bind verbs); grant "
        "those too"
        for node_id, node in graph.nodes.items()
        if _grants(node)
    ]


class _RoleDumper(yaml.SafeDumper):
    """Block-style YAML as RBAC is usually written: lists indented under their key, and short
    lists of strings on one line."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(isinstance(item, str) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_RoleDumper.add_representer(list, _represent_list)


def format_roles(roles: Sequence[dict[str, Any]], output_format: str) -> str:
    """YAML documents (lists of strings in flow style), or JSON as `kro generate crd` does."""
    if output_format == "json":
        return format_documents(roles, output_format)
    text: str = yaml.dump_all(roles, Dumper=_RoleDumper, sort_keys=False, default_flow_style=False)
    return text


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
    roles = []
    for result in results:
        if result.graph is None:  # not reached: report_failures reported it
            continue
        if result.kind == GRAPH_KIND:
            roles += _graph_roles(result, next(graph_bodies), args, prefix)
            continue
        for warning in escalation_warnings(result.graph):
            print(f"{prefix.file(result)}warning: {warning}", file=sys.stderr)
        roles.append(cluster_role(result.graph, mode=args.mode, fullname=args.fullname))
    sys.stdout.write(format_roles(roles, args.output))
    return EXIT_OK


def _graph_roles(
    result: BuildResult, body: dict[str, Any], args: argparse.Namespace, prefix: Prefixes
) -> list[dict[str, Any]]:
    """A Graph's applier role(s) and kro's watch role (kro.cli.graph_rbac); on stderr, why a
    ClusterRole is needed and which templates create RBAC objects."""
    from kro.cli.graph_documents import graph_namespace
    from kro.cli.graph_rbac import applier_of, cluster_wide_reasons, computed_kinds, graph_roles

    assert result.graph is not None
    graph = result.graph
    namespace = graph_namespace(body, args.namespace)
    applier = applier_of(body)
    where = f'{prefix.file(result)}Graph "{graph.rgd_name}"'
    for reason in cluster_wide_reasons(graph, namespace):
        print(f"{where}: a ClusterRole is needed: {reason}", file=sys.stderr)
    for node_id in computed_kinds(graph):
        print(
            f"{where}: warning: node {node_id!r} computes its apiVersion or kind: no rule names "
            f"it; grant ServiceAccount {namespace}/{applier} what it resolves to",
            file=sys.stderr,
        )
    for node_id, node in graph.nodes.items():
        if _grants(node):
            print(
                f"{where}: warning: node {node_id!r} creates {node.gvk.kind} objects: the API "
                f"server lets ServiceAccount {namespace}/{applier} grant only permissions it "
                "holds itself (or the escalate/bind verbs); grant those too",
                file=sys.stderr,
            )
    return graph_roles(
        graph,
        namespace,
        applier,
        aggregation=args.mode == MODE_AGGREGATION,
        fullname=args.fullname,
    )


def _grants(node: Node) -> bool:
    return (
        node.gvk.group == RBAC_GROUP
        and node.gvk.kind in _GRANTING_KINDS
        and not node.type.is_external
        and not node.type.is_value
        and not node.dynamic_type
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
        "-o", "--output", default="yaml", metavar="FORMAT", help="yaml (default) or json"
    )
    parser.set_defaults(handler=_generate_rbac)
