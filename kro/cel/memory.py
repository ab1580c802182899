"""kro.cel.memory: the process's resident memory, as cheaply as the OS reports it.

The engine allocates an evaluation's values in C++ (the Activation's protobuf arena, freed
only with the Activation) and offers no way to cap that, so the memory budget watches the
effect instead: how far evaluations raise the process's resident set.

On Linux that is the current RSS from `/proc/self/statm`, read with `pread` on a descriptor
kept open (about 1.5 µs, independent of heap fragmentation, unlike malloc statistics).
Elsewhere the only cheap figure is the *peak* RSS (`ru_maxrss`), which moves only beyond every
earlier high-water mark: memory that was once resident and freed can be reused unnoticed.
Platforms with neither report None and the budget is off.

Resident memory is not allocated memory: what an evaluation's arena freed stays resident in
malloc's free lists (in a thread's own malloc arena above all), and the next evaluation
reuses it without raising the figure, so it could allocate that much *plus* the budget, and
a retried hostile expression would ratchet the process up by a budget each time.
`return_free_memory` hands freed memory back to the OS (glibc's `malloc_trim`) after an
evaluation failed its budget, so that each one starts from what is really in use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import Any, Final

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


def _malloc_trim() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:  # pragma: no cover - every Linux has a C library
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_trim: Final = _malloc_trim()


def return_free_memory() -> None:
    """Give the memory malloc holds free back to the OS (every malloc arena; a few
    milliseconds on a large heap, so only after an evaluation that grew a lot)."""
    if _trim is not None:
        _trim(0)
