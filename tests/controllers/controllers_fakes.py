"""Shared pieces of the kro.controllers unit tests: a Greeter RGD and its compiled graph, a
watch coordinator that only records, a dict-backed client for the RGD controller, and reading
metrics the way Prometheus would (the provider's own registry)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kro.controllers.instance.reconciler import InstanceReconciler
from kro.controllers.registry import RevisionRegistry
from kro.controllers.rgd import RGDReconciler
from kro.dynamic import WatchHealth
from kro.graph.builder import build_graph
from kro.graph.model import Graph
from kro.graph.resolver import OfflineSchemaResolver
from kro.runtime.errors import Conflict, NotFound
from kro.runtime.gvk import GVR
from kro.runtime.prometheus import PrometheusProvider

GROUP = "unit.kro.run"
NS = "team-a"
GREETERS = GVR(GROUP, "v1alpha1", "greeters")
CONFIGMAPS = GVR("", "v1", "configmaps")
GVR_LABEL = f"{GROUP}/v1alpha1, Resource=greeters"

RESOLVER = OfflineSchemaResolver.from_files()


def greeter_rgd(
    name: str = "greeter", *, text: str = "hello ${schema.spec.name}"
) -> dict[str, Any]:
    """An RGD whose instances get one ConfigMap, `<instance>`, with `data.text`."""
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": name, "uid": f"uid-{name}", "generation": 1},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "Greeter",
                "group": GROUP,
                "spec": {"name": "string | default=world"},
            },
            "resources": [
                {
                    "id": "greeting",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}"},
                        "data": {"text": text},
                    },
                }
            ],
        },
    }


def greeter_graph(**kwargs: Any) -> Graph:
    return build_graph(greeter_rgd(**kwargs), RESOLVER)


def greeter(name: str = "hi", spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Greeter",
        "metadata": {"name": name, "namespace": NS},
        "spec": dict(spec or {"name": "world"}),
    }


class RecordingWatches:
    """Stands in for kro.dynamic's WatchCoordinator: records what a reconcile asked for."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.done_calls: list[bool] = []
        self.forgotten: list[Any] = []
        self.watch_health = WatchHealth()  # what `health` answers: every kind delivers

    async def watch(self, parent: Any, request: Any) -> None:
        self.requests.append(request)

    def health(self, parent: Any, requests: Any = None) -> WatchHealth:
        return self.watch_health

    async def done(self, parent: Any, *, commit: bool) -> None:
        self.done_calls.append(commit)

    async def forget(self, parent: Any) -> None:
        self.forgotten.append(parent)

    def cached_versions(self, request: Any) -> None:
        return None  # no caches: every reconcile reads from the API server

    def cached_object(self, request: Any) -> tuple[bool, None]:
        return False, None

    shard_version = 0


def sample(provider: PrometheusProvider, metric: str, **labels: str) -> float:
    """The value of one series on /metrics (0 when absent)."""
    return provider.registry.get_sample_value(metric, labels) or 0.0


class DictClient:
    """A dict-backed client with the calls the RGD controller makes; `field_selector`
    supports `spec.snapshot.name=<rgd>` (what GraphRevisions are listed by), and a patch
    carrying `metadata.resourceVersion` is refused with Conflict when it is stale."""

    def __init__(self) -> None:
        self.objects: dict[tuple[GVR, str], dict[str, Any]] = {}
        self.writes: list[tuple[str, GVR, str]] = []
        self._rv = 0

    def seed(self, gvr: GVR, obj: Mapping[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(dict(obj))
        self._stamp(stored)
        self.objects[(gvr, stored["metadata"]["name"])] = stored
        return copy.deepcopy(stored)

    def _stamp(self, obj: dict[str, Any]) -> None:
        self._rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._rv)

    async def get(self, gvr: GVR, name: str, **_: Any) -> dict[str, Any]:
        try:
            return copy.deepcopy(self.objects[(gvr, name)])
        except KeyError:
            raise NotFound(status=404, reason="NotFound", message=f"{name} not found") from None

    async def list(self, gvr: GVR, *, field_selector: str = "", **_: Any) -> dict[str, Any]:
        wanted = field_selector.partition("=")[2]
        items = [
            copy.deepcopy(o)
            for (g, _n), o in self.objects.items()
            if g == gvr and (not wanted or o["spec"]["snapshot"]["name"] == wanted)
        ]
        return {"items": items, "metadata": {"resourceVersion": str(self._rv)}}

    async def create(self, gvr: GVR, obj: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        self.writes.append(("create", gvr, obj["metadata"]["name"]))
        return self.seed(gvr, obj)

    async def update(self, gvr: GVR, obj: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        self.writes.append(("update", gvr, obj["metadata"]["name"]))
        return self.seed(gvr, obj)

    async def update_status(self, gvr: GVR, obj: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        self.writes.append(("update_status", gvr, obj["metadata"]["name"]))
        stored = self.objects[(gvr, obj["metadata"]["name"])]
        stored["status"] = copy.deepcopy(obj.get("status"))
        self._stamp(stored)
        return copy.deepcopy(stored)

    async def patch(
        self, gvr: GVR, name: str, patch: Mapping[str, Any], **_: Any
    ) -> dict[str, Any]:
        self.writes.append(("patch", gvr, name))
        stored = self.objects[(gvr, name)]
        expected = (patch.get("metadata") or {}).get("resourceVersion")
        if expected is not None and expected != stored["metadata"]["resourceVersion"]:
            raise Conflict(
                status=409,
                reason="Conflict",
                message=f"{name}: the object has been modified; please apply your changes "
                "to the latest version and try again",
            )
        for key, value in (patch.get("metadata") or {}).items():
            if key != "resourceVersion":
                stored["metadata"][key] = copy.deepcopy(value)
        self._stamp(stored)
        return copy.deepcopy(stored)

    async def delete(self, gvr: GVR, name: str, **_: Any) -> None:
        self.writes.append(("delete", gvr, name))
        self.objects.pop((gvr, name), None)


def unserved_rgd_reconciler(client: DictClient, **kwargs: Any) -> RGDReconciler:
    """The RGD reconciler over a DictClient, for tests that never serve a graph (an invalid
    one, or only the finalizer): no dynamic controller and no applier are needed. `kwargs`
    are further constructor arguments (metrics, ...)."""
    return RGDReconciler(
        client=client,  # type: ignore[arg-type]
        registry=RevisionRegistry(),
        resolver=RESOLVER,
        dynamic=None,  # type: ignore[arg-type]  # never reached
        applier=None,  # type: ignore[arg-type]
        **kwargs,
    )


def greeter_reconciler(**kwargs: Any) -> InstanceReconciler:
    """The instance reconciler of the Greeter kind (RGD `greeter`), built as the RGD controller
    builds it; `kwargs` are the rest of its arguments (client, registry, applier, watches...)."""
    return InstanceReconciler(
        rgd_name="greeter", rgd_uid="uid-greeter", gvr=GREETERS, kind="Greeter", **kwargs
    )


INVALID = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "Invalid",
    "code": 422,
    "message": 'ConfigMap "hi" is invalid: data[bad key]: Invalid value: "bad key": a valid '
    "config key must consist of alphanumeric characters",
}
"""The API server's 422 for the Greeter's ConfigMap `hi` with a key it refuses."""
