"""kro.testing.kroprocess: `kro controller` as a real child process, for faults only a process has.

The in-process harness (kro_harness.ControllerThread) cannot be paused with SIGSTOP or killed
with SIGKILL; these tests need exactly that. `KroProcess` starts `python -m kro.cli.main
controller` with JSON logs written to a file, probes and metrics on 127.0.0.1 port 0, and reads
back what the process said: the address it serves on, its leader-election identity, and any log
event by name. Offsets into the log let a test ask "what did it log after this moment?".

The child dies with whoever started it (PR_SET_PDEATHSIG, as the control-plane components), so
a killed test run leaves no controller behind. Used by e2e tests and bench/bench_chaos.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from kro.testing.processes import die_with_parent

# Short leader-election timings keep failovers within seconds (upstream's flags, smaller values).
FAST_LEASE_ARGS = (
    "--leader-elect=true",
    "--leader-election-lease-duration=4s",
    "--leader-election-renew-deadline=3s",
    "--leader-election-retry-period=1s",
)


class KroProcess:
    """One `kro controller` process; see the module docstring."""

    def __init__(self, kubeconfig: Path, log_path: Path, args: Sequence[str] = ()) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.args = list(args)
        self.process: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None
        self.killed_at: float | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> KroProcess:
        argv = [
            sys.executable,
            "-m",
            "kro.cli.main",
            "controller",
            f"--kubeconfig={self.kubeconfig}",
            "--zap-encoder=json",
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
            *self.args,
        ]
        self._out = self.log_path.open("ab")
        self.process = subprocess.Popen(
            argv,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,  # noqa: PLW1509 (prctl only)
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None, "not started"
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def kill9(self) -> None:
        """SIGKILL and wait for the exit; `killed_at` (wall clock) ends whatever it was doing."""
        self.signal(signal.SIGKILL)
        self.wait_exit(30.0)
        self.killed_at = time.time()

    def wait_exit(self, timeout_s: float) -> int:
        assert self.process is not None, "not started"
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"kro (pid {self.pid}) did not exit within {timeout_s}s:\n{self.tail()}"
            ) from None

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM (graceful), then SIGKILL if it hangs; always closes the log."""
        try:
            process = self.process
            if process is not None and process.poll() is None:
                self.resume()  # a paused process cannot handle SIGTERM
                self.signal(signal.SIGTERM)
                try:
                    process.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    self.signal(signal.SIGKILL)
                    process.wait()
        finally:
            if self._out is not None:
                self._out.close()
                self._out = None

    # -- what it said ----------------------------------------------------------------------------

    def offset(self) -> int:
        """The log's current size: pass it to `events(since=...)` for what comes after."""
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def events(self, since: int = 0) -> Iterator[dict[str, Any]]:
        """Every JSON log record written after byte `since`."""
        if not self.log_path.exists():
            return
        with self.log_path.open("rb") as f:
            f.seek(since)
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield record

    def find(self, event: str, since: int = 0) -> list[dict[str, Any]]:
        return [r for r in self.events(since) if r.get("event") == event]

    def wait_event(self, event: str, timeout_s: float = 60.0, since: int = 0) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            hits = self.find(event, since)
            return hits[0] if hits else None

        record: dict[str, Any] = self.wait(found, timeout_s, f"log event {event!r}")
        return record

    def wait(self, probe: Callable[[], Any], timeout_s: float, what: str) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = probe()
            if value:
                return value
            if not self.alive() and self.process is not None:
                value = probe()
                if value:
                    return value
                raise AssertionError(
                    f"kro exited ({self.process.returncode}) before {what}:\n{self.tail()}"
                )
            time.sleep(0.1)
        raise AssertionError(f"no {what} within {timeout_s}s:\n{self.tail()}")

    def identity(self, timeout_s: float = 60.0) -> str:
        return str(self.wait_event("leaderelection.campaigning", timeout_s)["identity"])

    def health_url(self, timeout_s: float = 60.0) -> str:
        addresses = self.wait_event("manager.serving", timeout_s)["addresses"]
        return f"http://{addresses[0]}"

    def get(self, path: str, timeout_s: float = 1.0) -> int | None:
        """HTTP status of `path` on the probe server, None when it does not answer in time."""
        try:
            with urllib.request.urlopen(self.health_url() + path, timeout=timeout_s) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as e:
            return int(e.code)
        except (OSError, TimeoutError):
            return None

    def tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
