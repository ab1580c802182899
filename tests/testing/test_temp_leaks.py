"""A test run leaves nothing in the temp folder, and `make e2e`'s leak check says so when it does.

The harness used to leave, per run, a directory of client keys for every admin client made from
a kubeconfig (`kro-adminapi-*`), one per ServiceAccount kubeconfig (`kro-sa-*`) and per CA file
(`kro-ca-*`), and the session cluster's etcd data and PKI (`kro-cluster-*`). Each test points the
temp folder at its own directory, so "nothing left" is checked exactly.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kro.testing import pki, processes, tempdirs
from kro.testing.adminapi import AdminApi
from kro.testing.cluster import LocalCluster, write_kubeconfig
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own temp folder, as tempfile sees it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    tempdirs.remove_all()


def _kubeconfig(tmp_path: Path) -> tuple[Path, pki.ClusterPKI]:
    certs = pki.generate(tmp_path / "pki")
    user = {
        "client-certificate-data": _b64(certs.admin.cert),
        "client-key-data": _b64(certs.admin.key),
    }
    path = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", certs.ca.cert, user)
    return path, certs


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_an_admin_client_from_a_kubeconfig_leaves_no_key_on_disk(
    temp: Path, tmp_path: Path
) -> None:
    path, _ = _kubeconfig(tmp_path)
    api = AdminApi.from_kubeconfig(path)
    assert api.server == "https://127.0.0.1:1"
    assert list(temp.iterdir()) == []


def test_a_cluster_removes_the_directory_it_made(temp: Path) -> None:
    cluster = LocalCluster()
    assert cluster.run_dir.parent == temp
    assert cluster.run_dir.name.startswith("kro-cluster-")
    (cluster.run_dir / "etcd").mkdir()
    cluster.stop()
    assert list(temp.iterdir()) == []


def test_a_cluster_keeps_a_directory_it_was_given(tmp_path: Path) -> None:
    given = tmp_path / "state"
    given.mkdir()
    LocalCluster(given).stop()
    assert given.is_dir()


class _FakeAdmin:
    """Only what service_account_kubeconfig asks of the admin client."""

    def ensure(self, path: str, body: object) -> None:
        pass

    def create(self, path: str, body: object) -> dict[str, object]:
        return {"status": {"token": "sa-token"}}


def test_a_service_account_kubeconfig_lives_until_the_session_ends(
    temp: Path, tmp_path: Path
) -> None:
    path, certs = _kubeconfig(tmp_path)
    handle = ClusterHandle(kubeconfig=path, server="https://127.0.0.1:1", owned=False)
    admin: Any = _FakeAdmin()
    kubeconfig = service_account_kubeconfig(handle, admin, "ns", "viewer")
    config = json.loads(kubeconfig.read_text())
    assert config["users"][0]["user"] == {"token": "sa-token"}
    assert config["clusters"][0]["cluster"]["certificate-authority-data"] == _b64(certs.ca.cert)
    assert [p.name.split("-")[1] for p in temp.iterdir()] == ["sa"]  # no CA file beside it
    tempdirs.remove_all()  # what the plugin does when the session ends
    assert list(temp.iterdir()) == []


def _check(temp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kro.testing.processes", *args],
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_the_leak_check_names_new_temp_entries(temp: Path, tmp_path: Path) -> None:
    before = tmp_path / "before"
    (temp / "kro-cluster-old").mkdir()  # there before the run: not this run's
    (temp / "other-tool").mkdir()
    assert _check(temp, "--record-temp", str(before)).returncode == 0
    (temp / "kro-sa-abc").mkdir()
    (temp / "unrelated").mkdir()
    result = _check(temp, "--temp-before", str(before), "--no-processes")
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"left in the temp folder: {temp / 'kro-sa-abc'}"]


def test_the_leak_check_passes_when_nothing_is_left(temp: Path, tmp_path: Path) -> None:
    before = tmp_path / "before"
    (temp / "kro-cluster-old").mkdir()
    _check(temp, "--record-temp", str(before))
    result = _check(temp, "--temp-before", str(before), "--no-processes")
    assert (result.returncode, result.stdout) == (0, f"nothing left in the temp folder ({temp})\n")


def test_new_temp_entries(temp: Path) -> None:
    before = processes.temp_entries()
    (temp / "kro-x").mkdir()
    assert processes.new_temp_entries(before) == [temp / "kro-x"]
