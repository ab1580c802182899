"""kro.runtime.kubeconfig: the common kubeconfig cases without kubernetes-asyncio.

Every valid case is loaded twice, by our reader and by kubernetes-asyncio's loader (the one kro
used before, still used for exec plugins and auth providers), and must give the same connection:
server, TLS verification, trusted CAs, Authorization header, proxy and TLS server name. Broken
files give one ConfigError that says where the mistake is and never quotes a value.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.runtime.client import Client
from kro.runtime.config import (
    ConfigError,
    ConnectionConfig,
    StaticAuth,
    TokenFileAuth,
    _load_with_plugin,
    load_incluster,
    load_kubeconfig,
)
from kro.testing import pki
from kro.testing.fakeapi import FakeApiServer

pytestmark = pytest.mark.usefixtures("no_task_leaks")

SECRET = "s3cret-value-never-shown"


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def document(
    cluster: dict[str, Any],
    user: dict[str, Any] | None = None,
    *,
    context: dict[str, Any] | None = None,
    current: str | None = "main",
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "contexts": [{"name": "main", "context": context or {"cluster": "c", "user": "u"}}],
        "users": [] if user is None else [{"name": "u", "user": user}],
    }
    if current is not None:
        doc["current-context"] = current
    return doc


def write(path: Path, doc: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> pki.ClusterPKI:
    return pki.generate(tmp_path_factory.mktemp("pki"))


async def facts(config: ConnectionConfig) -> dict[str, Any]:
    """What reaches the wire from a ConnectionConfig (an SSLContext has no equality)."""
    ctx = config.ssl_context
    return {
        "server": config.server,
        "authorization": None if config.auth is None else await config.auth.authorization(),
        "auth": type(config.auth).__name__,
        "tls": None
        if ctx is None
        else (ctx.verify_mode, ctx.check_hostname, len(ctx.get_ca_certs())),
        "proxy": config.proxy,
        "tls_server_name": config.tls_server_name,
    }


# Each case: (cluster, user) given the test's directory and PKI, written as `dir/config`.
Case = Callable[[Path, pki.ClusterPKI], tuple[dict[str, Any], dict[str, Any] | None]]
VALID: dict[str, Case] = {
    "token": lambda d, c: ({"server": "http://127.0.0.1:1/"}, {"token": SECRET}),
    "token-wins-over-token-file": lambda d, c: (
        {"server": "http://127.0.0.1:1"},
        {"token": SECRET, "tokenFile": "missing"},
    ),
    "basic-auth": lambda d, c: (
        {"server": "http://127.0.0.1:1"},
        {"username": "admin", "password": SECRET},
    ),
    "empty-token-falls-to-basic-auth": lambda d, c: (
        {"server": "http://127.0.0.1:1"},
        {"token": "", "username": "admin", "password": SECRET},
    ),
    "no-user": lambda d, c: ({"server": "http://127.0.0.1:1"}, None),
    "empty-user": lambda d, c: ({"server": "http://127.0.0.1:1"}, {}),
    "ca-data-and-token": lambda d, c: (
        {
            "server": "https://127.0.0.1:1",
            "certificate-authority-data": b64(c.ca.cert.read_bytes()),
        },
        {"token": SECRET},
    ),
    "ca-file-relative": lambda d, c: (
        {"server": "https://127.0.0.1:1", "certificate-authority": _copy(c.ca.cert, d, "ca.crt")},
        {"token": SECRET},
    ),
    "client-certificate-data": lambda d, c: (
        {
            "server": "https://127.0.0.1:1",
            "certificate-authority-data": b64(c.ca.cert.read_bytes()),
        },
        {
            "client-certificate-data": b64(c.admin.cert.read_bytes()),
            "client-key-data": b64(c.admin.key.read_bytes()),
        },
    ),
    "client-certificate-files": lambda d, c: (
        {"server": "https://127.0.0.1:1", "certificate-authority": str(c.ca.cert)},
        {
            "client-certificate": _copy(c.admin.cert, d, "tls/admin.crt"),
            "client-key": _copy(c.admin.key, d, "tls/admin.key"),
        },
    ),
    "insecure-skip-tls-verify": lambda d, c: (
        {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True},
        {"token": SECRET},
    ),
    "tls-server-name-and-proxy": lambda d, c: (
        {
            "server": "https://127.0.0.1:1",
            "certificate-authority-data": b64(c.ca.cert.read_bytes()),
            "tls-server-name": "kubernetes.default",
            "proxy-url": "http://127.0.0.1:3128",
        },
        {"token": SECRET},
    ),
    "http-ignores-tls-material": lambda d, c: (
        {"server": "http://127.0.0.1:1", "certificate-authority": "/nonexistent/ca.crt"},
        {"client-certificate": "/nonexistent/admin.crt", "token": SECRET},
    ),
}


def _copy(source: Path, directory: Path, relative: str) -> str:
    """Copy `source` to `directory/relative` and return `relative` (resolved by the loader
    against the kubeconfig's directory)."""
    target = directory / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())
    return relative


@pytest.mark.parametrize("case", sorted(VALID))
async def test_same_connection_as_kubernetes_asyncio(
    case: str, tmp_path: Path, certs: pki.ClusterPKI
) -> None:
    cluster, user = VALID[case](tmp_path, certs)
    path = write(tmp_path / "config", document(cluster, user))
    ours = await load_kubeconfig(str(path))
    theirs = await _load_with_plugin(str(path), None)
    assert await facts(ours) == await facts(theirs)


async def test_a_kubeconfig_written_as_json_is_the_same_kubeconfig(
    tmp_path: Path, certs: pki.ClusterPKI
) -> None:
    """JSON is read without PyYAML (a controller's start does not import it then)."""
    cluster, user = VALID["client-certificate-files"](tmp_path, certs)
    doc = document(cluster, user)
    as_yaml = await load_kubeconfig(str(write(tmp_path / "yaml", doc)))
    as_json = await load_kubeconfig(str(write(tmp_path / "json", json.dumps(doc, indent=2))))
    assert await facts(as_json) == await facts(as_yaml)


async def test_token_file_is_reread_and_resolved_next_to_the_kubeconfig(tmp_path: Path) -> None:
    write(tmp_path / "creds" / "token", SECRET)
    path = write(
        tmp_path / "config",
        document({"server": "http://127.0.0.1:1"}, {"tokenFile": "creds/token"}),
    )
    config = await load_kubeconfig(str(path))
    assert isinstance(config.auth, TokenFileAuth)
    assert await config.auth.authorization() == f"Bearer {SECRET}"


async def test_https_without_a_user_loads(tmp_path: Path, certs: pki.ClusterPKI) -> None:
    """kubernetes-asyncio fails here with a TypeError; kubectl connects anonymously."""
    cluster = {"server": "https://127.0.0.1:1", "certificate-authority": str(certs.ca.cert)}
    path = write(tmp_path / "config", document(cluster, None, context={"cluster": "c"}))
    config = await load_kubeconfig(str(path))
    assert config.auth is None
    assert config.ssl_context is not None
    assert len(config.ssl_context.get_ca_certs()) == 1


async def test_client_certificate_files_reach_the_server(
    tmp_path: Path, certs: pki.ClusterPKI
) -> None:
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(certs.apiserver.cert, certs.apiserver.key)
    server_ctx.load_verify_locations(certs.ca.cert)
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    async with FakeApiServer(ssl_context=server_ctx) as api:
        cluster, user = VALID["client-certificate-files"](tmp_path, certs)
        path = write(tmp_path / "config", document({**cluster, "server": api.url}, user))
        async with await Client.from_kubeconfig(str(path)) as client:
            assert await client.request("GET", "/readyz") == "ok"


async def test_insecure_skip_tls_verify_accepts_an_unknown_server_certificate(
    tmp_path: Path, certs: pki.ClusterPKI
) -> None:
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(certs.apiserver.cert, certs.apiserver.key)
    async with FakeApiServer(ssl_context=server_ctx, tokens={SECRET}) as api:
        cluster = {"server": api.url, "insecure-skip-tls-verify": True}
        path = write(tmp_path / "config", document(cluster, {"token": SECRET}))
        async with await Client.from_kubeconfig(str(path)) as client:
            assert await client.request("GET", "/readyz") == "ok"


async def test_inline_key_material_leaves_no_file_behind(
    tmp_path: Path, certs: pki.ClusterPKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    cluster, user = VALID["client-certificate-data"](tmp_path, certs)
    path = write(tmp_path / "config", document(cluster, user))
    config = await load_kubeconfig(str(path))
    assert config.ssl_context is not None
    assert list(scratch.iterdir()) == []


async def test_files_are_merged_as_kubernetes_asyncio_merges_them(tmp_path: Path) -> None:
    """First entry of a name wins; current-context comes from the last file that sets it;
    a listed file that does not exist is skipped."""
    first = document({"server": "http://first:1"}, {"token": "first-token"}, current="main")
    second = document({"server": "http://second:1"}, {"token": "second-token"}, current="other")
    second["contexts"].append({"name": "other", "context": {"cluster": "c", "user": "u"}})
    a = write(tmp_path / "a", first)
    b = write(tmp_path / "b", second)
    listed = f"{a}:{tmp_path / 'missing'}:{b}"
    ours = await load_kubeconfig(listed)
    theirs = await _load_with_plugin(listed, None)
    assert await facts(ours) == await facts(theirs)
    assert ours.server == "http://first:1"
    assert await facts(await load_kubeconfig(listed, context="main")) == await facts(ours)


async def test_context_argument_selects_another_user(tmp_path: Path) -> None:
    doc = document({"server": "http://127.0.0.1:1"}, {"token": "main-token"})
    doc["users"].append({"name": "v", "user": {"token": "other-token"}})
    doc["contexts"].append({"name": "other", "context": {"cluster": "c", "user": "v"}})
    config = await load_kubeconfig(str(write(tmp_path / "config", doc)), context="other")
    assert isinstance(config.auth, StaticAuth)
    assert await config.auth.authorization() == "Bearer other-token"


BROKEN: dict[str, tuple[Callable[[Path], dict[str, Any] | str], str]] = {
    "not-yaml": (
        lambda d: f"clusters: [\n  token: {SECRET}\n",
        "not valid YAML at line 3, column 1",
    ),
    "not-json": (
        lambda d: '{"clusters": [{"token": "' + SECRET + '"}',
        "not valid YAML at line 2, column 1",
    ),
    "empty-file": (lambda d: "", "not a kubeconfig: the top level is not a mapping"),
    "a-list": (lambda d: f"- {SECRET}\n", "not a kubeconfig: the top level is not a mapping"),
    "no-current-context": (
        lambda d: document({"server": "http://a:1"}, {"token": SECRET}, current=None),
        "no current-context is set and no context was given",
    ),
    "unknown-context": (
        lambda d: document({"server": "http://a:1"}, {"token": SECRET}, current="nope"),
        "no context named 'nope'",
    ),
    "unknown-cluster": (
        lambda d: document(
            {"server": "http://a:1"}, {"token": SECRET}, context={"cluster": "x", "user": "u"}
        ),
        "context 'main' names cluster 'x', which is not there",
    ),
    "no-server": (
        lambda d: document({"proxy-url": "http://p:1"}, {"token": SECRET}),
        "cluster 'c' has no server",
    ),
    "clusters-not-a-list": (
        lambda d: {**document({"server": "http://a:1"}), "clusters": {"c": SECRET}},
        "clusters is not a list",
    ),
    "context-without-name": (
        lambda d: {**document({"server": "http://a:1"}), "contexts": [{"context": {}}]},
        "contexts[0] has no name",
    ),
    "user-without-user-section": (
        lambda d: {**document({"server": "http://a:1"}), "users": [{"name": "u"}]},
        "user 'u' has no user section",
    ),
    "bad-base64": (
        lambda d: document(
            {"server": "https://a:1", "certificate-authority-data": f"!{SECRET}"},
            {"token": SECRET},
        ),
        "cluster 'c': certificate-authority-data is not valid base64",
    ),
    "ca-file-missing": (
        lambda d: document(
            {"server": "https://a:1", "certificate-authority": "nope.crt"}, {"token": SECRET}
        ),
        "certificate-authority file {dir}/nope.crt does not exist",
    ),
    "ca-data-not-a-certificate": (
        lambda d: document(
            {"server": "https://a:1", "certificate-authority-data": b64(SECRET)},
            {"token": SECRET},
        ),
        "cannot use the cluster's certificate-authority: NO_CERTIFICATE_OR_CRL_FOUND",
    ),
    "client-key-not-a-key": (
        lambda d: document(
            {"server": "https://a:1"},
            {"client-certificate-data": b64(SECRET), "client-key-data": b64(SECRET)},
        ),
        "cannot use the user's client certificate:",
    ),
    "token-file-missing": (
        lambda d: document({"server": "http://a:1"}, {"tokenFile": "token"}),
        "user 'u': cannot read tokenFile {dir}/token: No such file or directory",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
async def test_a_broken_kubeconfig_says_where_and_never_what(case: str, tmp_path: Path) -> None:
    make, says = BROKEN[case]
    path = write(tmp_path / "config", make(tmp_path))
    with pytest.raises(ConfigError) as raised:
        await load_kubeconfig(str(path))
    message = str(raised.value)
    assert message.startswith(f"cannot load kubeconfig {path}: ")
    assert says.format(dir=tmp_path) in message
    assert SECRET not in message
    assert b64(SECRET) not in message


async def test_a_file_in_a_list_is_named_in_the_message(tmp_path: Path) -> None:
    good = write(tmp_path / "good", document({"server": "http://a:1"}))
    bad = write(tmp_path / "bad", "a: [\n")
    with pytest.raises(ConfigError, match=f"{bad}: not valid YAML at line 2"):
        await load_kubeconfig(f"{good}:{bad}")


async def test_no_file_of_the_list_exists(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        await load_kubeconfig(f"{tmp_path / 'a'}:{tmp_path / 'b'}")


def test_common_cases_do_not_import_kubernetes_asyncio(tmp_path: Path) -> None:
    """Its import alone costs ~0.3 s and ~34 MiB: paid only for exec plugins and auth providers."""
    path = write(tmp_path / "config", document({"server": "http://a:1"}, {"token": SECRET}))
    code = (
        "import asyncio, sys\n"
        "from kro.runtime.config import load_kubeconfig\n"
        f"asyncio.run(load_kubeconfig({str(path)!r}))\n"
        "print('kubernetes_asyncio' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.splitlines()[-1] == "False"  # after structlog's own debug line


async def test_exec_plugins_still_go_through_kubernetes_asyncio(tmp_path: Path) -> None:
    script = write(
        tmp_path / "plugin.py",
        "import json, sys\n"
        "json.dump({'apiVersion': 'client.authentication.k8s.io/v1beta1',"
        " 'kind': 'ExecCredential', 'status': {'token': 'from-plugin'}}, sys.stdout)\n",
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(script)],
        }
    }
    config = await load_kubeconfig(
        str(write(tmp_path / "config", document({"server": "http://a:1"}, user)))
    )
    assert type(config.auth).__name__ == "ExecAuth"
    assert config.auth is not None
    assert await config.auth.authorization() == "Bearer from-plugin"


# -- in-cluster ------------------------------------------------------------------------------------


def service_account(tmp_path: Path, certs: pki.ClusterPKI, token: str = SECRET) -> dict[str, str]:
    write(tmp_path / "token", token)
    return {"token_path": str(tmp_path / "token"), "ca_path": str(certs.ca.cert)}


@pytest.mark.parametrize(
    ("host", "server"),
    [("10.0.0.1", "https://10.0.0.1:443"), ("fd00::1", "https://[fd00::1]:443")],
    ids=["ipv4", "ipv6"],
)
def test_in_cluster_server_from_the_environment(
    host: str, server: str, tmp_path: Path, certs: pki.ClusterPKI
) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "443"}
    config = load_incluster(environ=environ, **service_account(tmp_path, certs))
    assert config.server == server
    assert isinstance(config.auth, TokenFileAuth)


HOST = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
# (environment, token file content or None for no file, whether ca.crt exists, message)
IN_CLUSTER_ERRORS: dict[str, tuple[dict[str, str], str | None, bool, str]] = {
    "no-host": ({}, SECRET, True, "Service host/port is not set."),
    "empty-host": (
        {**HOST, "KUBERNETES_SERVICE_HOST": ""},
        SECRET,
        True,
        "Service host/port is set but empty.",
    ),
    "no-token": (HOST, None, True, "Service token file does not exist."),
    "empty-token": (HOST, "", True, "Token file exists but empty."),
    "no-ca": (HOST, SECRET, False, "Service certification file does not exists."),
}


@pytest.mark.parametrize("case", sorted(IN_CLUSTER_ERRORS))
def test_in_cluster_errors_are_kubernetes_asyncios(
    case: str, tmp_path: Path, certs: pki.ClusterPKI
) -> None:
    environ, token, ca, says = IN_CLUSTER_ERRORS[case]
    if token is not None:
        write(tmp_path / "token", token)
    with pytest.raises(ConfigError) as raised:
        load_incluster(
            environ=environ,
            token_path=str(tmp_path / "token"),
            ca_path=str(certs.ca.cert if ca else tmp_path / "ca.crt"),
        )
    assert str(raised.value) == f"not running in a cluster: {says}"
