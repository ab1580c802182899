"""An operator's test as a third party writes it, with nothing but what kro ships.

The operator below (a "quota keeper": every namespace labelled `example.kro.run/quota` gets a
ConfigMap `quota` with that value, and a namespace whose label is not a number gets a Warning
Event instead) stands for someone else's module; the tests use only the pytest plugin's
fixtures (`kube_cluster`, `kube_namespace`), kro.testing.operator's `run_operator` and
kro.runtime's client: no helper of this repository. One test is asyncio code, the other plain
synchronous code (the `with` form, the operator in a thread of its own).
"""

from __future__ import annotations

from typing import Any

from kro.runtime import GVR, Client, Manager, Object, TerminalError, errors
from kro.testing.operator import run_operator
from kro.testing.pytest_plugin import ClusterHandle

QUOTA = "example.kro.run/quota"
CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")
EVENTS = GVR("", "v1", "events")


# -- the operator under test (someone else's module) ----------------------------------------------


def setup(manager: Manager) -> None:
    async def keep_quota(namespace: Object) -> None:
        value = (namespace["metadata"].get("labels") or {}).get(QUOTA)
        if value is None:
            return
        if not value.isdigit():
            raise TerminalError(f"label {QUOTA}={value!r} is not a number")
        name = namespace["metadata"]["name"]
        await manager.client.apply({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "quota", "namespace": name},
            "data": {"pods": value},
        })  # fmt: skip

    manager.controller("quota-keeper").for_("Namespace").reconcile_objects(keep_quota)


# -- its tests ------------------------------------------------------------------------------------


async def quota_of(client: Client, namespace: str) -> str | None:
    try:
        found = await client.get(CONFIGMAPS, "quota", namespace=namespace)
    except errors.NotFound:
        return None
    return str(found["data"]["pods"])


async def warnings_about(client: Client, namespace: str) -> list[dict[str, Any]]:
    """Events about a Namespace live in `default` (a cluster-scoped object's Events do)."""
    selector = f"type=Warning,involvedObject.name={namespace}"
    found = await client.list(EVENTS, namespace="default", field_selector=selector)
    return list(found.get("items") or [])


async def test_the_quota_keeper_follows_the_label(
    kube_cluster: ClusterHandle, kube_namespace: str
) -> None:
    async with run_operator(setup, kubeconfig=kube_cluster.kubeconfig) as op:
        client = op.client
        await client.patch(NAMESPACES, kube_namespace, {"metadata": {"labels": {QUOTA: "10"}}})
        assert await op.wait_for(lambda: quota_of(client, kube_namespace), what="the quota") == "10"

        await client.patch(NAMESPACES, kube_namespace, {"metadata": {"labels": {QUOTA: "lots"}}})
        (warning,) = await op.wait_for(
            lambda: warnings_about(client, kube_namespace), what="a Warning for the bad label"
        )
        assert warning["reason"] == "ReconcileFailed"
        assert "is not a number" in warning["message"]
        assert warning["source"] == {"component": "quota-keeper"}
        assert await quota_of(client, kube_namespace) == "10", "a bad label changes nothing"
        assert op.reconciles("quota-keeper", result="error") >= 1


def test_the_quota_keeper_from_synchronous_code(
    kube_cluster: ClusterHandle, kube_namespace: str
) -> None:
    with run_operator(setup, kubeconfig=kube_cluster.kubeconfig) as op:
        labels = {"metadata": {"labels": {QUOTA: "3"}}}
        op.call(op.client.patch, NAMESPACES, kube_namespace, labels)
        op.wait_for_reconciles(1, controller="quota-keeper")
        op.wait_for(
            lambda: op.call(quota_of, op.client, kube_namespace) == "3", what="the quota of 3"
        )
