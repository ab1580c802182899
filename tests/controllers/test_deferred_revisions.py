"""A GraphRevision that deferred a kind (DeferredSchemaResolution) is compiled again when a CRD
of the kind's group appears: typed once the kind is served (instances take the new graph on
their next pass, the RGD is told), still deferred (and retried with backoff) while the API
server serves the kind but has not published its schema, failed when the typed check fails."""

from __future__ import annotations

import copy
from typing import Any

from controllers_fakes import DictClient

from kro.controllers.graphrevision import GRAPH_REVISIONS, GraphRevisionReconciler
from kro.controllers.registry import RevisionRegistry, RevisionState
from kro.graph.options import BuildOptions
from kro.graph.resolver import OfflineSchemaResolver, builtin_bundle
from kro.runtime.errors import NoKindMatch
from kro.runtime.reconcile import Request, Result

GROUP = "deferred.example.com"
NAME = "installer-r00001"


def widget_crd(size_type: str) -> dict[str, Any]:
    spec = {"type": "object", "properties": {"size": {"type": size_type}}}
    return {
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}
                    },
                }
            ],
        },
    }


REVISION = {
    "apiVersion": "internal.kro.run/v1alpha1",
    "kind": "GraphRevision",
    "metadata": {"name": NAME, "labels": {"kro.run/graph-revision-hash": "h1"}},
    "spec": {
        "revision": 1,
        "snapshot": {
            "name": "installer",
            "generation": 1,
            "spec": {
                "schema": {"apiVersion": "v1alpha1", "kind": "Installer"},
                "resources": [
                    {
                        "id": "widget",
                        "optional": True,
                        "template": {
                            "apiVersion": f"{GROUP}/v1",
                            "kind": "Widget",
                            "metadata": {"name": "${schema.metadata.name}"},
                            "spec": {"size": "big"},
                        },
                    }
                ],
            },
        },
    },
}


class Mapper:
    """Discovery: serves the Widget kind once `served` is set."""

    def __init__(self) -> None:
        self.served = False

    async def resource_for(self, gvk: Any) -> Any:
        if not self.served:
            raise NoKindMatch(f"no resource for kind {gvk}")
        return object()


class Client(DictClient):
    def __init__(self) -> None:
        super().__init__()
        self.mapper = Mapper()


def _world() -> tuple[Client, OfflineSchemaResolver, RevisionRegistry, list[str], Any]:
    client = Client()
    client.seed(GRAPH_REVISIONS, copy.deepcopy(REVISION))
    resolver = OfflineSchemaResolver(builtin_bundle())
    registry = RevisionRegistry()
    told: list[str] = []
    reconciler = GraphRevisionReconciler(
        client=client,  # type: ignore[arg-type]
        registry=registry,
        resolver=resolver,
        options=BuildOptions(deferred_schema_resolution=True),
        notify_rgd=told.append,
    )
    return client, resolver, registry, told, reconciler


def _deferred(registry: RevisionRegistry) -> bool:
    entry = registry.get("installer", 1)
    assert entry is not None
    assert entry.state is RevisionState.ACTIVE
    assert entry.graph is not None
    return entry.graph.node("widget").deferred


async def test_a_deferred_revision_is_compiled_again_typed_once_its_kind_is_served() -> None:
    client, resolver, registry, told, reconciler = _world()
    assert await reconciler.reconcile(Request("", NAME)) == Result()
    assert _deferred(registry)
    assert registry.deferring(GROUP)
    assert registry.deferring("other.example.com") == []
    first = registry.get("installer", 1)
    assert first is not None

    # A CRD event of the group, the kind not served yet: same program, nothing to tell.
    told.clear()
    assert await reconciler.reconcile(Request("", NAME)) == Result()
    again = registry.get("installer", 1)
    assert again is not None
    assert again.graph is first.graph
    assert told == []

    # Served by discovery, schema not published yet: still deferred, compiled again later.
    client.mapper.served = True
    reconciler.programs.kind_changed(GROUP)
    assert await reconciler.reconcile(Request("", NAME)) == Result(requeue=True)
    assert _deferred(registry)

    # The schema is there: typed now, and the RGD is told.
    resolver.add_crd(widget_crd("string"))
    told.clear()
    assert await reconciler.reconcile(Request("", NAME)) == Result()
    assert not _deferred(registry)
    assert told == ["installer"]
    assert registry.deferring(GROUP) == []


async def test_a_typed_compile_that_fails_fails_the_revision() -> None:
    client, resolver, registry, _, reconciler = _world()
    await reconciler.reconcile(Request("", NAME))
    assert _deferred(registry)
    resolver.add_crd(widget_crd("integer"))  # `size: big` does not fit
    reconciler.programs.kind_changed(GROUP, "Widget")
    await reconciler.reconcile(Request("", NAME))
    entry = registry.get("installer", 1)
    assert entry is not None
    assert entry.state is RevisionState.FAILED
    assert "widget" in entry.error
    status = (await client.get(GRAPH_REVISIONS, NAME))["status"]
    verified = [c for c in status["conditions"] if c["type"] == "GraphVerified"]
    assert verified[0]["status"] == "False"
