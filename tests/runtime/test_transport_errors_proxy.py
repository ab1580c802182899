"""Transport errors over real TLS, broken by kro.testing.faultproxy: the proxy the e2e tests put
in front of kube-apiserver, here in front of the in-process fake API server with the harness's
PKI. Whatever the proxy does (reset, garbage instead of the response, silence), the error names
the request and the failure and never the bearer token; switched back, the client recovers."""

from __future__ import annotations

import dataclasses
import ssl
import traceback
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakeapi_options import FAST

from kro.runtime.client import Client
from kro.runtime.config import ConnectionConfig, StaticAuth
from kro.runtime.errors import RequestTimeout, TransportError
from kro.runtime.gvk import GVR
from kro.testing import pki
from kro.testing.fakeapi import FakeApiServer
from kro.testing.faultproxy import FaultProxy, Mode, proxied_kubeconfig

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
TOKEN = "kro-proxy-7c1e-bearer-T0KEN"
PATH = "/api/v1/namespaces/default/configmaps/a"
OPTIONS = dataclasses.replace(FAST, max_retries=0, request_timeout_s=1.0, connect_timeout_s=1.0)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> pki.ClusterPKI:
    return pki.generate(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def api(certs: pki.ClusterPKI) -> AsyncIterator[FakeApiServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.apiserver.cert, certs.apiserver.key)
    async with FakeApiServer(tokens={TOKEN}, ssl_context=context) as server:
        server.seed(CM, {"metadata": {"name": "a", "namespace": "default"}, "data": {"k": "v"}})
        yield server


@pytest.fixture
def proxy(api: FakeApiServer) -> Iterator[FaultProxy]:
    with FaultProxy.for_server(api.url) as running:
        yield running


def client_for(proxy: FaultProxy, certs: pki.ClusterPKI, **options: Any) -> Client:
    """A client that reaches the fake API through the proxy, verifying its certificate."""
    context = ssl.create_default_context(cafile=str(certs.ca.cert))
    config = ConnectionConfig(
        server=proxy.url, ssl_context=context, auth=StaticAuth(f"Bearer {TOKEN}")
    )
    return Client.from_config(config, dataclasses.replace(OPTIONS, **options))


def assert_described(error: TransportError) -> None:
    message = str(error)
    assert message.startswith(f"GET {PATH}"), message
    assert error.reason, message
    assert error.reason in message, message
    text = "\n".join([message, repr(error), *traceback.format_exception(error)])
    assert TOKEN not in text
    assert "authorization" not in text.lower()


async def test_tls_passes_through_untouched(proxy: FaultProxy, certs: pki.ClusterPKI) -> None:
    async with client_for(proxy, certs) as client:
        got = await client.get(CM, "a", namespace="default")
    assert got["data"] == {"k": "v"}
    assert proxy.accepted >= 1


async def test_reset_connections(proxy: FaultProxy, certs: pki.ClusterPKI) -> None:
    async with client_for(proxy, certs) as client:
        await client.get(CM, "a", namespace="default")  # one pooled connection, open
        proxy.set_mode(Mode.RESET)
        assert proxy.faults(Mode.RESET) >= 1  # the open one was reset at the switch
        with pytest.raises(TransportError) as info:
            await client.get(CM, "a", namespace="default")
        assert_described(info.value)
        proxy.set_mode(Mode.PASS)
    async with client_for(proxy, certs) as client:
        assert await client.get(CM, "a", namespace="default")


@pytest.mark.parametrize("warm", [False, True], ids=["new-connection", "pooled-connection"])
async def test_garbage_instead_of_the_response(
    proxy: FaultProxy, certs: pki.ClusterPKI, warm: bool
) -> None:
    async with client_for(proxy, certs) as client:
        if warm:
            await client.get(CM, "a", namespace="default")
        proxy.set_mode(Mode.GARBAGE)
        with pytest.raises(TransportError) as info:
            await client.get(CM, "a", namespace="default")
        assert_described(info.value)
        assert proxy.faults(Mode.GARBAGE) >= 1
        proxy.set_mode(Mode.PASS)
        # The real client retries a failed GET: that is how it gets over a broken connection.
    async with client_for(proxy, certs, max_retries=2) as client:
        assert await client.get(CM, "a", namespace="default")


async def test_stall_times_out_and_releases(proxy: FaultProxy, certs: pki.ClusterPKI) -> None:
    async with client_for(proxy, certs, request_timeout_s=0.3) as client:
        await client.get(CM, "a", namespace="default")
        proxy.set_mode(Mode.STALL)
        with pytest.raises(RequestTimeout) as info:
            await client.get(CM, "a", namespace="default")
        assert_described(info.value)
        assert proxy.faults(Mode.STALL) >= 1
        proxy.set_mode(Mode.PASS)
        assert await client.get(CM, "a", namespace="default")


async def test_an_unverifiable_certificate_says_why(
    proxy: FaultProxy, certs: pki.ClusterPKI
) -> None:
    config = ConnectionConfig(
        server=proxy.url,
        ssl_context=ssl.create_default_context(),  # the system's CAs: not the cluster's
        auth=StaticAuth(f"Bearer {TOKEN}"),
    )
    async with Client.from_config(config, OPTIONS) as client:
        with pytest.raises(TransportError) as info:
            await client.get(CM, "a", namespace="default")
    assert_described(info.value)
    assert info.value.reason == "ClientConnectorCertificateError"
    assert "certificate verification failed: unable to get local issuer certificate" in str(
        info.value
    )


def test_a_kubeconfig_through_the_proxy_keeps_credentials_and_names_the_server(
    tmp_path: Path,
) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters:\n- name: a\n  cluster: {server: 'https://127.0.0.1:6443'}\n"
        "- name: b\n  cluster: {server: 'https://api.example.com:443'}\n"
        "users:\n- name: u\n  user: {token: t0k}\n"
        "contexts:\n- name: c\n  context: {cluster: a, user: u}\n"
    )
    out = proxied_kubeconfig(source, "https://127.0.0.1:1234", tmp_path / "out" / "kubeconfig")
    config = yaml.safe_load(out.read_text())
    clusters = {c["name"]: c["cluster"] for c in config["clusters"]}
    assert clusters["a"] == {"server": "https://127.0.0.1:1234"}
    assert clusters["b"] == {
        "server": "https://127.0.0.1:1234",
        "tls-server-name": "api.example.com",
    }
    assert config["users"] == [{"name": "u", "user": {"token": "t0k"}}]
    assert out.stat().st_mode & 0o077 == 0
