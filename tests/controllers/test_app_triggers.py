"""What queues an RGD or a GraphRevision (kro.controllers.app's triggers), through the
controllers KroApp builds on the manager's informer cache: the cache runs, the workers do not,
and the test reads what each event put on the two queues."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from controllers_fakes import greeter_rgd
from rgd_app_fakes import KroFakeApi, eventually, make_app

from kro.api.names import LABEL_OWNED, LABEL_RGD_NAME
from kro.controllers.app import KroApp
from kro.controllers.crd import CRDS
from kro.controllers.graphrevision import GRAPH_REVISIONS
from kro.controllers.rgd import RGDS
from kro.runtime.client import Client
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.reconcile import Request
from kro.runtime.workqueue import WorkQueue

pytestmark = pytest.mark.usefixtures("no_task_leaks")


def kro_crd(rgd: str) -> dict[str, Any]:
    """A CRD kro generated for RGD `rgd` (found by its labels)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "leftovers.kro.example.com",
            "labels": {LABEL_OWNED: "true", LABEL_RGD_NAME: rgd},
        },
        "spec": {
            "group": "kro.example.com",
            "names": {"kind": "Leftover", "plural": "leftovers", "singular": "leftover"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }


def revision(name: str, rgd: str) -> dict[str, Any]:
    return {
        "apiVersion": GRAPH_REVISIONS.api_version,
        "kind": "GraphRevision",
        "metadata": {"name": name},
        "spec": {"revision": 1, "snapshot": {"name": rgd, "spec": greeter_rgd()["spec"]}},
    }


@pytest.fixture
async def app(
    kro_api: KroFakeApi, kro_client: Client, provider: PrometheusProvider
) -> AsyncIterator[KroApp]:
    """A KroApp whose informer cache runs, and nothing else: events only fill the queues."""
    await kro_client.create(CRDS, kro_crd("gone"))
    app = make_app(kro_client, provider)
    task = asyncio.create_task(app.cache.run(), name="test:cache")
    try:
        await eventually(_synced(app), what="the cache listed")
        yield app
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for queue in (app.rgd_queue, app.gr_queue, app.dynamic.queue):
            queue.shutdown()
        await asyncio.sleep(0)


def _synced(app: KroApp) -> Any:
    async def probe() -> bool:
        return app.cache.has_synced()

    return probe


def taken(queue: WorkQueue[Request]) -> set[str]:
    """The names queued so far (taken off the queue)."""
    names = set()
    while len(queue):
        item = queue.get_nowait()
        queue.done(item)
        names.add(item.name)
    return names


async def queued(queue: WorkQueue[Request], *names: str) -> None:
    """Wait until `names` are queued; anything else queued meanwhile fails the test."""
    seen: set[str] = set()

    async def probe() -> bool:
        seen.update(taken(queue))
        return seen >= set(names)

    await eventually(probe, what=f"{names} queued")
    assert seen == set(names)


async def nothing_queued(app: KroApp, client: Client) -> None:
    """Let the events of what was just written arrive (a later write's event is delivered
    after them), then check they queued nothing."""
    marker = await client.create(RGDS, {**greeter_rgd("marker"), "metadata": {"name": "marker"}})
    await queued(app.rgd_queue, "marker")
    assert taken(app.gr_queue) == set()
    await client.delete(RGDS, marker["metadata"]["name"])
    await queued(app.rgd_queue, "marker")


async def test_a_kro_crd_listed_at_start_queues_its_rgd(app: KroApp) -> None:
    await queued(app.rgd_queue, "gone")


async def test_rgd_events_queue_the_rgd_only_when_they_matter(
    app: KroApp, kro_client: Client
) -> None:
    await queued(app.rgd_queue, "gone")
    created = await kro_client.create(RGDS, {**greeter_rgd("a"), "metadata": {"name": "a"}})
    await queued(app.rgd_queue, "a")
    created["status"] = {"state": "Active"}
    await kro_client.update_status(RGDS, created)
    await nothing_queued(app, kro_client)  # a status write is not news
    spec = {**created["spec"], "schema": {**created["spec"]["schema"], "kind": "Other"}}
    await kro_client.patch(RGDS, "a", {"spec": spec})
    await queued(app.rgd_queue, "a")  # a new generation
    await kro_client.delete(RGDS, "a")
    await queued(app.rgd_queue, "a")  # gone: its instances are found and served until gone


async def test_revision_events_queue_the_revision_and_its_rgd(
    app: KroApp, kro_client: Client
) -> None:
    await queued(app.rgd_queue, "gone")
    created = await kro_client.create(GRAPH_REVISIONS, revision("a-r1", "a"))
    await queued(app.gr_queue, "a-r1")
    await queued(app.rgd_queue, "a")
    created["status"] = {"conditions": [{"type": "GraphVerified", "status": "True"}]}
    created = await kro_client.update_status(GRAPH_REVISIONS, created)
    await queued(app.rgd_queue, "a")
    assert taken(app.gr_queue) == set(), "the leader's own verdict is not news to it"
    app.writes.bind(lambda: False)  # a follower waits for the leader's verdict
    created["status"] = {"conditions": [{"type": "GraphVerified", "status": "False"}]}
    await kro_client.update_status(GRAPH_REVISIONS, created)
    await queued(app.gr_queue, "a-r1")
    await queued(app.rgd_queue, "a")
    await kro_client.delete(GRAPH_REVISIONS, "a-r1")
    await queued(app.rgd_queue, "a")
    assert taken(app.gr_queue) == set(), "a revision that is gone has nothing to reconcile"


async def test_a_resync_queues_nothing(app: KroApp, kro_client: Client) -> None:
    await kro_client.create(RGDS, {**greeter_rgd("a"), "metadata": {"name": "a"}})
    await kro_client.create(GRAPH_REVISIONS, revision("a-r1", "a"))
    await queued(app.gr_queue, "a-r1")  # the last event: it queued "a" too
    await queued(app.rgd_queue, "gone", "a")
    for informer in app.cache.informers():
        for obj in informer.store.list():
            informer._dispatch("on_update", obj, obj)  # what the periodic resync delivers
    assert (taken(app.rgd_queue), taken(app.gr_queue)) == (set(), set())


def plain_crd(group: str, kind: str) -> dict[str, Any]:
    """A CRD nobody's RGD generated (a graph installs it, say)."""
    crd = kro_crd("")
    plural = kind.lower() + "s"
    crd["metadata"] = {"name": f"{plural}.{group}"}
    crd["spec"] = {**crd["spec"], "group": group, "names": {"kind": kind, "plural": plural}}
    return crd


def _deferring_graph() -> Any:
    """A compiled RGD whose `widget` waits for the kind Widget of deferred.example.com."""
    from kro.graph.builder import build_graph
    from kro.graph.options import BuildOptions
    from kro.graph.resolver import OfflineSchemaResolver

    rgd = {
        "metadata": {"name": "installer"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "Installer"},
            "resources": [
                {
                    "id": "widget",
                    "optional": True,
                    "template": {
                        "apiVersion": "deferred.example.com/v1",
                        "kind": "Widget",
                        "metadata": {"name": "w"},
                    },
                }
            ],
        },
    }
    options = BuildOptions(deferred_schema_resolution=True)
    return build_graph(rgd, OfflineSchemaResolver.from_files(), options=options)


async def test_a_crd_of_a_deferred_group_wakes_its_waiters_and_revisions(
    app: KroApp, kro_client: Client
) -> None:
    """DeferredSchemaResolution: a CRD of the group a deferred node waits for enqueues the
    owners waiting on it (no poll) and the GraphRevision that deferred it (compiled again),
    and drops the programs that deferred it; a CRD of another group wakes nobody."""
    from kro.controllers.graph.inventory import GRAPHS
    from kro.dynamic import ObjectRef
    from kro.runtime.gvk import GVR

    await queued(app.rgd_queue, "gone")
    graph = _deferring_graph()
    app.registry.activate("installer", 1, "h", graph)
    instance = ObjectRef(GVR("kro.run", "v1alpha1", "installers"), "team", "one")
    app.kind_waits.waiting(instance, [("deferred.example.com", "Widget")])
    app.kind_waits.waiting(ObjectRef(GRAPHS, "team", "g"), [("deferred.example.com", "Widget")])

    async def compiled() -> Any:
        return graph

    await app.programs.program("ResourceGraphDefinition", "", "installer", "h", compiled)
    await kro_client.create(CRDS, plain_crd("other.example.com", "Gadget"))
    await nothing_queued(app, kro_client)
    assert len(app.dynamic.queue) == 0
    assert len(app.programs) == 1
    await kro_client.create(CRDS, plain_crd("deferred.example.com", "Widget"))
    await queued(app.gr_queue, "installer-r00001")

    async def woken() -> bool:
        return len(app.dynamic.queue) == 1

    await eventually(woken, what="the waiting instance queued")
    assert app.dynamic.queue.get_nowait() == instance
    assert len(app.programs) == 0
