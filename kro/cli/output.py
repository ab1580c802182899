"""kro.cli.output: `-o json|yaml`, the machine-readable results of the offline commands.

A CI job should not parse prose. Every command that reports something (`validate`, `graph`,
`render`) can print it as one JSON object or one YAML document on standard output instead,
with the same exit code as the text form; the shapes are documented in docs/cli.md and
keep their keys stable (camelCase, like Kubernetes objects).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any, Final, TextIO

import yaml

MACHINE_FORMATS: Final = ("json", "yaml")


def add_output_flag(
    parser: argparse.ArgumentParser,
    *,
    text: Sequence[str] = ("text",),
    aliases: Sequence[str] = (),
) -> tuple[str, ...]:
    """`-o/--output FORMAT`: the command's text form(s) (the first is the default), json, yaml.

    Returns the accepted formats; the command checks the value itself so that an unknown one
    is `unsupported output format: x` (exit 2) as upstream words it, for every command alike.
    """
    choices = (*text, *MACHINE_FORMATS)
    parser.add_argument(
        "-o",
        "--output",
        *aliases,
        dest="output",
        default=choices[0],
        metavar="FORMAT",
        help=f"output format: {', '.join(choices)} (default: {choices[0]})",
    )
    return choices


def unsupported(output: str) -> str:
    return f"error: unsupported output format: {output}"


def is_machine(output: str) -> bool:
    return output in MACHINE_FORMATS


def dump(data: Any, output: str) -> str:
    """`data` as pretty JSON or block-style YAML, keys in the order given."""
    if output == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    text: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return text


def write(data: Any, output: str, out: TextIO) -> None:
    out.write(dump(data, output))
