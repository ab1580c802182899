"""The `kro` console script entry point."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Dispatch `kro <command>`; commands arrive with the graph compiler and controller."""
    args = sys.argv[1:] if argv is None else argv
    print("kro: no commands yet", args, file=sys.stderr)
    return 2
