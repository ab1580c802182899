"""What a scenario of the controller benchmark is to the command line: a name for `--scenario`,
the run options it takes, any flags of its own, and a run that prints and writes its result."""

from __future__ import annotations

import argparse
from typing import Protocol

OPTIONS = {
    "fight": "--fight",
    "floor": "--floor",
    "restart": "--restart",
    "scaling": "--scaling",
    "replicas": "--replicas",
}
"""The run options the command line offers every scenario (argparse dest -> flag). A scenario
says which it takes; the command line refuses the others for it."""


class Scenario(Protocol):
    """One `--scenario`. Registered in scenarios/__init__.py under its name."""

    @property
    def name(self) -> str:
        """Its `--scenario` value."""
        ...

    @property
    def options(self) -> frozenset[str]:
        """The keys of OPTIONS it takes."""
        ...

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the flags only it reads (called once per parser, for every scenario)."""
        ...

    def check(self, args: argparse.Namespace) -> str | None:
        """Why these arguments make no run of it (a parser error), or None."""
        ...

    def run(self, args: argparse.Namespace) -> None:
        """Run it (on $KUBECONFIG or control planes of its own), print and write the result."""
        ...


def refused_options(scenario: Scenario, args: argparse.Namespace) -> list[str]:
    """The flags on this command line that `scenario` does not take."""
    return [
        flag
        for dest, flag in OPTIONS.items()
        if getattr(args, dest) and dest not in scenario.options
    ]
