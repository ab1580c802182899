"""LocalCluster stops and starts one component by name, keeping its command line and probes.

A stand-in component (Python's http.server on a loopback port) takes the place of etcd, so this
runs without the control-plane binaries.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kro.testing import processes
from kro.testing.adminapi import AdminApi
from kro.testing.cluster import ClusterState, LocalCluster

NAME = "fake-etcd"


def _launch_fake(cluster: LocalCluster, name: str) -> None:
    port = processes.free_port()
    argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    cluster._launch(
        name, argv, time.monotonic() + 30, lambda: AdminApi.plain_get(f"http://127.0.0.1:{port}/")
    )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path)
    cluster.state = ClusterState(run_dir=str(tmp_path), server="", kubeconfig="", admin_token="")
    (tmp_path / "logs").mkdir()
    _launch_fake(cluster, NAME)
    yield cluster
    cluster.stop()


def _pid(cluster: LocalCluster) -> int:
    state = ClusterState.load(cluster.run_dir)
    assert state is not None
    return state.pids[NAME]


def test_stop_then_start_one_component(cluster: LocalCluster) -> None:
    first = _pid(cluster)
    cluster.stop(NAME)
    assert not processes.is_alive(first)
    saved = ClusterState.load(cluster.run_dir)
    assert saved is not None
    assert NAME not in saved.pids  # a stopped component's pid is forgotten at once

    with pytest.raises(ValueError, match="not running"):
        cluster.stop(NAME)

    state = cluster.start(NAME, timeout_s=30)
    second = _pid(cluster)
    assert second != first
    assert processes.is_alive(second)
    assert state.pids[NAME] == second

    with pytest.raises(ValueError, match="already running"):
        cluster.start(NAME)


def test_restart_reports_the_time_away(cluster: LocalCluster) -> None:
    first = _pid(cluster)
    away_s = cluster.restart(NAME, kill=True)
    assert away_s > 0
    assert not processes.is_alive(first)
    assert processes.is_alive(_pid(cluster))


def test_unknown_components_are_refused(cluster: LocalCluster) -> None:
    with pytest.raises(ValueError, match="never started"):
        cluster.start("kube-scheduler")
    with pytest.raises(ValueError, match="not running"):
        cluster.stop("kube-scheduler")


def test_stop_all_skips_a_component_already_stopped(cluster: LocalCluster) -> None:
    cluster.stop(NAME)
    cluster.stop()
    saved = ClusterState.load(cluster.run_dir)
    assert saved is not None
    assert saved.pids == {}


def test_stop_all_keeps_reverse_start_order_after_a_restart(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    _launch_fake(cluster, "fake-apiserver")  # started after NAME: must stop before it
    cluster.restart(NAME)  # NAME's pid is now the newest
    names = {pid: name for name, pid in cluster.state.pids.items()} if cluster.state else {}
    stopped: list[str] = []
    real_stop = processes.stop_pid

    def recording_stop(
        pid: int, *, timeout_s: float = 20.0, reap: Callable[[], object] | None = None
    ) -> None:
        stopped.append(names[pid])
        real_stop(pid, timeout_s=timeout_s, reap=reap)

    monkeypatch.setattr(processes, "stop_pid", recording_stop)
    cluster.stop()
    assert stopped == ["fake-apiserver", NAME]
