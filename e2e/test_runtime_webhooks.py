"""kro.runtime's webhooks on the real control plane: the API server calls the operator.

The webhook example (examples/runtime/webhook_operator.py) runs in this process on a Manager of
its own, listening on 127.0.0.1 with a throw-away CA (kro.testing.webhookcerts). It writes its
ValidatingWebhookConfiguration, MutatingWebhookConfiguration and the two-version Cache CRD's
conversion itself (url clientConfig, its CA as caBundle; the admission webhooks limited to the
test's namespace); the tests then make ordinary requests through the API server, in both
versions, and check what the server decided and stored. A second test puts a handler past the
request's timeout under both failure policies, with the certificate read from a directory.

Each operator cleans up after itself: its Caches are deleted while it still converts, then its
configurations, and the CRD's conversion is set back to None, so nothing is left pointing at a
server that has gone.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from runtime_e2e_support import EXAMPLES, eventually, example

from kro.runtime import (
    GVK,
    GVR,
    AdmissionRequest,
    Client,
    Denied,
    Manager,
    ManagerOptions,
    errors,
)
from kro.runtime.certs import ServingCertificate
from kro.runtime.webhook_config import CRDS, MUTATING, VALIDATING
from kro.runtime.webhook_server import WebhookOptions
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle
from kro.testing.wait import wait_for
from kro.testing.webhookcerts import self_signed, write_cert_dir

V1, V2 = "example.kro.run/v1", "example.kro.run/v2"
CACHES_V1 = GVR("example.kro.run", "v1", "caches")
CACHES_V2 = GVR("example.kro.run", "v2", "caches")
CRD_NAME = "caches.example.kro.run"
ENGINE = "example.kro.run/engine"


@pytest.fixture
async def client(kube_cluster: ClusterHandle) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(str(kube_cluster.kubeconfig)) as c:
        yield c


@pytest.fixture(scope="module")
def cache_crd(kube_admin: AdminApi) -> Iterator[None]:
    manifest = yaml.safe_load((EXAMPLES / "cache-crd.yaml").read_text())
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    kube_admin.ensure(path, manifest)

    def established() -> bool:
        crd = kube_admin.get(f"{path}/{CRD_NAME}")
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for(established, timeout_s=60, interval_s=0.2, what="the Cache CRD Established")
    yield
    kube_admin.delete(f"{path}/{CRD_NAME}")


@pytest.fixture(scope="module")
def certificate() -> ServingCertificate:
    return self_signed()


@contextlib.asynccontextmanager
async def operator(
    client: Client, setup: Callable[[Manager], None], namespace: str, webhook: WebhookOptions
) -> AsyncIterator[Manager]:
    """Run `setup`'s webhooks on a Manager of their own, managing their configurations: ready
    (listening, configurations applied) on entry; on exit, the namespace's Caches are deleted
    while the conversion still answers, then everything the operator wrote is undone."""
    name = f"webhooks-e2e-{secrets.token_hex(3)}"
    options = ManagerOptions(handle_signals=False, namespace=namespace, name=name, webhook=webhook)
    manager = Manager(options, client=client)
    setup(manager)
    task = asyncio.create_task(manager.run(), name="e2e.webhooks")

    async def ready() -> bool:
        if task.done():
            task.result()  # raise what killed it
        return manager.is_ready()

    try:
        await eventually(ready, timeout_s=60, what="the webhooks to listen")
        yield manager
    finally:
        try:
            for cache in (await client.list(CACHES_V1, namespace=namespace))["items"]:
                await client.delete(CACHES_V1, cache["metadata"]["name"], namespace=namespace)
        finally:
            manager.stop()
            await asyncio.wait_for(task, timeout=30)
            for gvr in (VALIDATING, MUTATING):
                with contextlib.suppress(errors.NotFound):
                    await client.delete(gvr, name)
            reset = {"spec": {"conversion": {"strategy": "None", "webhook": None}}}
            await client.patch(CRDS, CRD_NAME, reset)


def cache(version: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": version, "kind": "Cache", "metadata": {"name": name}, "spec": spec}


@pytest.mark.usefixtures("cache_crd")
async def test_the_example_rejects_defaults_and_converts_real_requests(
    client: Client, kube_namespace: str, certificate: ServingCertificate
) -> None:
    ns = kube_namespace
    webhook = WebhookOptions(bind_address="127.0.0.1:0", certificates=certificate, manage=True)
    async with operator(client, example("webhook_operator").setup, ns, webhook) as manager:
        name = manager.options.name
        ca = base64.b64encode(certificate.ca_pem or b"").decode()
        validating = await client.get(VALIDATING, name)
        (hook,) = validating["webhooks"]
        port = manager.webhooks.addresses[0][1]
        assert hook["clientConfig"] == {
            "url": f"https://127.0.0.1:{port}/validate-example-kro-run-v2-cache",
            "caBundle": ca,
        }
        mutating = await client.get(MUTATING, name)
        assert mutating["webhooks"][0]["clientConfig"]["url"].endswith(
            "/mutate-example-kro-run-v2-cache"
        )
        conversion = (await client.get(CRDS, CRD_NAME))["spec"]["conversion"]
        assert conversion["strategy"] == "Webhook"
        assert conversion["webhook"]["clientConfig"]["caBundle"] == ca

        async def in_use() -> bool:
            """The API server picks up configurations and CRD changes a moment after they are
            written: dry runs show when it defaults, converts (a v2 object stored as v1 without
            the webhook comes back without spec.scale) and validates through the operator."""
            probe = cache(V2, "probe", scale={"replicas": 2})
            back = await client.create(CACHES_V2, probe, namespace=ns, dry_run=True)
            if back["spec"] != {"engine": "redis", "scale": {"replicas": 2}}:
                return False
            try:
                too_big = cache(V2, "probe", scale={"replicas": 9})
                await client.create(CACHES_V2, too_big, namespace=ns, dry_run=True)
            except errors.Forbidden:
                return True
            return False

        await eventually(in_use, timeout_s=30, what="the API server to call the webhooks")

        # Rejecting: through v2, and through v1 (the API server converts to v2 for the handler).
        with pytest.raises(errors.Forbidden) as refused:
            await client.create(CACHES_V2, cache(V2, "big", scale={"replicas": 9}), namespace=ns)
        assert "denied the request: a cache has at most 5 replicas" in refused.value.message
        with pytest.raises(errors.Forbidden, match="at most 5 replicas"):
            await client.create(CACHES_V1, cache(V1, "big", replicas=7), namespace=ns)

        # Defaulting: the engine and its label, in what the create returned and what is stored.
        created = await client.create(
            CACHES_V2, cache(V2, "a", scale={"replicas": 2}), namespace=ns
        )
        assert created["spec"] == {"engine": "redis", "scale": {"replicas": 2}}
        assert created["metadata"]["labels"] == {ENGINE: "redis"}

        # Converting: stored as v1, read as either; a v1 write read as v2, defaulted on the way.
        stored = await client.get(CACHES_V1, "a", namespace=ns)
        assert (stored["apiVersion"], stored["spec"]) == (V1, {"engine": "redis", "replicas": 2})
        await client.create(CACHES_V1, cache(V1, "b", replicas=3, engine="memcached"), namespace=ns)
        b = await client.get(CACHES_V2, "b", namespace=ns)
        assert (b["apiVersion"], b["spec"]) == (
            V2,
            {"engine": "memcached", "scale": {"replicas": 3}},
        )
        assert b["metadata"]["labels"] == {ENGINE: "memcached"}
        listed = (await client.list(CACHES_V2, namespace=ns))["items"]
        assert sorted((c["metadata"]["name"], c["spec"]["scale"]["replicas"]) for c in listed) == [
            ("a", 2),
            ("b", 3),
        ]

        # Validating an update against the stored object, in either version.
        with pytest.raises(errors.Forbidden, match=r"spec\.engine cannot change \(it is redis\)"):
            await client.patch(CACHES_V2, "a", {"spec": {"engine": "memcached"}}, namespace=ns)
        updated = await client.patch(CACHES_V1, "a", {"spec": {"replicas": 4}}, namespace=ns)
        assert updated["spec"] == {"engine": "redis", "replicas": 4}


@pytest.mark.usefixtures("cache_crd")
async def test_a_handler_past_the_timeout_is_judged_by_the_failure_policy(
    client: Client, kube_namespace: str, tmp_path: Path
) -> None:
    ns = kube_namespace
    write_cert_dir(tmp_path)

    async def slow(request: AdmissionRequest[Any]) -> None:
        if request.name == "probe":  # answers at once: shows the configuration is in use
            raise Denied("probed")
        await asyncio.sleep(30)

    def setup(manager: Manager) -> None:
        manager.controller().for_(GVK("example.kro.run", "v1", "Cache")).validate(slow)

    for policy in ("Ignore", "Fail"):
        webhook = WebhookOptions(
            bind_address="127.0.0.1:0",
            cert_dir=str(tmp_path),
            manage=True,
            failure_policy=policy,
            timeout_s=1,
        )
        async with operator(client, setup, ns, webhook):

            async def in_use() -> bool:
                probe = cache(V1, "probe", replicas=1)
                try:
                    await client.create(CACHES_V1, probe, namespace=ns, dry_run=True)
                except errors.Forbidden:
                    return True
                return False

            await eventually(in_use, timeout_s=30, what="the API server to call the webhook")
            started = time.monotonic()
            if policy == "Ignore":
                await client.create(CACHES_V1, cache(V1, "ignored", replicas=1), namespace=ns)
            else:
                with pytest.raises(errors.ApiError, match="failed calling webhook") as failed:
                    await client.create(CACHES_V1, cache(V1, "failed", replicas=1), namespace=ns)
                assert failed.value.status == 500
            elapsed = time.monotonic() - started
            # The handler's deadline (0.9 s of the 1 s timeout), not the handler's 30 s.
            assert elapsed < 5, f"{policy}: the request took {elapsed:.1f}s"
