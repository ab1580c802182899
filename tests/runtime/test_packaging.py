"""Packaging promises that matter to anyone embedding kro.runtime: the core wheel carries no test
harness, `kro[testing]` carries all of it, and the pytest plugin activates only when asked and
refuses a cluster that is not on this machine unless told otherwise."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from kro.testing.pytest_plugin import is_local_server

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
HARNESS = {"pytest", "cryptography", "filelock", "hypothesis"}
# Import names whose distribution is named differently.
DISTRIBUTION = {
    "yaml": "pyyaml",
    "google": "protobuf",
    "re2": "google-re2",
    "prometheus_client": "prometheus-client",
    "kubernetes_asyncio": "kubernetes-asyncio",
    "cel_expr_python": "cel-expr-python",
}


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0].lower() for r in requirements}


def third_party_imports(package: Path) -> set[str]:
    found: set[str] = set()
    for path in package.rglob("*.py"):
        if "gomod" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top != "kro" and top not in sys.stdlib_module_names:
                    found.add(DISTRIBUTION.get(top, top).lower())
    return found


CORE = names(PYPROJECT["project"]["dependencies"])
TESTING = names(PYPROJECT["project"]["optional-dependencies"]["testing"])


def test_the_core_wheel_depends_on_no_test_harness() -> None:
    assert not CORE & HARNESS, f"core dependencies include {sorted(CORE & HARNESS)}"
    assert {"pytest", "cryptography", "filelock"} <= TESTING


def test_production_code_needs_only_the_core_dependencies() -> None:
    needed: set[str] = set()
    for package in (ROOT / "kro").iterdir():
        if package.is_dir() and package.name not in ("testing", "__pycache__"):
            needed |= third_party_imports(package)
    assert needed <= CORE, f"imported but not core dependencies: {sorted(needed - CORE)}"


def test_the_testing_extra_covers_the_harness() -> None:
    needed = third_party_imports(ROOT / "kro" / "testing")
    assert needed <= CORE | TESTING, f"kro.testing imports {sorted(needed - CORE - TESTING)}"


def test_the_plugin_is_not_an_entry_point() -> None:
    assert "pytest11" not in PYPROJECT["project"].get("entry-points", {})


def test_the_dev_extra_brings_the_testing_extra() -> None:
    assert "kro[testing]" in PYPROJECT["project"]["optional-dependencies"]["dev"]


@pytest.mark.parametrize(
    ("server", "local"),
    [
        ("https://127.0.0.1:6443", True),
        ("https://localhost:6443", True),
        ("https://[::1]:6443", True),
        ("https://127.0.0.2:6443", True),
        ("https://10.0.0.1:6443", False),
        ("https://prod.example.com", False),
        ("https://localhost.example.com", False),
    ],
)
def test_local_servers(server: str, local: bool) -> None:
    assert is_local_server(server) is local


KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: c
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
users: [{{name: u, user: {{token: t}}}}]
"""

PROBE = """\
def test_cluster(kube_cluster):
    assert not kube_cluster.owned
    print("SERVER", kube_cluster.server)
"""


def run_pytest(tmp_path: Path, server: str, *args: str, env: dict[str, str] | None = None) -> str:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG.format(server=server))
    (tmp_path / "test_probe.py").write_text(textwrap.dedent(PROBE))
    environ = {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KRO_TEST_KUBECONFIG")
    }
    environ.pop("KRO_TEST_ALLOW_REMOTE_CLUSTER", None)
    environ.update({"KRO_TEST_KUBECONFIG": str(tmp_path / "kubeconfig"), **(env or {})})
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # the refusal is a failing run: its output is what the tests read
    )
    return out.stdout + out.stderr


def test_without_being_asked_the_plugin_is_not_active(tmp_path: Path) -> None:
    assert "fixture 'kube_cluster' not found" in run_pytest(tmp_path, "https://127.0.0.1:1")


@pytest.mark.parametrize("plugin", ["kro.testing.pytest_plugin", "kro.testing"])
def test_a_local_cluster_is_reused_and_named(tmp_path: Path, plugin: str) -> None:
    out = run_pytest(tmp_path, "https://127.0.0.1:1", "-p", plugin)
    assert "SERVER https://127.0.0.1:1" in out
    assert "1 passed" in out
    assert "reused the cluster named by $KRO_TEST_KUBECONFIG at https://127.0.0.1:1" in out


@pytest.mark.parametrize("plugin", ["kro.testing.pytest_plugin", "kro.testing"])
def test_a_remote_cluster_is_refused(tmp_path: Path, plugin: str) -> None:
    out = run_pytest(tmp_path, "https://prod.example.com", "-p", plugin)
    assert "refuses to run tests against https://prod.example.com" in out
    assert "1 error" in out or "1 failed" in out


@pytest.mark.parametrize(
    ("args", "env"),
    [(("--kro-allow-remote-cluster",), {}), ((), {"KRO_TEST_ALLOW_REMOTE_CLUSTER": "1"})],
    ids=["option", "environment"],
)
def test_a_remote_cluster_is_used_when_allowed_explicitly(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    out = run_pytest(
        tmp_path, "https://prod.example.com", "-p", "kro.testing.pytest_plugin", *args, env=env
    )
    assert "SERVER https://prod.example.com" in out
    assert "1 passed" in out
