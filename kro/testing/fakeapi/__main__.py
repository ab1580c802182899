"""`python -m kro.testing.fakeapi [--port N]`: serve the fake API server from its own process,
printing its URL (a benchmark's client then measures only itself)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from .server import serve_forever


def main() -> None:
    parser = argparse.ArgumentParser(description="serve the fake API server on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_forever(args.port))


if __name__ == "__main__":
    main()
