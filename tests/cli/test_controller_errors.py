"""`kro controller` never answers a user's mistake with a traceback: a bad flag is one line and
exit status 2; a kubeconfig that is missing or broken, an API server that cannot be reached or
refuses the credentials, and a port another process holds are one line and exit status 1.

Each case runs the real command (`python -m kro controller`) with a private HOME and no
KUBECONFIG, so the developer's own kubeconfig never leaks in.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kro.cli.controller import lease_namespace
from kro.cli.flags import parse_controller_args

QUIET = ["--metrics-bind-address=0", "--health-probe-bind-address=0"]


def _kro(
    *args: str, home: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "KRO_"))}
    environ.update({"HOME": str(home), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "kro", "controller", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        check=False,
    )


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    """The error line; nothing else on stderr but info log lines of the process (a client
    that re-authenticates once before giving up says so), no traceback, no warning."""
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith("kro controller: ")]
    assert len(errors) == 1, done.stderr
    assert all(line in errors or "[info" in line for line in lines), done.stderr
    return errors[0]


def _kubeconfig(path: Path, server: str, namespace: str | None = None) -> Path:
    context: dict[str, str] = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
                "contexts": [{"name": "x", "context": context}],
                "current-context": "x",
            }
        )
    )
    return path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--zap-log-level=loud"], "invalid log level 'loud'"),
        (["--zap-encoder=xml"], "invalid log encoder 'xml'"),
        (["--leader-elect=maybe"], "invalid boolean 'maybe'"),
        (["--metrics-bind-address=nowhere"], "invalid address 'nowhere'"),
        (["--dynamic-controller-concurrent-reconciles=0"], "must be at least 1"),
        (["--graceful-shutdown-timeout=60"], 'invalid duration "60"'),
        (["--feature-gates=Nope=true"], "unknown feature gate 'Nope'"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_a_bad_flag_is_one_line_and_exit_2(tmp_path: Path, argv: list[str], says: str) -> None:
    assert says in _one_line(_kro(*argv, home=tmp_path), 2)


def test_a_missing_kubeconfig_file(tmp_path: Path) -> None:
    line = _one_line(_kro(f"--kubeconfig={tmp_path}/nope", *QUIET, home=tmp_path), 1)
    assert line == f"kro controller: kubeconfig {tmp_path}/nope does not exist (--kubeconfig)"


def test_kubeconfig_variable_naming_no_file(tmp_path: Path) -> None:
    env = {"KUBECONFIG": f"{tmp_path}/a"}
    line = _one_line(_kro(*QUIET, home=tmp_path, env=env), 1)
    assert line == f"kro controller: no kubeconfig file exists at KUBECONFIG={tmp_path}/a"


def test_no_kubeconfig_at_all_outside_a_pod(tmp_path: Path) -> None:
    line = _one_line(_kro(*QUIET, home=tmp_path), 1)
    assert "no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG" in line


def test_a_kubeconfig_that_is_not_yaml(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("clusters: [\n  token: secret-value\n")
    line = _one_line(_kro(f"--kubeconfig={broken}", *QUIET, home=tmp_path), 1)
    assert line.startswith(f"kro controller: cannot load kubeconfig {broken}")
    assert "secret-value" not in line


def test_an_unreachable_api_server(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{_closed_port()}"
    config = _kubeconfig(tmp_path / "config", server)
    line = _one_line(_kro(f"--kubeconfig={config}", *QUIET, home=tmp_path), 1)
    assert line.startswith(f"kro controller: cannot reach the API server at {server}")


class _Unauthorized(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(
            {"kind": "Status", "apiVersion": "v1", "status": "Failure",
             "reason": "Unauthorized", "code": 401}
        ).encode()  # fmt: skip
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()


def test_credentials_the_api_server_refuses(tmp_path: Path, refusing_server: str) -> None:
    config = _kubeconfig(tmp_path / "config", refusing_server)
    line = _one_line(_kro(f"--kubeconfig={config}", *QUIET, home=tmp_path), 1)
    assert "refused the credentials (401 Unauthorized)" in line
    assert "not-a-real-token" not in line


@pytest.mark.parametrize("flag", ["--metrics-bind-address", "--health-probe-bind-address"])
def test_a_port_in_use(tmp_path: Path, flag: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        others = [q for q in QUIET if not q.startswith(flag)]
        done = _kro(f"{flag}={address}", *others, f"--kubeconfig={tmp_path}/x", home=tmp_path)
    line = _one_line(done, 1)
    assert line == (
        f"kro controller: port {address} is already in use ({flag}={address}): "
        "is another kro running?"
    )


# -- the leader-election Lease outside a pod ---------------------------------------------------


def test_the_lease_goes_to_the_kubeconfig_context_namespace(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path / "config", "https://127.0.0.1:1", namespace="team-x")
    parsed = parse_controller_args(["--leader-elect", f"--kubeconfig={config}"])
    assert lease_namespace(parsed) == ("team-x", "kubeconfig")


def test_the_lease_defaults_to_default_without_a_context_namespace(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path / "config", "https://127.0.0.1:1")
    parsed = parse_controller_args(["--leader-elect", f"--kubeconfig={config}"])
    assert lease_namespace(parsed) == ("default", "kubeconfig")


def test_the_flag_wins(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path / "config", "https://127.0.0.1:1", namespace="team-x")
    parsed = parse_controller_args(
        [f"--kubeconfig={config}", "--leader-election-namespace=kro-system"]
    )
    assert lease_namespace(parsed) == ("kro-system", "flag")
