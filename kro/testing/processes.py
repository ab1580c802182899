"""kro.testing.processes: child processes of the local cluster, and how they end.

A control-plane component must never outlive whoever started it: each child runs in its own
session (so a Ctrl-C on the terminal reaches only the harness, which then stops children in
order) and, unless the cluster is deliberately detached (`cluster up`), asks the kernel to kill
it when the harness dies (PR_SET_PDEATHSIG), which covers `kill -9` of pytest as well.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kro.testing.binarycache import cache_root

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn for a child that must not outlive us: the kernel kills it when we die."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (envtest's approach; callers retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def is_port_free(host: str, port: int) -> bool:
    """Whether we could listen on host:port now, with SO_REUSEADDR as servers do (a socket in
    TIME_WAIT does not count as busy; a listener on 0.0.0.0 does)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP `port`, on any address, from /proc/net/tcp{,6}."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            listening = len(fields) > 9 and fields[3] == "0A"  # TCP_LISTEN
            if listening and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def port_holder(port: int) -> tuple[int, str] | None:
    """The pid and command line of a process listening on TCP `port`, found through /proc, so
    that "port 8078 is busy" can say by whom; None when nobody listens or we cannot see it."""
    targets = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not targets:
        return None
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and targets & _socket_links(entry):
            with contextlib.suppress(OSError):
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
                return int(entry.name), cmdline.decode(errors="replace").strip()
    return None


def _socket_links(process: Path) -> set[str]:
    """What the open file descriptors of /proc/<pid> point to (fds close as we look)."""
    links: set[str] = set()
    try:
        fds = list((process / "fd").iterdir())
    except OSError:
        return links
    for fd in fds:
        with contextlib.suppress(OSError):
            links.add(os.readlink(fd))
    return links


def start(
    name: str, argv: Sequence[str], log_dir: Path, *, detached: bool = False
) -> subprocess.Popen[bytes]:
    """Start one component with its output in `<log_dir>/<name>.log`."""
    log = (log_dir / f"{name}.log").open("ab")
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=None if detached else die_with_parent,  # noqa: PLW1509 (prctl only)
        )
    finally:
        log.close()


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


def stop_pid(
    pid: int, *, timeout_s: float = 20.0, reap: Callable[[], object] | None = None
) -> None:
    """SIGTERM, wait up to `timeout_s`, then SIGKILL (envtest's process.Stop)."""
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if reap is not None:
                reap()
            if not is_alive(pid):
                return
            time.sleep(0.05)


def log_tail(path: Path, lines: int = 30) -> str:
    """The end of a component's log, for error messages when it failed to start."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def control_plane_processes(
    binary_root: Path, run_dirs: Sequence[str] = ()
) -> list[tuple[int, str]]:
    """Running processes whose executable lives under `binary_root` (the testbin cache);
    with `run_dirs`, only those whose command line names one of those cluster directories."""
    found: list[tuple[int, str]] = []
    root = str(binary_root.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if not exe.startswith(root) or not is_alive(int(entry.name)):
            continue
        if run_dirs and not any(d in cmdline for d in run_dirs):
            continue
        found.append((int(entry.name), exe))
    return found


TEMP_PREFIX = "kro-"
"""Everything the harness and kro's tooling put in the temp folder starts with this."""


def temp_entries(temp_dir: Path | None = None) -> set[str]:
    """The names in the temp folder ($TMPDIR, else /tmp) that start with TEMP_PREFIX."""
    root = temp_dir or Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        return {p.name for p in root.iterdir() if p.name.startswith(TEMP_PREFIX)}
    return set()


def new_temp_entries(before: set[str], temp_dir: Path | None = None) -> list[Path]:
    """Entries that were not there `before`, as paths, in name order."""
    root = temp_dir or Path(tempfile.gettempdir())
    return [root / name for name in sorted(temp_entries(root) - before)]


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m kro.testing.processes`: after a test run, what it left behind.

    --record-temp F     before the run: write the temp folder's `kro-*` entries to F.
    --temp-before F     after it: fail on a `kro-*` entry that F does not list, naming it.
    --run-dirs-file F   fail when control-plane processes of the clusters listed in F (one
                        run directory per line) still run; without it, of any cluster.
    --no-processes      only the temp folder check (the run reused someone else's cluster).
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m kro.testing.processes")
    parser.add_argument("--run-dirs-file", type=Path, default=None)
    parser.add_argument("--record-temp", type=Path, default=None)
    parser.add_argument("--temp-before", type=Path, default=None)
    parser.add_argument("--no-processes", action="store_true")
    args = parser.parse_args(argv)
    if args.record_temp is not None:
        args.record_temp.write_text("".join(f"{name}\n" for name in sorted(temp_entries())))
        return 0
    failed = False
    if args.temp_before is not None:
        failed = _check_temp(args.temp_before)
    if args.no_processes:
        return 1 if failed else 0
    run_dirs: list[str] = []
    if args.run_dirs_file is not None:
        if not args.run_dirs_file.exists():
            print("no cluster was started by this run")
            return 1 if failed else 0
        run_dirs = [line for line in args.run_dirs_file.read_text().splitlines() if line]
    leaked = control_plane_processes(cache_root(), run_dirs)
    for pid, exe in leaked:
        print(f"leaked control-plane process: pid {pid} {exe}")
    if not leaked:
        print("no control-plane process left behind")
    return 1 if leaked or failed else 0


def _check_temp(before_file: Path) -> bool:
    """Print what the run left in the temp folder; True if anything."""
    try:
        before = set(before_file.read_text().split())
    except OSError:
        print(f"no record of the temp folder before the run ({before_file}): not checked")
        return False
    left = new_temp_entries(before)
    for path in left:
        print(f"left in the temp folder: {path}")
    if not left:
        print(f"nothing left in the temp folder ({tempfile.gettempdir()})")
    return bool(left)


if __name__ == "__main__":
    raise SystemExit(main())
