"""M-03: a member's credentials are inert data. Inline tokens and client certificates against an
https server with an inline CA are accepted and reach the server; every other shape is refused
with a stable reason and a message that names the Secret, never a value."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fleet_fakes import (
    NAMESPACE,
    PASSWORD,
    TOKEN,
    b64,
    kubeconfig,
    never_shown,
    secret,
    server_context,
    token_kubeconfig,
)

from kro.fleet.credentials import REASONS, ClusterRefused, member_connection
from kro.runtime.client import Client
from kro.runtime.errors import Unauthorized
from kro.testing import pki
from kro.testing.fakeapi import FakeApiServer

pytestmark = pytest.mark.usefixtures("no_task_leaks")

SERVER = "https://127.0.0.1:6443"


def ca_data(certs: pki.ClusterPKI) -> str:
    return b64(certs.ca.cert.read_bytes())


def cert_user(certs: pki.ClusterPKI) -> dict[str, str]:
    return {
        "client-certificate-data": b64(certs.admin.cert.read_bytes()),
        "client-key-data": b64(certs.admin.key.read_bytes()),
    }


def cluster(certs: pki.ClusterPKI, **extra: Any) -> dict[str, Any]:
    return {"server": SERVER, "certificate-authority-data": ca_data(certs), **extra}


# -- accepted ---------------------------------------------------------------------------------


async def test_a_token_and_an_inline_ca_reach_a_tls_server(certs: pki.ClusterPKI) -> None:
    async with FakeApiServer(ssl_context=server_context(certs), tokens={TOKEN}) as api:
        member = member_connection(secret(token_kubeconfig(api.url, certs)), key="kubeconfig")
        assert (member.cluster, member.secret) == ("east", f"{NAMESPACE}/east")
        assert member.server == api.url
        assert member.auth == "token"
        async with Client.from_config(member.config) as client:
            assert (await client.request("GET", "/version"))["gitVersion"]


async def test_inline_client_certificates_reach_a_server_that_requires_them(
    certs: pki.ClusterPKI,
) -> None:
    context = server_context(certs, client_certificates=True)
    async with FakeApiServer(ssl_context=context) as api:
        doc = kubeconfig({**cluster(certs), "server": api.url}, cert_user(certs))
        member = member_connection(secret(doc), key="kubeconfig")
        assert member.auth == "client-certificate"
        assert member.config.auth is None
        async with Client.from_config(member.config) as client:
            assert await client.request("GET", "/readyz") == "ok"


async def test_the_ca_is_the_only_one_trusted(certs: pki.ClusterPKI, tmp_path: Path) -> None:
    """The CA in the kubeconfig, not the system's: a server signed by another CA is refused."""
    other = pki.generate(tmp_path / "other")
    async with FakeApiServer(ssl_context=server_context(other), tokens={TOKEN}) as api:
        member = member_connection(secret(token_kubeconfig(api.url, certs)), key="kubeconfig")
        assert member.config.ssl_context is not None
        assert len(member.config.ssl_context.get_ca_certs()) == 1
        async with Client.from_config(member.config) as client:
            with pytest.raises(Exception, match=r"certificate|SSL|TLS"):
                await client.request("GET", "/version")


async def test_a_token_and_a_client_certificate_are_both_used(certs: pki.ClusterPKI) -> None:
    doc = kubeconfig(cluster(certs), {"token": TOKEN, **cert_user(certs)})
    member = member_connection(secret(doc), key="kubeconfig")
    assert member.auth == "token+client-certificate"
    assert member.config.auth is not None
    assert await member.config.auth.authorization() == f"Bearer {TOKEN}"


async def test_a_wrong_token_is_a_401_not_a_refusal(certs: pki.ClusterPKI) -> None:
    """The Secret is well formed: whether the server takes the token is the probe's business."""
    async with FakeApiServer(ssl_context=server_context(certs), tokens={"other"}) as api:
        member = member_connection(secret(token_kubeconfig(api.url, certs)), key="kubeconfig")
        async with Client.from_config(member.config) as client:
            with pytest.raises(Unauthorized):
                await client.request("GET", "/version")


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param(lambda d: {**d, "current-context": None}, id="one-context-no-current"),
        pytest.param(lambda d: {**d, "clusters": d["clusters"] * 2}, id="first-entry-wins"),
    ],
)
def test_kubeconfig_shapes_kubectl_reads(
    certs: pki.ClusterPKI, shape: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    member = member_connection(secret(shape(token_kubeconfig(SERVER, certs))), key="kubeconfig")
    assert member.server == SERVER


def test_json_kubeconfig_custom_key_tls_server_name_and_trailing_slash(
    certs: pki.ClusterPKI,
) -> None:
    import json

    doc = kubeconfig(
        cluster(certs, server=SERVER + "/", **{"tls-server-name": "kubernetes"}),
        {"token": TOKEN},
    )
    member = member_connection(secret(json.dumps(doc), key="config"), key="config")
    assert member.server == SERVER
    assert member.config.tls_server_name == "kubernetes"


def test_inline_key_material_leaves_no_file_behind(
    certs: pki.ClusterPKI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    member = member_connection(
        secret(kubeconfig(cluster(certs), cert_user(certs))), key="kubeconfig"
    )
    assert member.config.ssl_context is not None
    assert list(scratch.iterdir()) == []


# -- refused ----------------------------------------------------------------------------------

Build = Callable[[pki.ClusterPKI, Path], dict[str, Any] | str | bytes | None]
"""A Secret's document from the PKI and a scratch directory (None: no data key at all)."""


def user_doc(**user: Any) -> Build:
    return lambda c, d: kubeconfig(cluster(c), {"token": TOKEN, **user})


REFUSED: dict[str, tuple[str, Build]] = {
    "no-data-key": ("MissingKubeconfig", lambda c, d: None),
    "not-yaml": (
        "UnparsableKubeconfig",
        lambda c, d: f"users:\n- name: u\n  user: {{token: {TOKEN}\n  : [",
    ),
    "not-a-mapping": ("UnparsableKubeconfig", lambda c, d: f"- {TOKEN}\n"),
    "python-tag": (
        "UnparsableKubeconfig",
        lambda c, d: f"!!python/object/apply:os.system ['touch {d / 'ran'}']\n",
    ),
    "users-not-a-list": ("UnparsableKubeconfig", lambda c, d: {"users": {"token": TOKEN}}),
    "exec-plugin": (
        "ExecPlugin",
        user_doc(exec={"apiVersion": "client.authentication.k8s.io/v1", "command": "touch"}),
    ),
    "auth-provider": (
        "AuthProvider",
        user_doc(**{"auth-provider": {"name": "oidc", "config": {"id-token": TOKEN}}}),
    ),
    "token-file": ("FilePath", user_doc(tokenFile="/var/run/secrets/token")),
    "client-certificate-file": (
        "FilePath",
        lambda c, d: kubeconfig(
            cluster(c), {"client-certificate": str(c.admin.cert), "client-key": str(c.admin.key)}
        ),
    ),
    "client-key-file-beside-data": (
        "FilePath",
        lambda c, d: kubeconfig(cluster(c), {**cert_user(c), "client-key": str(c.admin.key)}),
    ),
    "certificate-authority-file": (
        "FilePath",
        lambda c, d: kubeconfig(
            {"server": SERVER, "certificate-authority": str(c.ca.cert)}, {"token": TOKEN}
        ),
    ),
    "insecure-skip-tls-verify": (
        "InsecureSkipTLSVerify",
        lambda c, d: kubeconfig(cluster(c, **{"insecure-skip-tls-verify": True}), {"token": TOKEN}),
    ),
    "username-password": (
        "BasicAuth",
        lambda c, d: kubeconfig(cluster(c), {"username": "admin", "password": PASSWORD}),
    ),
    "impersonation": ("Impersonation", user_doc(**{"as": "system:admin"})),
    "http-server": (
        "InsecureServer",
        lambda c, d: kubeconfig(cluster(c, server="http://127.0.0.1:8080"), {"token": TOKEN}),
    ),
    "no-server": (
        "InvalidServer",
        lambda c, d: kubeconfig({"certificate-authority-data": ca_data(c)}, {"token": TOKEN}),
    ),
    "server-with-user-info": (
        "InvalidServer",
        lambda c, d: kubeconfig(
            cluster(c, server=f"https://admin:{PASSWORD}@127.0.0.1:6443"), {"token": TOKEN}
        ),
    ),
    "two-contexts-no-current": (
        "AmbiguousContext",
        lambda c, d: kubeconfig(
            cluster(c), {"token": TOKEN}, current=None, extra_contexts=["other"]
        ),
    ),
    "current-context-missing": (
        "NoContext",
        lambda c, d: kubeconfig(cluster(c), {"token": TOKEN}, current="elsewhere"),
    ),
    "no-context": (
        "NoContext",
        lambda c, d: {**kubeconfig(cluster(c), {"token": TOKEN}, current=None), "contexts": []},
    ),
    "no-ca": ("MissingCertificateAuthority", lambda c, d: kubeconfig({"server": SERVER}, {})),
    "no-user": ("MissingCredentials", lambda c, d: kubeconfig(cluster(c), None)),
    "empty-user": ("MissingCredentials", lambda c, d: kubeconfig(cluster(c), {})),
    "certificate-without-key": (
        "MissingCredentials",
        lambda c, d: kubeconfig(
            cluster(c), {"client-certificate-data": b64(c.admin.cert.read_bytes())}
        ),
    ),
    "ca-not-base64": (
        "InvalidData",
        lambda c, d: kubeconfig(cluster(c, **{"certificate-authority-data": "abc"}), {}),
    ),
    "token-with-a-line-break": ("InvalidData", user_doc(token=f"{TOKEN}\nX-Other: 1")),
    "ca-not-a-certificate": (
        "InvalidTLSMaterial",
        lambda c, d: kubeconfig(
            cluster(c, **{"certificate-authority-data": b64(TOKEN)}), {"token": TOKEN}
        ),
    ),
    "key-of-another-certificate": (
        "InvalidTLSMaterial",
        lambda c, d: kubeconfig(
            cluster(c),
            {
                "client-certificate-data": b64(c.scheduler.cert.read_bytes()),
                "client-key-data": b64(c.admin.key.read_bytes()),
            },
        ),
    ),
}


@pytest.mark.parametrize(("reason", "build"), REFUSED.values(), ids=REFUSED.keys())
def test_refused_with_the_secret_and_reason_and_no_value(
    certs: pki.ClusterPKI, tmp_path: Path, reason: str, build: Build
) -> None:
    doc = build(certs, tmp_path)
    with pytest.raises(ClusterRefused) as caught:
        member_connection(secret(doc), key="kubeconfig")
    refusal = caught.value
    assert refusal.reason == reason
    assert reason in REASONS
    assert (refusal.cluster, refusal.secret) == ("east", f"{NAMESPACE}/east")
    message = str(refusal)
    assert message.startswith(f"cluster Secret {NAMESPACE}/east refused ({reason}): ")
    docs = [doc] if isinstance(doc, dict) else []
    for text in never_shown(certs, *docs):
        assert text not in message
        assert text not in refusal.detail
    assert not (tmp_path / "ran").exists()  # nothing in a kubeconfig runs


def test_a_data_value_that_is_not_base64_is_refused(certs: pki.ClusterPKI) -> None:
    bad = secret(None)
    bad["data"]["kubeconfig"] = f"{TOKEN}!"
    with pytest.raises(ClusterRefused, match=r"\(InvalidData\): data key 'kubeconfig'") as caught:
        member_connection(bad, key="kubeconfig")
    assert TOKEN not in str(caught.value)


def test_the_configured_key_is_the_one_read(certs: pki.ClusterPKI) -> None:
    with pytest.raises(ClusterRefused, match="no data key 'config'"):
        member_connection(secret(token_kubeconfig(SERVER, certs)), key="config")


def test_every_reason_is_exercised() -> None:
    assert {reason for reason, _ in REFUSED.values()} | {"InvalidData"} == REASONS
