"""A LockFile lets one holder in, tells the others who holds it, and outlives a crashed holder."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kro.testing.lockfile import Holder, LockFile


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_second_holder_is_refused_and_sees_the_first(tmp_path: Path) -> None:
    first, second = LockFile(tmp_path / "x.lock"), LockFile(tmp_path / "x.lock")
    assert first.try_acquire("make run", kubeconfig="/tmp/k")
    try:
        assert not second.try_acquire("make run")
        holder = second.holder()
        assert holder is not None
        assert holder.alive
        assert (holder.what, dict(holder.details)) == ("make run", {"kubeconfig": "/tmp/k"})
    finally:
        first.release()
    assert second.try_acquire("make run")
    second.release()


def test_release_removes_the_record_and_is_idempotent(tmp_path: Path) -> None:
    lock = LockFile(tmp_path / "x.lock")
    assert lock.try_acquire("work")
    assert lock.record_path.exists()
    lock.release()
    lock.release()
    assert not lock.record_path.exists()
    assert lock.holder() is None


def test_update_changes_the_record_others_read(tmp_path: Path) -> None:
    lock = LockFile(tmp_path / "x.lock")
    lock.try_acquire("building etcd", progress="0 packages compiled")
    lock.update(progress="12 packages compiled")
    holder = LockFile(tmp_path / "x.lock").holder()
    assert holder is not None
    assert holder.describe(now=holder.since + 70) == (
        f"pid {holder.pid} (building etcd; 12 packages compiled) for 1m10s"
    )
    lock.release()
    with pytest.raises(RuntimeError, match="not held"):
        lock.update(progress="x")


def test_the_record_of_a_holder_that_died_is_handed_to_the_next(tmp_path: Path) -> None:
    lock = LockFile(tmp_path / "x.lock")
    stale = Holder(_dead_pid(), "make run", 1.0, {"run_dir": "/tmp/kro-run-x"})
    lock._write(stale)  # what a SIGKILLed holder leaves: its record, but no lock
    assert not stale.alive
    assert lock.try_acquire("make run")
    assert lock.previous == stale
    lock.release()


def test_acquire_says_who_it_waits_for_until_the_lock_is_free(tmp_path: Path) -> None:
    holder = LockFile(tmp_path / "x.lock")
    holder.try_acquire("building kubernetes", progress="3 packages compiled")
    heard: list[tuple[Holder | None, float]] = []
    waiter = LockFile(tmp_path / "x.lock")
    thread = threading.Thread(
        target=lambda: waiter.acquire(
            "building etcd", waiting=lambda h, s: heard.append((h, s)), every_s=0.05
        )
    )
    thread.start()
    deadline = time.monotonic() + 10
    while len(heard) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    holder.release()
    thread.join(timeout=10)
    assert waiter.is_held
    assert len(heard) >= 3
    assert heard[0][1] < heard[-1][1]  # waited time grows
    assert all(h is not None and h.what == "building kubernetes" for h, _ in heard)
    waiter.release()


def test_a_corrupt_record_reads_as_no_holder(tmp_path: Path) -> None:
    lock = LockFile(tmp_path / "x.lock")
    lock.record_path.write_text("{not json")
    assert lock.holder() is None
