"""`make run`'s checks: who holds the run, which port is busy and by whom, what is left over,
and how termination signals become a clean exit."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kro.testing import runguard
from kro.testing.lockfile import Holder, LockFile


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("127.0.0.1:8078", ("127.0.0.1", 8078)),
        (":8078", ("0.0.0.0", 8078)),
        ("[::1]:8078", ("::1", 8078)),
        ("0", None),
        ("localhost", None),
    ],
    ids=["ipv4", "all-interfaces", "ipv6", "disabled", "no-port"],
)
def test_split_address(address: str, parsed: tuple[str, int] | None) -> None:
    assert runguard.split_address(address) == parsed


def test_a_busy_port_is_named_with_its_flag_and_owner(listener: int) -> None:
    (message,) = runguard.busy_ports(
        [("--metrics-bind-address", f"127.0.0.1:{listener}"), ("--health", "0")]
    )
    assert message.startswith(
        f"port {listener} (--metrics-bind-address=127.0.0.1:{listener}) is already in use by "
        f"pid {os.getpid()} ("
    )
    assert "RUN_ARGS='--metrics-bind-address=127.0.0.1:<port>'" in message


def test_free_ports_pass() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert runguard.busy_ports([("--metrics-bind-address", f"127.0.0.1:{port}")]) == []


def test_already_running_names_the_pid_and_its_cluster(tmp_path: Path) -> None:
    first = LockFile(tmp_path / "run.lock")
    first.try_acquire("make run")
    first.update(kubeconfig="/tmp/kro-run-x/kubeconfig")
    message = runguard.already_running(LockFile(tmp_path / "run.lock"))
    first.release()
    assert message.startswith(f"already running as pid {os.getpid()}, started at ")
    assert "; its cluster: export KUBECONFIG=/tmp/kro-run-x/kubeconfig." in message
    assert message.endswith(f"Stop it first (Ctrl-C in its terminal, or kill {os.getpid()}).")


def test_already_running_without_a_record_says_to_retry(tmp_path: Path) -> None:
    assert "try again in a moment" in runguard.already_running(LockFile(tmp_path / "run.lock"))


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_leftovers_of_a_killed_run_are_removed(capsys: pytest.CaptureFixture[str]) -> None:
    left = Path(tempfile.mkdtemp(prefix=runguard.RUN_DIR_PREFIX))
    (left / "etcd").mkdir()
    pid = _dead_pid()
    runguard.remove_leftovers(Holder(pid, "make run", 0.0, {"run_dir": str(left)}))
    assert not left.exists()
    assert f"left behind by make run pid {pid}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "where",
    ["elsewhere", "wrong-prefix"],
)
def test_only_make_runs_own_temp_directories_are_removed(tmp_path: Path, where: str) -> None:
    if where == "elsewhere":
        keep = tmp_path / f"{runguard.RUN_DIR_PREFIX}x"
        keep.mkdir()
    else:
        keep = Path(tempfile.mkdtemp(prefix="kro-cluster-"))
    try:
        runguard.remove_leftovers(Holder(1, "make run", 0.0, {"run_dir": str(keep)}))
        assert keep.exists()
    finally:
        keep.rmdir()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_termination_signals_interrupt_like_ctrl_c(sig: signal.Signals) -> None:
    # The default disposition, whatever the suite started with: under `nohup` SIGHUP arrives
    # ignored, and an ignored signal is meant to stay ignored (the test below).
    started_with = signal.signal(sig, signal.SIG_DFL)

    def wait_for_a_signal() -> None:
        with runguard.interrupt_on_termination():
            os.kill(os.getpid(), sig)
            time.sleep(5)

    try:
        with pytest.raises(KeyboardInterrupt, match=sig.name):
            wait_for_a_signal()
        assert signal.getsignal(sig) is signal.SIG_DFL
    finally:
        signal.signal(sig, started_with)


def test_clean_up_is_not_cut_short_by_another_signal(capsys: pytest.CaptureFixture[str]) -> None:
    with runguard.shielded("stopping the cluster"):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
    assert capsys.readouterr().out.count("==> still stopping the cluster; one moment") == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_ignored_at_start_stays_ignored() -> None:
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with runguard.interrupt_on_termination():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)
