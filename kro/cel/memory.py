"""kro.cel.memory: the process's resident memory, as cheaply as the OS reports it.

The engine allocates an evaluation's values in C++ (the Activation's protobuf arena, freed
only with the Activation) and offers no way to cap that, so the memory budget watches the
effect instead: how far evaluations raise the process's resident set.

On Linux that is the current RSS from `/proc/self/statm`, read with `pread` on a descriptor
kept open (about 1.5 µs, independent of heap fragmentation, unlike malloc statistics).
Elsewhere the only cheap figure is the *peak* RSS (`ru_maxrss`), which moves only beyond every
earlier high-water mark: memory that was once resident and freed can be reused unnoticed.
Platforms with neither report None and the budget is off.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Final

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows
    resource = None  # type: ignore[assignment]

_STATM: Final = "/proc/self/statm"
_PAGE_BYTES: Final = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# Linux and most Unixes report ru_maxrss in KiB, macOS in bytes.
_MAXRSS_UNIT: Final = 1 if sys.platform == "darwin" else 1024


class _Statm:
    """The open `/proc/self/statm` of this process (reopened after a fork: the path was
    resolved to the parent's pid when it was opened)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.fd: int | None = None
        self.unavailable = not os.path.exists(_STATM)

    def read_resident_pages(self) -> int | None:
        if self.unavailable:
            return None
        fd = self.fd
        if fd is None:
            with self._lock:
                if self.fd is None:
                    self.fd = os.open(_STATM, os.O_RDONLY | os.O_CLOEXEC)
                fd = self.fd
        return int(os.pread(fd, 128, 0).split()[1])

    def forget(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd = None
        self._lock = threading.Lock()


_statm: Final = _Statm()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_statm.forget)


def resident_bytes() -> int | None:
    """Current resident memory of the process (peak where the OS offers no current
    figure), or None where neither is available."""
    pages = _statm.read_resident_pages()
    if pages is not None:
        return pages * _PAGE_BYTES
    if resource is None:  # pragma: no cover
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _MAXRSS_UNIT
