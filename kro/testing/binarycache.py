"""kro.testing.binarycache: where the control-plane binaries are cached, outside the repository.

Two sides ask: `testbin`, which builds them there, and `processes`, whose leak check after a run
looks for processes still running an executable from there. The location is its own module so
that the process helpers, which the lock file and the builder both use, need nothing of the
builder.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """Where built binaries live: $KRO_TESTBIN_CACHE or ~/.cache/kro-testbin."""
    override = os.environ.get("KRO_TESTBIN_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "kro-testbin"
