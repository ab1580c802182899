"""Connection config: kubeconfig (token, mTLS, contexts, exec plugins), token files, in-cluster,
and the default search order. kubernetes-asyncio parses; we check what reaches the wire."""

from __future__ import annotations

import base64
import datetime
import ssl
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.runtime.client import Client
from kro.runtime.config import (
    ConfigError,
    ExecAuth,
    TokenFileAuth,
    load_default,
    load_incluster,
    load_kubeconfig,
)
from kro.runtime.errors import TransportError
from kro.testing import pki
from kro.testing.fakeapi import FakeApiServer

pytestmark = pytest.mark.usefixtures("no_task_leaks")


def kubeconfig(
    path: Path,
    server: str,
    user: dict[str, Any],
    *,
    cluster: dict[str, Any] | None = None,
    extra_contexts: int = 0,
) -> Path:
    contexts = [{"name": "main", "context": {"cluster": "c", "user": "u"}}]
    contexts += [
        {"name": f"other{i}", "context": {"cluster": "c", "user": f"u{i}"}}
        for i in range(extra_contexts)
    ]
    users = [{"name": "u", "user": user}]
    users += [{"name": f"u{i}", "user": {"token": f"other-{i}"}} for i in range(extra_contexts)]
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
        "users": users,
        "contexts": contexts,
        "current-context": "main",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


async def test_kubeconfig_token_reaches_the_server(tmp_path: Path) -> None:
    async with FakeApiServer(tokens={"s3cret"}) as api:
        path = kubeconfig(tmp_path / "config", api.url, {"token": "s3cret"})
        async with await Client.from_kubeconfig(str(path)) as client:
            assert (await client.request("GET", "/version"))["major"] == "1"
        assert api.requests[-1].headers["authorization"] == "Bearer s3cret"


async def test_context_selects_the_user(tmp_path: Path) -> None:
    async with FakeApiServer(tokens={"other-0"}) as api:
        path = kubeconfig(tmp_path / "config", api.url, {"token": "main"}, extra_contexts=1)
        async with await Client.from_kubeconfig(str(path), context="other0") as client:
            # The fake server accepts only other-0's token: the main user's would be a 401.
            assert await client.request("GET", "/version")


async def test_mutual_tls_from_inline_kubeconfig_data(tmp_path: Path) -> None:
    certs = pki.generate(tmp_path / "pki")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(certs.apiserver.cert, certs.apiserver.key)
    server_ctx.load_verify_locations(certs.ca.cert)
    server_ctx.verify_mode = ssl.CERT_REQUIRED

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    async with FakeApiServer(ssl_context=server_ctx) as api:
        assert api.url.startswith("https://127.0.0.1:")
        path = kubeconfig(
            tmp_path / "config",
            api.url,
            {
                "client-certificate-data": b64(certs.admin.cert),
                "client-key-data": b64(certs.admin.key),
            },
            cluster={"certificate-authority-data": b64(certs.ca.cert)},
        )
        async with await Client.from_kubeconfig(str(path)) as client:
            assert await client.request("GET", "/readyz") == "ok"


async def test_untrusted_server_certificate_is_a_transport_error(tmp_path: Path) -> None:
    certs = pki.generate(tmp_path / "pki")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(certs.apiserver.cert, certs.apiserver.key)
    async with FakeApiServer(ssl_context=server_ctx) as api:
        path = kubeconfig(tmp_path / "config", api.url, {"token": "t"})  # no CA given
        async with await Client.from_kubeconfig(str(path)) as client:
            with pytest.raises(TransportError):
                await client.request("GET", "/readyz")


def exec_plugin(
    tmp_path: Path, expires: str = "2099-01-01T00:00:00Z"
) -> tuple[dict[str, Any], Path]:
    counter = tmp_path / "calls"
    counter.write_text("0")
    script = tmp_path / "plugin.py"
    script.write_text(
        "import json, pathlib, sys\n"
        f"p = pathlib.Path({str(counter)!r})\n"
        "n = int(p.read_text()) + 1\n"
        "p.write_text(str(n))\n"
        "json.dump({'apiVersion': 'client.authentication.k8s.io/v1beta1',\n"
        "           'kind': 'ExecCredential',\n"
        f"           'status': {{'token': f'tok-{{n}}', 'expirationTimestamp': {expires!r}}}}},\n"
        "          sys.stdout)\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }
    return user, counter


async def test_exec_plugin_token_is_refreshed_after_a_401(tmp_path: Path) -> None:
    user, calls = exec_plugin(tmp_path)
    async with FakeApiServer(tokens={"tok-2"}) as api:
        path = kubeconfig(tmp_path / "config", api.url, user)
        async with await Client.from_kubeconfig(str(path)) as client:
            await client.request("GET", "/version")
            await client.request("GET", "/version")
    assert calls.read_text() == "2"  # once at load, once after the 401; then cached
    assert [r.headers["authorization"] for r in api.requests] == [
        "Bearer tok-1",
        "Bearer tok-2",
        "Bearer tok-2",
    ]


class StubLoader:
    """Stands in for kubernetes-asyncio's loader: each plugin run yields a new token."""

    def __init__(self, expires_at: datetime.datetime) -> None:
        self.runs = 0
        self.token = "Bearer first"
        self.exec_plugin_expiry = expires_at

    async def load_from_exec_plugin(self) -> bool:
        self.runs += 1
        self.token = f"Bearer run-{self.runs}"
        self.exec_plugin_expiry = datetime.datetime(2099, 1, 1, tzinfo=datetime.UTC)
        return True


async def test_exec_token_is_refreshed_before_it_expires() -> None:
    expiry = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    now = [expiry.timestamp() - 60]
    loader = StubLoader(expiry)
    auth = ExecAuth(loader, wall_clock=lambda: now[0])
    assert await auth.authorization() == "Bearer first"
    now[0] = expiry.timestamp() - 5  # inside the safety margin
    assert await auth.authorization() == "Bearer run-1"
    assert await auth.authorization() == "Bearer run-1"
    assert loader.runs == 1


async def test_token_file_is_reread_periodically_and_after_invalidate(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one\n")
    now = [0.0]
    auth = TokenFileAuth(str(token), reread_s=60, monotonic=lambda: now[0])
    assert await auth.authorization() == "Bearer one"
    token.write_text("two")
    assert await auth.authorization() == "Bearer one"
    now[0] = 60.0
    assert await auth.authorization() == "Bearer two"
    token.write_text("three")
    auth.invalidate()
    assert await auth.authorization() == "Bearer three"


async def test_kubeconfig_token_file_is_used(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file")
    async with FakeApiServer(tokens={"from-file"}) as api:
        path = kubeconfig(tmp_path / "config", api.url, {"tokenFile": "token"})
        config = await load_kubeconfig(str(path))
        assert isinstance(config.auth, TokenFileAuth)
        async with Client.from_config(config) as client:
            await client.request("GET", "/version")


def test_in_cluster_reads_environment_token_and_ca(tmp_path: Path) -> None:
    certs = pki.generate(tmp_path / "pki")
    (tmp_path / "token").write_text("sa-token")
    config = load_incluster(
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
        token_path=str(tmp_path / "token"),
        ca_path=str(certs.ca.cert),
    )
    assert config.server == "https://10.0.0.1:443"
    assert isinstance(config.auth, TokenFileAuth)
    assert config.ssl_context is not None


def test_in_cluster_outside_a_cluster_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_incluster(environ={}, token_path=str(tmp_path / "none"))


async def test_default_search_prefers_kubeconfig_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = kubeconfig(tmp_path / "config", "http://127.0.0.1:1", {"token": "t"})
    monkeypatch.setenv("KUBECONFIG", str(path))
    config = await load_default()
    assert config.server == "http://127.0.0.1:1"


async def test_default_search_falls_back_to_in_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="not running in a cluster"):
        await load_default()


async def test_missing_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        await load_kubeconfig(str(tmp_path / "nope"))
