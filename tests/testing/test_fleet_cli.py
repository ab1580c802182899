"""`python -m kro.testing.cluster` with a fleet: `status` names the members `up --members`
started, and `up` refuses to start over a member that still runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kro.testing import cluster


def _state(run_dir: Path, server: str, pids: dict[str, int]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    cluster.ClusterState(
        run_dir=str(run_dir),
        server=server,
        kubeconfig=str(run_dir / "kubeconfig"),
        admin_token="unused",
        pids=pids,
    ).save()


def test_status_lists_running_members_and_skips_stopped_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alive = os.getpid()  # a pid that is surely running; never signalled by `status`
    _state(tmp_path, "https://127.0.0.1:1000", {"kube-apiserver": alive})
    _state(tmp_path / "members" / "member-1", "https://127.0.0.1:1001", {"etcd": alive})
    (tmp_path / "members" / "member-1" / "fleet.kubeconfig").write_text("inline")
    _state(tmp_path / "members" / "member-2", "https://127.0.0.1:1002", {})  # stopped
    assert cluster.main(["status", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "https://127.0.0.1:1000" in out
    assert "member member-1: cluster in" in out
    assert "https://127.0.0.1:1001" in out
    assert str(tmp_path / "members" / "member-1" / "fleet.kubeconfig") in out
    assert "member-2" not in out


def test_up_refuses_while_a_member_still_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _state(tmp_path / "members" / "member-1", "https://127.0.0.1:1001", {"etcd": os.getpid()})
    assert cluster.main(["up", "--members", "1", "--dir", str(tmp_path)]) == 1
    assert "already running" in capsys.readouterr().err


def test_a_negative_member_count_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        cluster.main(["up", "--members", "-1", "--dir", str(tmp_path)])
