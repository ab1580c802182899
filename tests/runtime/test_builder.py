"""ControllerBuilder: primaries queue themselves, owned kinds queue their owner, watched kinds go
through map functions, predicates and selectors filter, informers are shared, options reach the
controller; all against the in-process fake API server with a real Manager."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kro.runtime import errors
from kro.runtime.builder import ControllerBuilder
from kro.runtime.client import Client
from kro.runtime.gvk import GVK, GVR
from kro.runtime.leaderelection import LEASES, LeaderElectionConfig
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.owners import set_controller_reference
from kro.runtime.predicates import has_labels, labels_changed
from kro.runtime.ratelimit import ItemExponentialBackoff
from kro.runtime.reconcile import Request, Result
from kro.runtime.typed import KubeModel, WireModel
from kro.testing.fakeapi import FakeApiServer, FakeResource

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
WEBSITES = GVR("example.com", "v1", "websites")


class Spec(WireModel):
    image: str


class Website(KubeModel):
    gvk = GVK("example.com", "v1", "Website")
    gvr = WEBSITES
    spec: Spec


class Recorder:
    """A reconciler that records requests and lets a test wait for some."""

    def __init__(self, then: Callable[[Request], Any] | None = None) -> None:
        self.requests: list[Request] = []
        self._changed = asyncio.Event()
        self._then = then

    async def reconcile(self, request: Request) -> Result:
        self.requests.append(request)
        self._changed.set()
        if self._then is not None:
            await self._then(request)
        return Result()

    async def wait_for(self, count: int, timeout_s: float = 5.0) -> None:
        async with asyncio.timeout(timeout_s):
            while len(self.requests) < count:
                self._changed.clear()
                await self._changed.wait()


def make_manager(client: Client) -> Manager:
    return Manager(ManagerOptions(handle_signals=False), client=client)


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[None]:
    task = asyncio.create_task(manager.run())
    try:
        yield
    finally:
        manager.stop()
        await asyncio.wait_for(task, timeout=5)


async def settle(seconds: float = 0.3) -> None:
    """Let events that should be filtered out arrive (and be dropped) before asserting."""
    await asyncio.sleep(seconds)


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "data": {"k": "v"},
    }


async def test_predicates_decide_which_updates_reconcile(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("a", team="x"))
    manager = make_manager(client)
    recorder = Recorder()
    ControllerBuilder(manager).for_(CM, predicates=labels_changed()).build(recorder)
    async with running(manager):
        await recorder.wait_for(1)  # the initial list is a create
        await client.patch(CM, "a", {"data": {"k": "changed"}}, namespace="ns")
        await settle()
        assert len(recorder.requests) == 1, "a data edit must not reconcile"
        await client.patch(CM, "a", {"metadata": {"labels": {"team": "y"}}}, namespace="ns")
        await recorder.wait_for(2)
    assert recorder.requests == [Request("ns", "a")] * 2


async def test_with_predicates_apply_to_every_source_and_selectors_filter_on_the_server(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.seed(CM, configmap("mine", app="web", tier="prod"))
    fake_api.seed(CM, configmap("test-tier", app="web", tier="test"))
    fake_api.seed(CM, configmap("other-app", app="db", tier="prod"))
    manager = make_manager(client)
    recorder = Recorder()
    (
        ControllerBuilder(manager)
        .for_(CM)
        .with_selector(label="app=web")
        .with_predicates(has_labels("tier!=test"))
        .build(recorder)
    )
    async with running(manager):
        await recorder.wait_for(1)
        await settle()
    assert recorder.requests == [Request("ns", "mine")]
    (informer,) = manager.cache.informers()
    assert informer.label_selector == "app=web"
    assert len(informer.store) == 2


async def test_a_deleted_child_queues_its_owner_which_recreates_it(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.add_resource(FakeResource("example.com", "v1", "websites", "Website"))
    site = fake_api.seed(
        WEBSITES,
        {
            "apiVersion": "example.com/v1",
            "kind": "Website",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"image": "nginx"},
        },
    )
    manager = make_manager(client)

    async def ensure_deployment(request: Request) -> None:
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": request.name, "namespace": request.namespace},
            "spec": {"replicas": 1},
        }
        set_controller_reference(site, deployment)
        with contextlib.suppress(errors.AlreadyExists):
            await client.create(DEPLOYMENTS, deployment)

    recorder = Recorder(then=ensure_deployment)
    ControllerBuilder(manager).for_(Website).owns(DEPLOYMENTS).build(recorder)
    async with running(manager):
        await recorder.wait_for(2)  # the Website, then the Deployment it created
        first = fake_api.object(DEPLOYMENTS, "w", "ns")
        assert first is not None
        fake_api.remove(DEPLOYMENTS, "w", "ns")
        await recorder.wait_for(3)
        await asyncio.wait_for(
            fake_api.wait_for(lambda: fake_api.object(DEPLOYMENTS, "w", "ns")), 5
        )
    again = fake_api.object(DEPLOYMENTS, "w", "ns")
    assert again is not None
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    assert set(recorder.requests) == {Request("ns", "w")}


async def test_watched_kinds_are_mapped_to_requests(
    fake_api: FakeApiServer, client: Client
) -> None:
    manager = make_manager(client)
    recorder = Recorder()

    def secret_to_configmaps(secret: dict[str, Any]) -> list[Request]:
        users = (secret["metadata"].get("annotations") or {}).get("used-by", "")
        return [Request(secret["metadata"]["namespace"], n) for n in users.split(",") if n]

    (
        ControllerBuilder(manager)
        .for_(CM)
        .watches(SECRETS, secret_to_configmaps, namespace=None)
        .in_namespace("ns")
        .build(recorder)
    )
    async with running(manager):
        await asyncio.sleep(0.1)
        fake_api.seed(
            SECRETS,
            {"metadata": {"name": "s", "namespace": "ns", "annotations": {"used-by": "a,b"}}},
        )
        await recorder.wait_for(2)
    assert sorted(r.name for r in recorder.requests) == ["a", "b"]
    namespaces = {i.gvr.resource: i.namespace for i in manager.cache.informers()}
    assert namespaces == {"configmaps": "ns", "secrets": None}


async def test_a_kind_watched_for_its_metadata_maps_each_object_to_several_requests(
    fake_api: FakeApiServer, client: Client
) -> None:
    manager = make_manager(client)
    recorder = Recorder()
    seen: list[dict[str, Any]] = []

    def users(secret: dict[str, Any]) -> list[Request]:
        seen.append(secret)
        names = (secret["metadata"].get("annotations") or {}).get("used-by", "")
        return [Request("", n) for n in names.split(",") if n]

    (
        ControllerBuilder(manager)
        .for_(CM)
        .watches(SECRETS, users, namespace=None, metadata_only=True)
        .build(recorder)
    )
    fake_api.seed(
        SECRETS,
        {"metadata": {"name": "s", "namespace": "ns", "annotations": {"used-by": "a,b"}},
         "data": {"password": "aHVudGVyMg=="}},
    )  # fmt: skip
    async with running(manager):
        await recorder.wait_for(2)
    assert sorted(r.name for r in recorder.requests) == ["a", "b"]
    assert seen
    assert all("data" not in s for s in seen), "only metadata is cached and mapped"
    (secrets,) = [i for i in manager.cache.informers() if i.gvr == SECRETS]
    assert secrets.metadata_only
    assert manager.reader.is_cached(SECRETS) is False  # metadata cannot answer reads


async def test_a_controller_built_to_run_everywhere_runs_without_the_lease(
    fake_api: FakeApiServer, client: Client
) -> None:
    """With leader election on and the Lease held by someone else, only the controllers built
    with leader_only(False) reconcile."""
    fake_api.add_resource(
        FakeResource(LEASES.group, LEASES.version, LEASES.resource, "Lease", True)
    )
    fake_api.seed(
        LEASES,
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": "op", "namespace": "ns"},
         "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 3600,
                  "renewTime": "2999-01-01T00:00:00.000000Z"}},
    )  # fmt: skip
    fake_api.seed(CM, configmap("a"))
    election = LeaderElectionConfig(lease_name="op", lease_namespace="ns", identity="me")
    manager = Manager(ManagerOptions(handle_signals=False, leader_election=election), client=client)
    everywhere, leader = Recorder(), Recorder()
    ControllerBuilder(manager, name="everywhere").for_(CM).leader_only(False).build(everywhere)
    ControllerBuilder(manager, name="leader").for_(CM).build(leader)
    async with running(manager):
        await everywhere.wait_for(1)
        await settle()
        assert not manager.may_reconcile()
    assert everywhere.requests == [Request("ns", "a")]
    assert leader.requests == []


async def test_controllers_share_informers(fake_api: FakeApiServer, client: Client) -> None:
    manager = make_manager(client)
    ControllerBuilder(manager, name="one").for_(CM).build(Recorder())
    ControllerBuilder(manager, name="two").for_(CM).owns(CM).build(Recorder())
    assert len(manager.cache.informers()) == 1


async def test_functions_and_typed_object_reconcilers(
    fake_api: FakeApiServer, client: Client
) -> None:
    fake_api.add_resource(FakeResource("example.com", "v1", "websites", "Website"))
    for name, image in (("good", "nginx"), ("bad", None)):
        spec = {"image": image} if image else {}
        fake_api.seed(
            WEBSITES,
            {"apiVersion": "example.com/v1", "kind": "Website",
             "metadata": {"name": name, "namespace": "ns"}, "spec": spec},
        )  # fmt: skip
    manager = make_manager(client)
    seen: list[str] = []
    done = asyncio.Event()

    by_request_done = asyncio.Event()

    async def by_request(request: Request) -> None:
        seen.append(f"request:{request.name}")
        by_request_done.set()

    async def by_object(site: Website) -> Result:
        seen.append(f"object:{site.name}:{site.spec.image}")
        done.set()
        return Result()

    ControllerBuilder(manager, name="fn").for_(CM).build(by_request)
    builder = ControllerBuilder(manager, name="typed").for_(Website).max_retries(0)
    controller = builder.reconcile_objects(by_object)
    fake_api.seed(CM, configmap("c"))
    async with running(manager):
        await asyncio.wait_for(done.wait(), 5)
        await asyncio.wait_for(by_request_done.wait(), 5)
        await settle()
    assert "object:good:nginx" in seen
    assert not any(s.startswith("object:bad") for s in seen)
    assert controller.max_retries == 0


async def test_an_object_reconciler_skips_objects_that_are_gone(
    fake_api: FakeApiServer, client: Client
) -> None:
    manager = make_manager(client)
    calls: list[Any] = []

    async def fn(obj: dict[str, Any]) -> None:
        calls.append(obj)

    controller = ControllerBuilder(manager).for_(CM).reconcile_objects(fn)
    async with running(manager):
        await asyncio.sleep(0.1)
        assert await controller._reconciler.reconcile(Request("ns", "nothing")) == Result()
    assert calls == []


def test_options_reach_the_controller(client: Client) -> None:
    manager = make_manager(client)
    limiter = ItemExponentialBackoff[Request](base_s=1.0, cap_s=2.0)
    controller = (
        ControllerBuilder(manager).for_(CM).workers(3).rate_limit(limiter).build(Recorder())
    )
    assert controller.name == "configmaps"
    assert controller.workers == 3
    assert controller.queue._limiter is limiter
    assert controller.queue.name == "configmaps"
    other = ControllerBuilder(manager).for_(WEBSITES).rate_limit(base_delay_s=0.5).build(Recorder())
    assert other.name == "websites.example.com"
    assert other.queue._limiter.when(Request("a", "b")) == 0.5


def test_misuse_is_refused(client: Client) -> None:
    manager = make_manager(client)
    with pytest.raises(ValueError, match="for_"):
        ControllerBuilder(manager).build(Recorder())
    with pytest.raises(ValueError, match="one primary"):
        ControllerBuilder(manager).for_(CM).for_(SECRETS)
    with pytest.raises(ValueError, match="worker"):
        ControllerBuilder(manager).workers(0)
    builder = ControllerBuilder(manager).for_(CM)
    builder.build(Recorder())
    with pytest.raises(ValueError, match="already built"):
        builder.build(Recorder())
    with pytest.raises(ValueError, match="client"):
        ControllerBuilder(Manager(ManagerOptions(handle_signals=False))).for_(CM).build(Recorder())
