"""`python -m tools.runlocal` (what `make run` runs), as a user meets it, end to end.

Stand-in control-plane binaries (shell scripts that only sleep, named by KUBEBUILDER_ASSETS)
make the cluster start wait forever without building or running anything real, which is all
these tests need: a first run that is busy starting, a second one next to it, a busy port, and
the temporary directory after a signal. TMPDIR points into the test's own directory, so
"nothing left in the temp folder" is checked exactly.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kro.testing import processes, testbin
from kro.testing.lockfile import Holder, LockFile

FAKE_BINARY = "#!/bin/sh\nexec sleep 600\n"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Run:
    """One `runlocal` process, with its output in files (read while it runs)."""

    process: subprocess.Popen[bytes]
    out: Path
    err: Path

    def output(self) -> str:
        return self.out.read_text() + self.err.read_text()

    def wait_for(self, text: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.output():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} in:\n{self.output()}")
            time.sleep(0.1)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    assets = tmp_path / "assets"
    assets.mkdir()
    for name in testbin.BINARY_NAMES:
        (assets / name).write_text(FAKE_BINARY)
        (assets / name).chmod(0o755)
    (tmp_path / "tmp").mkdir()
    environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environment.update(
        KUBEBUILDER_ASSETS=str(assets),
        KRO_TESTBIN_CACHE=str(tmp_path / "cache"),
        KRO_RUN_STATE_DIR=str(tmp_path / "state"),
        KRO_PROGRESS_INTERVAL_S="0.5",
        TMPDIR=str(tmp_path / "tmp"),
    )
    return environment


@pytest.fixture
def start(tmp_path: Path, env: dict[str, str]) -> Iterator[Callable[..., Run]]:
    runs: list[Run] = []

    def start(*args: str) -> Run:
        index = len(runs)
        out, err = tmp_path / f"run{index}.out", tmp_path / f"run{index}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "tools.runlocal", *args, *_free_ports(args)],
                cwd=REPO,  # as `make run` runs it: tools/ is the checkout's, not installed
                env=env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                preexec_fn=_as_in_a_terminal,  # noqa: PLW1509 (signal dispositions only)
            )
        runs.append(Run(process, out, err))
        return runs[-1]

    yield start
    for run in runs:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()


def _as_in_a_terminal() -> None:
    """Ctrl-C reaches a `make run` in a terminal, but a process started in the background by a
    non-interactive shell inherits SIGINT ignored (and then Python ignores it too); the tests
    must not depend on how pytest itself was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _free_ports(args: tuple[str, ...]) -> list[str]:
    """Ports nobody uses for the flags the test does not set (a real `make run` may hold the
    defaults)."""
    return [
        f"{flag}=127.0.0.1:{processes.free_port()}"
        for flag in ("--metrics-bind-address", "--health-probe-bind-address")
        if not any(a.startswith(flag) for a in args)
    ]


def _record(env: dict[str, str]) -> Holder:
    holder = LockFile(Path(env["KRO_RUN_STATE_DIR"]) / "run.lock").holder()
    assert holder is not None
    return holder


@pytest.mark.timeout(180)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_second_run_exits_at_once_and_the_first_cleans_up_on_a_signal(
    start: Callable[..., Run], env: dict[str, str], sig: signal.Signals
) -> None:
    first = start()
    first.wait_for("[cluster] still waiting for etcd to become ready")
    run_dir = Path(_record(env).details["run_dir"])
    children = json.loads((run_dir / "cluster.json").read_text())["pids"]
    assert run_dir.parent == Path(env["TMPDIR"])
    assert children

    began = time.monotonic()
    second = start()
    assert second.process.wait(timeout=60) == 1
    assert time.monotonic() - began < 30  # not after a 180 s start timeout
    pid = first.process.pid
    assert re.fullmatch(
        rf"make run: already running as pid {pid}, started at \d\d:\d\d:\d\d \(\d+s ago\)\. "
        rf"Stop it first \(Ctrl-C in its terminal, or kill {pid}\)\.\n",
        second.err.read_text(),
    ), second.output()
    assert second.out.read_text() == ""

    first.process.send_signal(sig)
    assert first.process.wait(timeout=60) == 0, first.output()
    assert f"removed {run_dir}" in first.output()
    assert list(Path(env["TMPDIR"]).iterdir()) == []
    assert not any(processes.is_alive(pid) for pid in children.values())
    assert "Traceback" not in first.output()


@pytest.mark.timeout(120)
def test_progress_is_printed_while_the_cluster_starts(
    start: Callable[..., Run],
) -> None:
    run = start()
    run.wait_for("[cluster] starting etcd")
    run.wait_for("[cluster] still waiting for etcd to become ready")
    time.sleep(1.2)  # a few more intervals of 0.5 s
    run.process.send_signal(signal.SIGINT)
    run.process.wait(timeout=60)
    lines = [line for line in run.output().splitlines() if "still waiting for etcd" in line]
    assert len(lines) >= 2
    assert "its log:" in lines[0]
    assert lines[0].endswith("etcd.log")


@pytest.mark.timeout(120)
def test_a_busy_port_is_named_before_anything_starts(
    start: Callable[..., Run], env: dict[str, str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        run = start(f"--metrics-bind-address=127.0.0.1:{port}")
        assert run.process.wait(timeout=60) == 1
    err = run.err.read_text()
    assert err.startswith(
        f"make run: port {port} (--metrics-bind-address=127.0.0.1:{port}) is already in use "
        f"by pid {os.getpid()} ("
    ), err
    assert err.count("\n") == 1  # one line, no traceback
    assert "[cluster]" not in run.output()
    assert list(Path(env["TMPDIR"]).iterdir()) == []


@pytest.mark.timeout(120)
def test_the_directory_of_a_killed_run_is_removed_by_the_next(
    start: Callable[..., Run], env: dict[str, str]
) -> None:
    first = start()
    first.wait_for("[cluster] starting etcd")
    run_dir = Path(_record(env).details["run_dir"])
    first.process.kill()  # SIGKILL: no clean-up at all
    first.process.wait()
    assert run_dir.is_dir()
    with socket.socket() as sock:  # a busy port makes the next run stop right after its checks
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        nxt = start(f"--health-probe-bind-address=127.0.0.1:{sock.getsockname()[1]}")
        assert nxt.process.wait(timeout=60) == 1
    assert f"removed {run_dir}, left behind by make run pid {first.process.pid}" in nxt.output()
    assert not run_dir.exists()
