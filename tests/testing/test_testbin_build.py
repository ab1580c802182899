"""A build says how far it got at least every interval, and so does whoever waits for its lock.

A fake `go` on PATH stands in for the toolchain: `go env GOVERSION` answers at once, and
`go build -v` prints one package name every 50 ms, as the real one does while it compiles.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from kro.testing import testbin

FAKE_GO = """#!/bin/sh
case "$1" in
  env) echo go1.99.0 ;;
  build)
    for i in $(seq 1 "${FAKE_GO_PACKAGES:-10}"); do echo "example.com/fake/pkg$i"; sleep 0.05; done
    [ -n "$FAKE_GO_FAIL" ] && { echo "pkg9: syntax error" ; exit 2; }
    exit 0 ;;
esac
"""


@pytest.fixture
def component(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> testbin.Component:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "go").write_text(FAKE_GO)
    (bin_dir / "go").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path('/usr/bin')}:{Path('/bin')}")
    monkeypatch.setenv("KRO_TESTBIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KRO_PROGRESS_INTERVAL_S", "0.1")
    module = tmp_path / "module"
    module.mkdir()
    (module / "go.mod").write_text("module fake\n")
    (module / "go.sum").write_text("")
    return testbin.Component(
        name="fake", version="v1", module_dir=str(module), binaries=(("fake", "example.com/x"),)
    )


def test_a_slow_build_prints_its_progress(
    component: testbin.Component, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = testbin.ensure_component(component)
    assert (directory / ".complete").read_text() == "v1\n"
    err = capsys.readouterr().err
    beats = [line for line in err.splitlines() if "packages compiled" in line]
    assert len(beats) >= 2, err
    assert "(last example.com/fake/pkg" in beats[-1]
    assert "[testbin] built fake v1 in" in err
    assert not testbin.build_lock().record_path.exists()  # released, record gone


def test_a_failed_build_releases_the_lock_and_shows_the_compiler(
    component: testbin.Component, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GO_FAIL", "1")
    with pytest.raises(RuntimeError, match="pkg9: syntax error"):
        testbin.ensure_component(component)
    assert testbin.build_lock().try_acquire("next build")


def test_waiting_for_another_build_says_who_builds_what(
    component: testbin.Component, capsys: pytest.CaptureFixture[str]
) -> None:
    other = testbin.build_lock()
    other.try_acquire("building kubernetes v1.36.3", command="run by `pytest e2e`")
    other.update(progress="812 packages compiled")
    done = threading.Event()

    def build() -> None:
        testbin.ensure_component(component)
        done.set()

    thread = threading.Thread(target=build)
    thread.start()
    time.sleep(0.5)
    assert not done.is_set()  # still waiting
    other.release()
    thread.join(timeout=30)
    assert done.is_set()
    waits = [line for line in capsys.readouterr().err.splitlines() if "waiting" in line]
    assert len(waits) >= 3, waits  # at once, then every interval
    assert f"held by pid {os.getpid()} (" in waits[0]
    assert "fake: waiting 0s for the build lock" in waits[0]
    assert "(building kubernetes v1.36.3; run by `pytest e2e`; 812 packages compiled)" in waits[0]


def test_optional_components_are_built_only_on_request() -> None:
    assert "promtool" in testbin.ALL_BINARY_NAMES
    assert "promtool" not in testbin.BINARY_NAMES
