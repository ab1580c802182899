"""kro.testing.tempdirs: temporary directories that go away with the test process.

A test run must leave nothing in the temp folder: some of what the harness writes there is
credentials (a ServiceAccount's kubeconfig with its token). A directory from `make()` lives as
long as the caller may use it, which for a helper handing a path to a test is the rest of the
session, and is removed by `remove_all()`: the pytest plugin calls it when the session ends,
and it runs at interpreter exit in any case (a failed run, Ctrl-C, SIGTERM through the
plugin's handler). Only SIGKILL can leave one behind; `make e2e`'s leak check names it then.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

_made: list[Path] = []
_lock = threading.Lock()


def make(prefix: str) -> Path:
    """A new private (0700) directory in the temp folder, removed by `remove_all()`."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    with _lock:
        if not _made:
            atexit.register(remove_all)
        _made.append(path)
    return path


def remove_all() -> None:
    """Remove every directory `make()` made so far; safe to call more than once."""
    with _lock:
        paths = list(_made)
        _made.clear()
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
