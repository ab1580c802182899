"""kro.testing.runguard: what `make run` checks before it starts, and how it always cleans up.

`make run` binds two fixed ports and starts a control plane in a temporary directory. Before
this module, a second `make run` waited 180 s and then crashed on a busy port, and every run
left its directory (62 MB of etcd data, certificates and logs) in the temp folder. Now:

- one `make run` at a time: a lock (kro.testing.lockfile) in $KRO_RUN_STATE_DIR or
  ~/.cache/kro-run; the second comer says who holds it and exits 1 at once;
- its ports are checked before anything is built, and a busy one is named with its owner;
- SIGTERM and SIGHUP end it the way Ctrl-C does, so its clean-up runs, and a further signal
  during the clean-up cannot cut it short; a run killed with SIGKILL leaves its directory
  behind, and the next run removes it (its path is in the lock's record).

runlocal.py does the running; this module only decides whether it may, and guards the exit.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from kro.testing import processes
from kro.testing.lockfile import Holder, LockFile
from kro.testing.progress import format_duration

RUN_DIR_PREFIX = "kro-run-"
_TERMINATING = (signal.SIGTERM, signal.SIGHUP)


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def fail(message: str) -> None:
    """A one-line error for the user (no traceback: these are not bugs)."""
    print(f"make run: {message}", file=sys.stderr, flush=True)


def already_running(lock: LockFile) -> str:
    """Why this `make run` stops at once: who holds the lock, and what to do about it."""
    holder = lock.holder()
    if holder is None or not holder.alive:
        return (
            f"already running: another make run holds {lock.path} but has not said who it "
            "is yet; try again in a moment"
        )
    started = time.strftime("%H:%M:%S", time.localtime(holder.since))
    text = (
        f"already running as pid {holder.pid}, started at {started} "
        f"({format_duration(time.time() - holder.since)} ago)"
    )
    kubeconfig = holder.details.get("kubeconfig")
    if kubeconfig:
        text += f"; its cluster: export KUBECONFIG={kubeconfig}"
    return text + f". Stop it first (Ctrl-C in its terminal, or kill {holder.pid})."


def split_address(address: str) -> tuple[str, int] | None:
    """`127.0.0.1:8078` -> ("127.0.0.1", 8078), `:8078` -> ("0.0.0.0", 8078), `[::1]:8078` ->
    ("::1", 8078); None for "0" (the server is off) or no port."""
    host, _, port = address.rpartition(":")
    if not port.isdigit() or address == "0":
        return None
    return host.strip("[]") or "0.0.0.0", int(port)


def busy_ports(addresses: Sequence[tuple[str, str]]) -> list[str]:
    """One message per (flag, address) whose port another process holds, naming that process
    when /proc shows it."""
    messages = []
    for flag, address in addresses:
        parsed = split_address(address)
        if parsed is None or processes.is_port_free(*parsed):
            continue
        port = parsed[1]
        owner = processes.port_holder(port)
        if owner is None:
            who = "another process (one this user cannot see)"
        else:
            pid, command = owner
            shown = command if len(command) <= 80 else command[:77] + "..."
            who = f"pid {pid} ({shown})"
        messages.append(
            f"port {port} ({flag}={address}) is already in use by {who}; stop it, or pick "
            f"another port: make run RUN_ARGS='{flag}=127.0.0.1:<port>'"
        )
    return messages


def remove_leftovers(previous: Holder | None) -> None:
    """Remove the temporary directory of a run that died without cleaning up (SIGKILL, a
    crash). Only a directory that `make run` itself made, in the temp folder, is removed."""
    if previous is None:
        return
    path = Path(previous.details.get("run_dir", ""))
    temp = Path(tempfile.gettempdir()).resolve()
    if not path.name.startswith(RUN_DIR_PREFIX) or path.resolve().parent != temp:
        return
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
        say(f"removed {path}, left behind by make run pid {previous.pid}, which did not exit")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def interrupt_on_termination() -> Iterator[None]:
    """SIGTERM and SIGHUP (a closed terminal) raise KeyboardInterrupt, as Ctrl-C does, so that
    every `finally` runs. A signal ignored when we started stays ignored (`nohup make run`).
    Main thread only."""
    previous = {
        sig: signal.signal(sig, _interrupt)
        for sig in _TERMINATING
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def shielded(doing: str) -> Iterator[None]:
    """While cleaning up, a further Ctrl-C, SIGTERM or SIGHUP says what is being done instead
    of cutting the clean-up short (SIGKILL still can; the next run finishes the job)."""

    def still(signum: int, frame: FrameType | None) -> None:
        say(f"still {doing}; one moment")

    previous = {sig: signal.signal(sig, still) for sig in (signal.SIGINT, *_TERMINATING)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
