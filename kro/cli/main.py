"""The `kro` console script: offline tools (validate, generate, graph, render) and the controller.

Exit codes: 0 ok, 1 invalid input (with messages), 2 usage errors (argparse's own code).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from kro.cli.flags import add_controller_flags, config_from_args


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kro",
        description="kro: ResourceGraphDefinitions compiled to CRDs and reconciled by kro.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from kro.cli.explain import add_explain_command
    from kro.cli.offline import add_offline_commands
    from kro.cli.render import add_render_command

    add_offline_commands(commands)
    add_render_command(commands)
    add_explain_command(commands)
    controller = commands.add_parser(
        "controller",
        help="run the kro controller against a cluster",
        description="Run the kro controller (flags as upstream kro's controller binary).",
    )
    add_controller_flags(controller)
    controller.set_defaults(handler=_controller)
    return parser


def _controller(args: argparse.Namespace) -> int:
    from kro.cli.controller import run_controller

    try:
        return asyncio.run(run_controller(config_from_args(args)))
    except KeyboardInterrupt:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
