"""kro.cli.clusters: `kro clusters`, the fleet's registry as the caller can read it (M-07).

    kro clusters [--kubeconfig K] [--context C] [-n NAMESPACE] [--label KEY=VALUE] [--key KEY]
                 [--local-cluster-name NAME] [--timeout SECONDS] [-o text|wide|json|yaml]

Lists the hub first (under its local name, at the caller's server), then every member Secret
in the namespace that carries the label, as the controller's registry reads them
(kro.fleet.credentials, M-03): its server, whether it answers `/version` within the timeout
(with the caller's view of the Secret's credentials, so from the caller's network), its
version, and why it is refused or unreachable. The members are probed concurrently, each
bounded by `--timeout`, so one unreachable member costs the listing that timeout once.

Nothing from a Secret but its name, the server URL and the kind of credential (`token`,
`client-certificate`) is printed (M-06). Exit codes: 0 listed (refused and unreachable members
included), 1 the Secrets cannot be listed (a 403 names the namespace) or the hub cannot be
reached, 2 usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kro.api.names import (
    CLUSTER_SECRETS_KEY_DEFAULT,
    CLUSTER_SECRETS_LABEL_DEFAULT,
    LOCAL_CLUSTER_NAME_DEFAULT,
)
from kro.cli import output

if TYPE_CHECKING:
    from kro.runtime.client import Client

EXIT_OK: Final = 0
EXIT_CANNOT_LIST: Final = 1
EXIT_USAGE: Final = 2
DEFAULT_NAMESPACE: Final = "kro-system"
DEFAULT_TIMEOUT_S: Final = 5.0
TEXT_FORMATS: Final = ("text", "wide")


class CannotList(Exception):
    """The Secrets (or the hub) cannot be read; the message says which and where."""


@dataclass(frozen=True, slots=True)
class ClusterRow:
    """One line of the listing. `reason` is the refusal or the probe's failure, never a
    credential; `refused` the refusal's code (kro.fleet.credentials.REASONS)."""

    name: str
    server: str
    reachable: bool
    version: str = ""
    reason: str = ""
    refused: str = ""
    secret: str = ""
    auth: str = ""
    local: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "local": self.local,
            "secret": self.secret,
            "server": self.server,
            "reachable": self.reachable,
            "version": self.version,
            "auth": self.auth,
            "refused": self.refused,
            "reason": self.reason,
        }


def add_clusters_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register `kro clusters` on the `kro` parser's sub-commands."""
    parser = commands.add_parser(
        "clusters",
        help="list the member clusters of the fleet and whether they answer (read-only)",
        description=(
            "List the hub and the member clusters kro's registry holds (labelled Secrets "
            "with a kubeconfig), as you can read them: server, reachable, version, and why a "
            "cluster is refused or unreachable. Needs get/list on those Secrets."
        ),
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "-n",
        "--namespace",
        default=DEFAULT_NAMESPACE,
        help=f"namespace of the cluster Secrets (default: {DEFAULT_NAMESPACE})",
    )
    parser.add_argument(
        "--label",
        default=CLUSTER_SECRETS_LABEL_DEFAULT,
        help=f"key=value label of a cluster Secret (default: {CLUSTER_SECRETS_LABEL_DEFAULT})",
    )
    parser.add_argument(
        "--key",
        default=CLUSTER_SECRETS_KEY_DEFAULT,
        help=f"Secret data key holding the kubeconfig (default: {CLUSTER_SECRETS_KEY_DEFAULT})",
    )
    parser.add_argument(
        "--local-cluster-name",
        default=LOCAL_CLUSTER_NAME_DEFAULT,
        help=f"the hub's own name (default: {LOCAL_CLUSTER_NAME_DEFAULT})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long each cluster may take to answer (default: {DEFAULT_TIMEOUT_S:g})",
    )
    output.add_output_flag(parser, text=TEXT_FORMATS)
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> int:
    from kro.runtime.config import ConfigError
    from kro.runtime.errors import KubeError

    if args.output not in (*TEXT_FORMATS, *output.MACHINE_FORMATS):
        print(output.unsupported(args.output), file=sys.stderr)
        return EXIT_USAGE
    if "=" not in args.label or args.label.startswith("="):
        print(f"error: --label must be one key=value, got {args.label!r}", file=sys.stderr)
        return EXIT_USAGE
    quiet_logs()
    try:
        rows = asyncio.run(list_clusters(args))
    except CannotList as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CANNOT_LIST
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CANNOT_LIST
    except KubeError as error:
        print(f"error: cannot read from the cluster: {error}", file=sys.stderr)
        return EXIT_CANNOT_LIST
    if output.is_machine(args.output):
        document = {
            "namespace": args.namespace,
            "label": args.label,
            "clusters": [row.as_dict() for row in rows],
        }
        sys.stdout.write(output.dump(document, args.output))
    else:
        sys.stdout.write(render_table(rows, wide=args.output == "wide"))
    return EXIT_OK


async def list_clusters(args: argparse.Namespace) -> list[ClusterRow]:
    """The hub's row, then one per labelled Secret (by name), each probed concurrently."""
    from kro.runtime.client import Client

    async with await Client.from_kubeconfig(args.kubeconfig, context=args.context) as hub:
        secrets = await _secrets(hub, args.namespace, args.label)
        hub_row = ClusterRow(
            name=args.local_cluster_name, server=hub.config.server, reachable=False, local=True
        )
        local = _probe_row(hub_row, hub, args.timeout)
        members = [_member_row(secret, args.key, args.timeout) for secret in secrets]
        return list(await asyncio.gather(local, *members))


async def _secrets(hub: Client, namespace: str, label: str) -> list[dict[str, Any]]:
    from kro.fleet.registry import SECRETS
    from kro.runtime.errors import Forbidden

    try:
        items, _ = await hub.list_all(SECRETS, namespace=namespace, label_selector=label)
    except Forbidden as error:
        raise CannotList(
            f"cannot list Secrets in namespace {namespace} (with label {label}): {error.message}"
        ) from None
    return sorted(items, key=lambda s: str((s.get("metadata") or {}).get("name") or ""))


async def _member_row(secret: dict[str, Any], key: str, timeout_s: float) -> ClusterRow:
    from kro.fleet.credentials import member_connection, secret_name
    from kro.fleet.errors import ClusterRefused
    from kro.runtime.client import Client, ClientOptions

    namespace, name = secret_name(secret)
    try:
        member = member_connection(secret, key=key)
    except ClusterRefused as refusal:
        return ClusterRow(
            name=name,
            server="",
            reachable=False,
            reason=refusal.detail,
            refused=refusal.reason,
            secret=refusal.secret,
        )
    row = ClusterRow(
        name=name,
        server=member.server,
        reachable=False,
        secret=f"{namespace}/{name}",
        auth=member.auth,
    )
    # One attempt: "reachable" is what the member answers now, not after retries.
    options = ClientOptions(
        connect_timeout_s=timeout_s,
        request_timeout_s=timeout_s,
        max_retries=0,
        user_agent="kro-cli",
    )
    async with Client.from_config(member.config, options) as client:
        return await _probe_row(row, client, timeout_s)


async def _probe_row(row: ClusterRow, client: Client, timeout_s: float) -> ClusterRow:
    from dataclasses import replace

    from kro.fleet.probe import ProbeFailed, probe

    try:
        version = await probe(client, timeout_s=timeout_s, discovery=False)
    except ProbeFailed as failure:
        return replace(row, reachable=False, reason=str(failure))
    return replace(row, reachable=True, version=version)


def render_table(rows: Sequence[ClusterRow], *, wide: bool = False) -> str:
    """Aligned columns, kubectl style; `wide` adds the Secret and the kind of credential and
    gives refusals in full (the narrow table gives their code)."""
    header = ["NAME", "SERVER", "REACHABLE", "VERSION", "REASON"]
    if wide:
        header[1:1] = ["SECRET", "AUTH"]
    lines = [header]
    for row in rows:
        reason = row.reason
        if row.refused:
            reason = f"refused ({row.refused}): {row.reason}" if wide else f"refused: {row.refused}"
        cells = [
            row.name,
            row.server or "-",
            "yes" if row.reachable else "no",
            row.version or "-",
            reason or "-",
        ]
        if wide:
            cells[1:1] = [row.secret or "-", row.auth or "-"]
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "".join(
        "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        + "\n"
        for line in lines
    )


def quiet_logs() -> None:
    """Errors only, to stderr: stdout is the result; a library's warning ends in an error anyway."""
    from kro.runtime import logging as kro_logging

    if not kro_logging.is_configured():
        kro_logging.configure("console", "error")
