"""The `kro` console script entry point."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Dispatch `kro <command>`; commands arrive with the graph compiler and controller."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["run-local"]:
        print(
            "kro: the controller is not implemented yet, so `make run` has nothing to run.\n"
            "The local control plane works: python -m kro.testing.cluster up",
            file=sys.stderr,
        )
        return 1
    print("kro: no commands yet", args, file=sys.stderr)
    return 2
