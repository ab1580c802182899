"""The `kro` command: offline tools (validate, generate, graph, render) and the controller.

Exit codes: 0 ok, 1 invalid input (with messages), 2 usage errors (argparse's own code).
`kro controller` is parsed by kro.cli.flags' own parser, whose usage errors are one line (its
thirty flags would make argparse's usage block a screenful), and exits 1, with one line, when
its environment is wrong (kro.cli.controller).

Each command lives in its own module and adds itself with one `add_*_command(commands)` call,
listed in `COMMANDS` below with the one-line help `kro --help` shows. Only the module of the
command being run is imported (`kro --help` imports none), and the heavy ones (graph builder,
CEL engine, HTTP client) only inside the handlers, so `kro --help` and `kro validate` start
fast: a CI job pays that start-up on every call (docs/performance.md has the figures).

Process-wide behaviour a command-line tool owes its pipes lives here: a reader that closes
early (`kro generate crd -f x | head -1`) ends the command quietly, and Ctrl-C exits 130
without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

EXIT_BROKEN_PIPE: Final = 141  # 128 + SIGPIPE, what a shell reports for a killed writer
EXIT_INTERRUPTED: Final = 130  # 128 + SIGINT

DESCRIPTION: Final = """\
kro compiles ResourceGraphDefinitions (RGDs) into CRDs and reconciles every instance into its
resources. The offline commands check and explain RGDs without a cluster, for CI and for
authors; `kro controller` runs the controller.
"""


class _VersionAction(argparse.Action):
    """`--version`: the installed package's version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print the kro version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"kro {package_version()}")
        parser.exit()


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kro")
    except PackageNotFoundError:
        from kro import __version__

        return __version__


def add_controller_command(commands: Any) -> None:
    """Listed in `kro --help`; `main` hands `kro controller ...` to kro.cli.flags' parser."""
    from kro.cli.flags import add_controller_flags

    controller = commands.add_parser(
        "controller",
        help="run the kro controller against a cluster",
        description="Run the kro controller. Flags are spelled and defaulted as upstream "
        "kro's controller binary takes them, so the Helm chart's values work unchanged.",
    )
    add_controller_flags(controller)
    controller.set_defaults(handler=_controller)


def _run_controller(argv: Sequence[str]) -> int:
    from kro.cli.flags import controller_args

    return _controller(controller_args(argv))


class Command(NamedTuple):
    """A subcommand as `kro --help` lists it, and where its parser is defined.

    `adder` ("module:function") adds the full subparser; it is imported only when that command
    runs (or asks for its own --help), so `kro --help` and `kro validate` never load `explain`'s
    cluster client or the controller's flags (tests/cli/test_lazy_commands.py keeps `help` equal
    to the subparser's own).
    """

    name: str
    help: str
    adder: str


COMMANDS: Final = (
    Command(
        "validate",
        "check ResourceGraphDefinitions as a cluster would (offline)",
        "kro.cli.offline:add_validate_command",
    ),
    Command("generate", "generate artifacts from an RGD", "kro.cli.offline:add_generate_command"),
    Command(
        "graph",
        "print an RGD's resource order, apply-order waves and dependencies",
        "kro.cli.offline:add_graph_command",
    ),
    Command(
        "render",
        "print the resources an instance would produce (offline)",
        "kro.cli.render:add_render_command",
    ),
    Command(
        "explain",
        "explain why an instance or a ResourceGraphDefinition is not ready (read-only)",
        "kro.cli.explain:add_explain_command",
    ),
    Command(
        "clusters",
        "list the member clusters of the fleet and whether they answer (read-only)",
        "kro.cli.clusters:add_clusters_command",
    ),
    Command(
        "controller",
        "run the kro controller against a cluster",
        "kro.cli.main:add_controller_command",
    ),
)


def command_of(arguments: Sequence[str]) -> str | None:
    """The subcommand `arguments` name: the first that is not an option (the top-level parser
    has only -h and --version, neither of which takes a value)."""
    return next((a for a in arguments if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `kro` parser with `command`'s full subparser; the others are listed by name and
    help only (`COMMANDS`), their modules left unimported."""
    parser = argparse.ArgumentParser(
        prog="kro",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `kro COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for entry in COMMANDS:
        if entry.name == command:
            module, _, function = entry.adder.partition(":")
            getattr(importlib.import_module(module), function)(commands)
        else:
            commands.add_parser(entry.name, help=entry.help, add_help=False)
    return parser


def _controller(args: argparse.Namespace) -> int:
    import asyncio

    from kro.runtime.tlsprocess import import_aiohttp_without_default_trust

    import_aiohttp_without_default_trust()  # before anything imports aiohttp: ~90 ms of CPU
    from kro.cli.controller import run_controller
    from kro.cli.flags import config_from_args

    try:
        return asyncio.run(run_controller(config_from_args(args)))
    except KeyboardInterrupt:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["controller"]:
        return _run_controller(arguments[1:])
    parser = build_parser(command_of(arguments))
    args = parser.parse_args(arguments)
    try:
        code: int = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture it)
        pass


if __name__ == "__main__":
    raise SystemExit(main())
