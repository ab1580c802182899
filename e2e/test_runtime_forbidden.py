"""RBAC refusals from the real API server surface as kro.runtime.errors.Forbidden, with fields.

A ServiceAccount may only read ConfigMaps in its own namespace (a Role + RoleBinding). Its
client can do exactly that; every other verb, resource or namespace is a 403 that arrives as
`Forbidden` (an `ApiError`, a `KubeError`) carrying status, reason and details, never as a
bare aiohttp error. An informer on a forbidden resource keeps retrying instead of crashing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from runtime_e2e_support import CONFIGMAPS, configmap, eventually

from kro.runtime import GVR, Client, Informer, errors
from kro.testing.adminapi import AdminApi
from kro.testing.pytest_plugin import ClusterHandle, service_account_kubeconfig

SECRETS = GVR("", "v1", "secrets")
SA = "narrow"


def grant_configmap_reads(admin: AdminApi, namespace: str) -> None:
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    admin.create(
        f"{rbac}/roles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "read-configmaps"},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
            ],
        },
    )
    admin.create(
        f"{rbac}/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "read-configmaps"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "read-configmaps",
            },
            "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": namespace}],
        },
    )


@pytest.fixture
async def narrow(
    kube_cluster: ClusterHandle, kube_admin: AdminApi, kube_namespace: str
) -> AsyncIterator[Client]:
    """A client authenticated as the ServiceAccount, once its Role is in effect."""
    kubeconfig = service_account_kubeconfig(kube_cluster, kube_admin, kube_namespace, SA)
    grant_configmap_reads(kube_admin, kube_namespace)
    async with await Client.from_kubeconfig(str(kubeconfig)) as client:

        async def allowed() -> bool:  # RBAC reaches the authorizer's cache within moments
            with contextlib.suppress(errors.Forbidden):
                await client.list(CONFIGMAPS, namespace=kube_namespace)
                return True
            return False

        await eventually(allowed, timeout_s=30, what="the Role to take effect")
        yield client


async def test_a_refused_write_is_forbidden_with_status_fields(
    narrow: Client, kube_namespace: str
) -> None:
    with pytest.raises(errors.Forbidden) as caught:
        await narrow.create(CONFIGMAPS, configmap("nope", {}), namespace=kube_namespace)
    error = caught.value
    assert isinstance(error, errors.ApiError)
    assert isinstance(error, errors.KubeError)
    assert error.status == 403
    assert error.reason == "Forbidden"
    assert f"system:serviceaccount:{kube_namespace}:{SA}" in error.message
    assert error.details.get("kind") == "configmaps"
    assert error.retry_after_s is None


@pytest.mark.parametrize(
    ("gvr", "where"),
    [(SECRETS, "own"), (CONFIGMAPS, "default"), (CONFIGMAPS, "all")],
    ids=["other-resource", "other-namespace", "cluster-wide"],
)
async def test_refused_reads_and_watches_are_forbidden(
    narrow: Client, kube_namespace: str, gvr: GVR, where: str
) -> None:
    namespace = {"own": kube_namespace, "default": "default", "all": None}[where]
    with pytest.raises(errors.Forbidden):
        await narrow.list(gvr, namespace=namespace)
    with pytest.raises(errors.Forbidden):
        await narrow.get(gvr, "kube-root-ca.crt", namespace=namespace or "default")
    with pytest.raises(errors.Forbidden):
        await first_event(narrow, gvr, namespace)


async def first_event(client: Client, gvr: GVR, namespace: str | None) -> object:
    events = client.watch(gvr, namespace=namespace, timeout_s=5)
    async with contextlib.aclosing(events):
        async for event in events:
            return event
    return None


async def test_an_informer_on_a_forbidden_resource_retries_instead_of_crashing(
    narrow: Client, kube_namespace: str
) -> None:
    informer = Informer(narrow, SECRETS, namespace=kube_namespace, backoff_base_s=0.1)
    task = asyncio.create_task(informer.run(), name="e2e.forbidden-informer")
    try:
        assert not await informer.wait_for_sync(timeout_s=1.0)
        assert not task.done(), "a 403 must be retried with backoff, not crash the informer"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
