"""Manifests and shortcuts shared by the kro.applyset unit tests (the fake API server itself is
kro.testing.fakeapi)."""

from __future__ import annotations

import copy
from typing import Any

from kro.api.names import ANNOTATION_APPLY_ORDER, LABEL_NODE_ID
from kro.applyset import Desired
from kro.applyset.prune import PruneResult
from kro.runtime.gvk import GVR
from kro.testing.fakeapi import FakeApiServer, FakeResource, Fault

NS = "team-a"
CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
WEBAPP = FakeResource("example.kro.run", "v1alpha1", "webapps", "WebApp")
WEBAPPS = WEBAPP.gvr
WIDGET = FakeResource("widgets.example.com", "v1", "widgets", "Widget", namespaced=False)
WIDGETS = WIDGET.gvr


def seed_parent(api: FakeApiServer, name: str = "app", namespace: str = NS) -> dict[str, Any]:
    """A WebApp instance to act as the ApplySet parent."""
    return api.seed(
        WEBAPPS,
        {
            "apiVersion": "example.kro.run/v1alpha1",
            "kind": "WebApp",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1},
        },
    )


def configmap(
    name: str,
    *,
    namespace: str = NS,
    node_id: str | None = None,
    order: int | str | None = None,
    data: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    metadata["labels"] = {LABEL_NODE_ID: node_id or name}
    if order is not None:
        metadata["annotations"] = {ANNOTATION_APPLY_ORDER: str(order)}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": data or {"key": name},
    }


def widget(name: str, *, node_id: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "widgets.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "labels": {LABEL_NODE_ID: node_id or name}},
        "spec": {"size": 1},
    }


def live(api: FakeApiServer, gvr: GVR, name: str, namespace: str = "") -> dict[str, Any] | None:
    """What the caller's GET would return right now (a copy, like a response body)."""
    return copy.deepcopy(api.object(gvr, name, namespace))


def desired(
    api: FakeApiServer,
    obj: dict[str, Any],
    *,
    resource_id: str | None = None,
    gvr: GVR = CONFIGMAPS,
    namespaced: bool = True,
) -> Desired:
    """A Desired whose `observed` is the object's current state in the fake server."""
    meta = obj["metadata"]
    namespace = meta.get("namespace", "") if namespaced else ""
    return Desired(
        resource_id or meta["name"],
        obj,
        gvr,
        namespaced,
        live(api, gvr, meta["name"], namespace),
    )


def writes(api: FakeApiServer) -> list[str]:
    """Every write request so far, as 'METHOD path'."""
    return [f"{r.method} {r.path}" for r in api.requests if r.method not in ("GET",)]


def status_fault(method: str, path: str, code: int, reason: str, message: str) -> Fault:
    """The next matching request fails with this Status."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": reason,
        "message": message,
        "code": code,
    }
    return Fault("status", method=method, path=path, status=code, body=body)


def labelled(obj: dict[str, Any], **labels: str) -> dict[str, Any]:
    """`obj` with extra labels (a copy)."""
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("labels", {}).update(labels)
    return out


def clean(result: PruneResult) -> bool:
    """The prune was made and nothing conflicted or failed (R-13: the inventory may shrink)."""
    return not (result.skipped or result.conflicts or result.failures)
