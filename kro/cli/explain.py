"""kro.cli.explain: `kro explain` — why is this instance (or RGD, or Graph) not ready.

For an instance or a Graph it runs the controller's own pass, dry, against the live objects
(`explain_dryrun`), so each node's state is what kro itself would conclude; the first line is
the root cause. A node sent to a member cluster is read there as the caller may read it
(`explain_places`), and every node names its cluster (M-07). For an RGD it shows why it is not
Active (`explain_source`).

It only reads (GET and LIST), so the chart's `view` role is enough: what that role cannot read
is worked around and noted, never by failing the command. docs/explain.md is the user's guide
(usage, permissions, exit codes); Secret data is never printed (`explain_format.SecretMask`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from kro.cli.clusters import quiet_logs
from kro.cli.explain_format import OUTPUT_FORMATS, SecretMask, render
from kro.cli.explain_report import GraphReport, InstanceReport, RGDReport

if TYPE_CHECKING:
    from kro.cli.explain_places import ClusterAccess

EXIT_OK: Final = 0
EXIT_CANNOT_EXPLAIN: Final = 1
EXIT_USAGE: Final = 2
RGD_WORDS: Final = frozenset({"rgd", "rgds", "resourcegraphdefinition", "resourcegraphdefinitions"})
DEFAULT_NAMESPACE: Final = "default"
_CLUSTER_FLAGS: Final = (  # flag, ClusterAccess field, metavar, help
    ("--cluster-secrets-namespace", "namespace", "NS", "namespace of the member clusters' Secrets"),
    ("--cluster-secrets-label", "label", "KEY=VALUE", "label of a member cluster's Secret"),
    ("--cluster-secrets-key", "key", "KEY", "Secret data key holding the kubeconfig"),
    ("--local-cluster-name", "local_name", "NAME", "the hub's own name as a target"),
    ("--cluster-timeout", "timeout_s", "SECONDS", "how long a member cluster may take to answer"),
)


class UsageError(ValueError):
    """The command line does not name one instance or one RGD."""


@dataclass(frozen=True, slots=True)
class Request:
    """What to explain: an RGD (`kind` is None) or an instance of `kind`."""

    name: str
    kind: str | None = None


def add_explain_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register `kro explain` on the `kro` parser's sub-commands."""
    parser = commands.add_parser(
        "explain",
        help="explain why an instance or a ResourceGraphDefinition is not ready (read-only)",
        description=(
            "Explain an instance (KIND/NAME), a ResourceGraphDefinition (rgd NAME) or a Graph "
            "(graph NAME) from the live cluster: the graph with each resource's state, and the "
            "root cause first. Needs only read access (the view role)."
        ),
    )
    parser.add_argument(
        "target",
        metavar="KIND/NAME",
        help="the instance, e.g. webapp/my-app or webapps.kro.run/my-app; `rgd` followed "
        "by the ResourceGraphDefinition's name; or `graph` followed by the Graph's name",
    )
    parser.add_argument("name", nargs="?", metavar="NAME", help="a name, after KIND, rgd or graph")
    parser.add_argument(
        "-n",
        "--namespace",
        help="the instance's or Graph's namespace (default: the context's, or default)",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "-o", "--output", choices=OUTPUT_FORMATS, default="text", help="output format"
    )
    # Where member clusters are registered, as the controller's flags of the same names say
    # (and `kro clusters` reads): explain reaches a targeted node's cluster through its Secret.
    from kro.cli.explain_places import ClusterAccess

    defaults = ClusterAccess()
    for flag, field, metavar, what in _CLUSTER_FLAGS:
        default = getattr(defaults, field)
        shown = f"{default:g}" if isinstance(default, float) else default
        parser.add_argument(
            flag,
            dest=f"cluster_{field}",
            type=type(default),
            default=default,
            metavar=metavar,
            help=f"{what} (default: {shown})",
        )
    parser.set_defaults(handler=_handler)


def cluster_access(args: argparse.Namespace) -> ClusterAccess:
    """The registry as the command line describes it (defaults: the controller's)."""
    from kro.cli.explain_places import ClusterAccess

    return ClusterAccess(
        **{field: getattr(args, f"cluster_{field}") for _, field, *_ in _CLUSTER_FLAGS}
    )


def parse_request(target: str, name: str | None) -> Request:
    """`KIND/NAME`, `KIND NAME`, `rgd NAME` or `rgd/NAME`."""
    kind, slash, rest = target.partition("/")
    if slash:
        if name is not None or not kind or not rest or "/" in rest:
            raise UsageError(f'expected KIND/NAME or "rgd NAME", got "{target}"')
        name = rest
    elif name is None:
        raise UsageError(f'name the object: KIND/NAME or "rgd NAME" (got only "{target}")')
    return Request(name, None if kind.lower() in RGD_WORDS else kind)


def context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace of the kubeconfig context, as kubectl defaults it; `default` if none."""
    path = kubeconfig or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
    candidate = Path(path) if path else Path.home() / ".kube" / "config"
    try:
        config = yaml.safe_load(candidate.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return DEFAULT_NAMESPACE
    if not isinstance(config, dict):
        return DEFAULT_NAMESPACE
    wanted = context or config.get("current-context")
    for entry in config.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == wanted:
            namespace = (entry.get("context") or {}).get("namespace")
            return str(namespace) if namespace else DEFAULT_NAMESPACE
    return DEFAULT_NAMESPACE


async def explain(
    request: Request, args: argparse.Namespace, mask: SecretMask
) -> InstanceReport | RGDReport | GraphReport:
    """Connect and explain; raises ExplainError or KubeError when it cannot."""
    from kro.cli.explain_cluster import Target, explain_instance
    from kro.cli.explain_graph import GRAPH_WORDS, explain_graph
    from kro.cli.explain_source import explain_rgd
    from kro.runtime.client import Client

    access = cluster_access(args)
    async with await Client.from_kubeconfig(args.kubeconfig, context=args.context) as client:
        if request.kind is None:
            return await explain_rgd(client, request.name)
        namespace = args.namespace or context_namespace(args.kubeconfig, args.context)
        if request.kind.lower() in GRAPH_WORDS:
            return await explain_graph(client, request.name, namespace, mask, access)
        target = Target(request.kind, request.name, namespace)
        return await explain_instance(client, target, mask, access)


def _handler(args: argparse.Namespace) -> int:
    from kro.cli.explain_source import ExplainError
    from kro.runtime.errors import KubeError

    try:
        request = parse_request(args.target, args.name)
        label = args.cluster_label
        if "=" not in label or label.startswith("="):
            raise UsageError(f"--cluster-secrets-label must be one key=value, got {label!r}")
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    quiet_logs()
    mask = SecretMask()
    try:
        report = asyncio.run(explain(request, args, mask))
    except (ExplainError, KubeError) as error:
        reading = "cannot read from the cluster: " if isinstance(error, KubeError) else ""
        print(f"error: {reading}{mask.apply(str(error))}", file=sys.stderr)
        return EXIT_CANNOT_EXPLAIN
    try:
        sys.stdout.write(render(report, args.output, mask))
        sys.stdout.flush()
    except BrokenPipeError:  # `kro explain ... | head`: the reader has all it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK
