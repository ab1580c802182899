"""The webhook server over real HTTPS on loopback: routes, verdicts, deadlines, certificates that
rotate, the configurations it manages, and its life inside a Manager."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import aiohttp
import orjson
import pytest

from kro.runtime.admission import AdmissionRequest, Denied
from kro.runtime.certs import CertDir, ServingCertificate
from kro.runtime.client import Client
from kro.runtime.discovery import ResourceInfo
from kro.runtime.gvk import GVK, GVR
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.webhook_server import (
    WebhookOptions,
    WebhookServer,
    go_duration_s,
    handler_deadline_s,
    webhook_path,
)
from kro.testing.webhookcerts import self_signed, write_cert_dir

pytestmark = pytest.mark.usefixtures("no_task_leaks")

WIDGET = GVK("example.kro.run", "v1", "Widget")
LOOPBACK = "127.0.0.1:0"


def widget(size: int, api_version: str = "example.kro.run/v1") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"size": size},
    }


def admission_review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "uid-1",
            "kind": {"group": "example.kro.run", "version": "v1", "kind": "Widget"},
            "resource": {"group": "example.kro.run", "version": "v1", "resource": "widgets"},
            "operation": operation,
            "namespace": "ns",
            "name": "w",
            "userInfo": {"username": "alice"},
            "object": obj,
        },
    }


def trusting(certificate: ServingCertificate) -> ssl.SSLContext:
    assert certificate.ca_pem is not None
    return ssl.create_default_context(cadata=certificate.ca_pem.decode())


def at_most_ten(request: AdmissionRequest[Any]) -> None:
    if request.object["spec"]["size"] > 10:
        raise Denied("size must be at most 10")


async def default_color(request: AdmissionRequest[Any]) -> None:
    request.object["spec"].setdefault("color", "blue")


def to_v2(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    obj["spec"] = {"dimensions": {"size": obj["spec"].pop("size")}}
    return obj


@pytest.fixture
async def certificate() -> ServingCertificate:
    return await asyncio.to_thread(self_signed)


@pytest.fixture
async def server(certificate: ServingCertificate) -> AsyncIterator[WebhookServer]:
    webhooks = WebhookServer(WebhookOptions(bind_address=LOOPBACK, certificates=certificate))
    webhooks.validator(WIDGET, at_most_ten)
    webhooks.defaulter(WIDGET, default_color)
    webhooks.converter(WIDGET, to_v2)
    await webhooks.start()
    try:
        yield webhooks
    finally:
        await webhooks.stop()


def base_url(server: WebhookServer) -> str:
    host, port = server.addresses[0]
    return f"https://{host}:{port}"


async def post(server: WebhookServer, path: str, body: Any, ctx: ssl.SSLContext) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(base_url(server) + path, data=orjson.dumps(body), ssl=ctx) as response,
    ):
        text = await response.read()
        try:
            return response.status, orjson.loads(text)
        except orjson.JSONDecodeError:
            return response.status, text.decode()


# -- routes and verdicts ---------------------------------------------------------------------------


async def test_paths_are_named_as_controller_runtime_names_them(server: WebhookServer) -> None:
    assert webhook_path("validate", WIDGET) == "/validate-example-kro-run-v1-widget"
    assert webhook_path("mutate", GVK("", "v1", "ConfigMap")) == "/mutate-core-v1-configmap"
    assert server.paths() == {
        "/validate-example-kro-run-v1-widget": "validate Widget.example.kro.run/v1",
        "/mutate-example-kro-run-v1-widget": "default Widget.example.kro.run/v1",
        "/convert": "convert",
    }


async def test_validation_over_https_allows_and_denies(
    server: WebhookServer, certificate: ServingCertificate
) -> None:
    ctx = trusting(certificate)
    path = "/validate-example-kro-run-v1-widget"
    status, ok = await post(server, path, admission_review(widget(3)), ctx)
    assert status == 200
    assert ok == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "uid-1", "allowed": True},
    }
    _, no = await post(server, path, admission_review(widget(11)), ctx)
    assert no["response"]["allowed"] is False
    assert no["response"]["status"]["message"] == "size must be at most 10"


async def test_defaulting_over_https_answers_with_a_json_patch(
    server: WebhookServer, certificate: ServingCertificate
) -> None:
    _, answer = await post(
        server,
        "/mutate-example-kro-run-v1-widget",
        admission_review(widget(3)),
        trusting(certificate),
    )
    response = answer["response"]
    assert response["patchType"] == "JSONPatch"
    assert orjson.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/spec/color", "value": "blue"}
    ]


async def test_conversion_over_https(
    server: WebhookServer, certificate: ServingCertificate
) -> None:
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "c1", "desiredAPIVersion": "example.kro.run/v2", "objects": [widget(4)]},
    }
    _, answer = await post(server, "/convert", body, trusting(certificate))
    assert answer["response"]["result"] == {"status": "Success"}
    (converted,) = answer["response"]["convertedObjects"]
    assert converted["apiVersion"] == "example.kro.run/v2"
    assert converted["spec"] == {"dimensions": {"size": 4}}


async def test_a_body_that_is_not_a_review_gets_400_and_why(
    server: WebhookServer, certificate: ServingCertificate
) -> None:
    status, text = await post(
        server, "/validate-example-kro-run-v1-widget", {"kind": "Pod"}, trusting(certificate)
    )
    assert status == 400
    assert "expected a AdmissionReview" in text


async def test_an_unknown_path_is_404(
    server: WebhookServer, certificate: ServingCertificate
) -> None:
    status, _ = await post(server, "/validate-core-v1-pod", {}, trusting(certificate))
    assert status == 404


async def test_a_client_that_does_not_trust_the_ca_cannot_connect(server: WebhookServer) -> None:
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await post(server, "/convert", {}, ssl.create_default_context())


# -- deadlines -------------------------------------------------------------------------------------


def test_go_durations_as_the_api_server_writes_them() -> None:
    assert go_duration_s("10s") == 10
    assert go_duration_s("1m30s") == 90
    assert go_duration_s("2.5s") == 2.5
    assert go_duration_s("250ms") == 0.25
    assert go_duration_s("") is None
    assert go_duration_s("10") is None
    assert go_duration_s("10s; drop") is None


def test_handlers_get_the_api_server_s_timeout_less_a_tenth_at_most_a_second() -> None:
    assert handler_deadline_s(10) == 9
    assert handler_deadline_s(30) == 29
    assert handler_deadline_s(1) == pytest.approx(0.9)


async def test_a_handler_past_the_request_s_timeout_gets_504_so_the_failure_policy_decides(
    certificate: ServingCertificate,
) -> None:
    async def slow(request: AdmissionRequest[Any]) -> None:
        await asyncio.sleep(30)

    webhooks = WebhookServer(WebhookOptions(bind_address=LOOPBACK, certificates=certificate))
    webhooks.validator(WIDGET, slow)
    await webhooks.start()
    try:
        path = "/validate-example-kro-run-v1-widget?timeout=200ms"
        started = asyncio.get_running_loop().time()
        status, text = await post(
            webhooks, path, admission_review(widget(1)), trusting(certificate)
        )
        elapsed = asyncio.get_running_loop().time() - started
    finally:
        await webhooks.stop()
    assert status == 504
    assert "did not answer within 0.18s" in text
    assert elapsed < 5


# -- certificates ----------------------------------------------------------------------------------


async def test_without_a_certificate_the_server_says_how_to_get_one() -> None:
    webhooks = WebhookServer(WebhookOptions(bind_address=LOOPBACK))
    webhooks.validator(WIDGET, at_most_ten)
    with pytest.raises(ValueError, match=r"cert_dir=.*kro\.testing\.webhookcerts"):
        await webhooks.start()
    await webhooks.stop()


async def eventually(
    probe: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 10
) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await probe():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_rotated_cert_dir_is_served_without_a_restart(tmp_path: Path) -> None:
    first = await asyncio.to_thread(write_cert_dir, tmp_path)
    webhooks = WebhookServer(
        WebhookOptions(bind_address=LOOPBACK, cert_dir=str(tmp_path), cert_poll_s=0.02)
    )
    webhooks.validator(WIDGET, at_most_ten)
    await webhooks.start()
    path, body = "/validate-example-kro-run-v1-widget", admission_review(widget(1))

    async def trusted_by(certificate: ServingCertificate) -> bool:
        try:
            status, _ = await post(webhooks, path, body, trusting(certificate))
        except aiohttp.ClientConnectorCertificateError:
            return False
        return status == 200

    try:
        assert await trusted_by(first)
        second = await asyncio.to_thread(write_cert_dir, tmp_path)
        await eventually(lambda: trusted_by(second), "the rotated certificate to be served")
        assert not await trusted_by(first)
        assert webhooks.certificate == second

        (tmp_path / "tls.key").write_bytes(first.key_pem)  # a key of another certificate
        await asyncio.sleep(0.1)  # several polls: each fails to load and keeps what serves
        assert await trusted_by(second)
    finally:
        await webhooks.stop()


def test_a_cert_dir_without_a_ca_file_has_no_ca(tmp_path: Path) -> None:
    written = write_cert_dir(tmp_path)
    (tmp_path / "ca.crt").unlink()
    read = CertDir(tmp_path).read()
    assert (read.cert_pem, read.key_pem, read.ca_pem) == (written.cert_pem, written.key_pem, None)


# -- managed configurations ------------------------------------------------------------------------


class FakeMapper:
    async def resource_for(self, gvk: GVK) -> ResourceInfo:
        plural = gvk.kind.lower() + "s"
        return ResourceInfo(GVR(gvk.group, gvk.version, plural), gvk, True, frozenset())


class FakeClient:
    """What the server asks of a client: discovery, and server-side applies (recorded)."""

    def __init__(self) -> None:
        self.mapper = FakeMapper()
        self.applied: list[tuple[GVR, dict[str, Any], str, bool]] = []

    async def apply(
        self, gvr: GVR, obj: dict[str, Any], *, field_manager: str, force: bool
    ) -> dict[str, Any]:
        self.applied.append((gvr, obj, field_manager, force))
        return obj


async def test_managed_configurations_point_at_the_server_with_the_ca(
    certificate: ServingCertificate,
) -> None:
    client = FakeClient()
    webhooks = WebhookServer(
        WebhookOptions(
            bind_address=LOOPBACK,
            certificates=certificate,
            manage=True,
            failure_policy="Ignore",
            timeout_s=5,
        ),
        name="widgets-operator",
        client=cast(Client, client),
        namespace="team-a",
    )
    webhooks.validator(WIDGET, at_most_ten, operations=("CREATE", "UPDATE", "DELETE"))
    webhooks.defaulter(WIDGET, default_color)
    webhooks.converter(WIDGET, to_v2)
    await webhooks.start()
    try:
        url = base_url(webhooks)
        ca = base64.b64encode(certificate.ca_pem or b"").decode()
        kinds = [(gvr.resource, obj["kind"]) for gvr, obj, _, _ in client.applied]
        assert kinds == [
            ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration"),
            ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration"),
            ("customresourcedefinitions", "CustomResourceDefinition"),
        ]
        assert {(manager, force) for _, _, manager, force in client.applied} == {
            ("widgets-operator", True)
        }
        validating, mutating, crd = (obj for _, obj, _, _ in client.applied)
        (hook,) = validating["webhooks"]
        assert hook == {
            "name": "widgets.example.kro.run.widgets-operator",
            "clientConfig": {"url": f"{url}/validate-example-kro-run-v1-widget", "caBundle": ca},
            "rules": [
                {
                    "apiGroups": ["example.kro.run"],
                    "apiVersions": ["v1"],
                    "resources": ["widgets"],
                    "operations": ["CREATE", "DELETE", "UPDATE"],
                    "scope": "*",
                }
            ],
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Ignore",
            "timeoutSeconds": 5,
            "matchPolicy": "Equivalent",
            "namespaceSelector": {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]}
                ]
            },
        }
        assert mutating["metadata"]["name"] == "widgets-operator"
        assert mutating["webhooks"][0]["clientConfig"]["url"].endswith(
            "/mutate-example-kro-run-v1-widget"
        )
        assert crd["metadata"]["name"] == "widgets.example.kro.run"
        assert crd["spec"]["conversion"] == {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {"url": f"{url}/convert", "caBundle": ca},
                "conversionReviewVersions": ["v1"],
            },
        }
        assert webhooks.is_ready()
    finally:
        await webhooks.stop()


async def test_a_rotated_ca_is_applied_again(tmp_path: Path) -> None:
    await asyncio.to_thread(write_cert_dir, tmp_path)
    client = FakeClient()
    webhooks = WebhookServer(
        WebhookOptions(
            bind_address=LOOPBACK, cert_dir=str(tmp_path), cert_poll_s=0.02, manage=True
        ),
        client=cast(Client, client),
    )
    webhooks.validator(WIDGET, at_most_ten)
    await webhooks.start()
    try:
        assert len(client.applied) == 1
        second = await asyncio.to_thread(write_cert_dir, tmp_path)
        ca = base64.b64encode(second.ca_pem or b"").decode()

        async def reapplied() -> bool:
            return any(
                obj["webhooks"][0]["clientConfig"].get("caBundle") == ca
                for _, obj, _, _ in client.applied
            )

        await eventually(reapplied, "the new CA in the configuration")
    finally:
        await webhooks.stop()


async def test_a_server_on_every_interface_needs_to_be_told_its_url(
    certificate: ServingCertificate,
) -> None:
    webhooks = WebhookServer(
        WebhookOptions(bind_address="0.0.0.0:0", certificates=certificate, manage=True),
        client=cast(Client, FakeClient()),
    )
    webhooks.validator(WIDGET, at_most_ten)
    with pytest.raises(ValueError, match=r"url=\.\.\.\) or service="):
        await webhooks.start()
    await webhooks.stop()


# -- in a manager ----------------------------------------------------------------------------------


async def test_the_builder_registers_webhooks_the_manager_serves_them_and_readiness_waits(
    certificate: ServingCertificate,
) -> None:
    manager = Manager(
        ManagerOptions(
            handle_signals=False,
            webhook=WebhookOptions(bind_address=LOOPBACK, certificates=certificate),
        )
    )
    manager.controller("widgets").for_(WIDGET).validate(at_most_ten).default(default_color)
    assert not manager.is_ready(), "not ready before the webhooks listen"
    with pytest.raises(ValueError, match="one per CRD"):
        manager.controller().for_(WIDGET).convert(to_v2).convert(to_v2)
    task = asyncio.create_task(manager.run())
    try:
        await eventually(lambda: _true(manager.webhooks.is_ready()), "the webhooks to listen")
        assert manager.is_ready()
        status, answer = await post(
            manager.webhooks,
            "/validate-example-kro-run-v1-widget",
            admission_review(widget(99)),
            trusting(certificate),
        )
        assert (status, answer["response"]["allowed"]) == (200, False)
        with pytest.raises(RuntimeError, match="before the manager runs"):
            manager.webhooks.validator(WIDGET, at_most_ten)
        address = base_url(manager.webhooks)
    finally:
        manager.stop()
        await asyncio.wait_for(task, timeout=10)
    with pytest.raises(aiohttp.ClientConnectorError):
        async with aiohttp.ClientSession() as session:
            await session.post(address + "/convert", ssl=trusting(certificate))


async def test_a_manager_without_webhooks_takes_no_port() -> None:
    manager = Manager(ManagerOptions(handle_signals=False))
    task = asyncio.create_task(manager.run())
    await manager.wait_for_serving()
    assert manager.webhooks.addresses == []
    manager.stop()
    await asyncio.wait_for(task, timeout=10)


async def _true(value: bool) -> bool:
    return value
