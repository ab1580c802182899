"""kro.testing.operator, as a third party's unit test uses it: an operator's set-up function run
for a block against the shipped fake API server, ready on entry, counted by its own metrics,
stopped on exit; an operator that dies fails the wait at once; the `with` form from plain
synchronous code."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kro.runtime import GVR, Manager, Object
from kro.runtime.client import Client
from kro.testing.fakeapi import FakeApiServer, unthrottled_client
from kro.testing.operator import OperatorFailed, run_operator

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")


def configmap(name: str, **labels: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "labels": labels}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def labeller(manager: Manager) -> None:
    async def label(cm: Object) -> None:
        if (cm["metadata"].get("labels") or {}).get("seen") != "yes":
            await manager.client.patch(cm, {"metadata": {"labels": {"seen": "yes"}}})

    manager.controller("labeller").for_("ConfigMap").reconcile_objects(label)


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer() as server:
        yield server


@pytest.fixture
async def client(api: FakeApiServer) -> AsyncIterator[Client]:
    async with unthrottled_client(api) as c:
        yield c


def labelled(api: FakeApiServer, name: str) -> bool:
    found = api.object(CM, name, "ns") or {}
    return (found.get("metadata", {}).get("labels") or {}).get("seen") == "yes"


async def test_the_operator_runs_for_the_block_and_counts_its_reconciles(
    api: FakeApiServer, client: Client
) -> None:
    api.seed(CM, configmap("before"))
    async with run_operator(labeller, client=client, namespace="ns") as op:
        assert op.manager.is_ready()  # caches synced on entry
        await op.wait_for(lambda: labelled(api, "before"), what="the existing ConfigMap")
        await client.create(CM, configmap("after"), namespace="ns")
        await op.wait_for(lambda: labelled(api, "after"), what="the new ConfigMap")
        # two creates and the two label writes' own updates, all judged a success
        assert await op.wait_for_reconciles(4, controller="labeller", result="success") >= 4
        assert op.reconciles("labeller", result="error") == 0
        assert op.reconciles("nobody") == 0
    watches = len(api.watchers)
    assert watches == 0, "the operator's watches end with the block"


async def test_an_operator_that_dies_fails_the_wait_at_once(
    api: FakeApiServer, client: Client
) -> None:
    broken = asyncio.Event()

    class Crash:
        async def run(self) -> None:
            await broken.wait()
            raise RuntimeError("the operator's own bug")

    def setup(manager: Manager) -> None:
        labeller(manager)
        manager.add_runnable(Crash())

    async def wait_while_it_breaks() -> None:
        async with run_operator(setup, client=client, namespace="ns") as op:
            broken.set()
            async with asyncio.timeout(5):  # far less than the wait's own 60 s
                await op.wait_for(lambda: False, what="something never true", timeout_s=60)

    with pytest.raises(OperatorFailed, match="the operator's own bug"):
        await wait_while_it_breaks()


async def test_leaving_the_block_raises_what_stopped_the_operator(client: Client) -> None:
    go, crashing = asyncio.Event(), asyncio.Event()

    class Crash:
        async def run(self) -> None:
            await go.wait()
            crashing.set()
            raise RuntimeError("crashed while the test looked elsewhere")

    def setup(manager: Manager) -> None:
        labeller(manager)
        manager.add_runnable(Crash())

    async def look_elsewhere() -> None:
        async with run_operator(setup, client=client, namespace="ns"):
            go.set()
            await asyncio.wait_for(crashing.wait(), timeout=5)  # not through op's waits

    with pytest.raises(OperatorFailed, match="crashed while the test looked elsewhere"):
        await look_elsewhere()


async def test_a_set_up_function_may_be_async(api: FakeApiServer, client: Client) -> None:
    async def setup(manager: Manager) -> None:
        await asyncio.sleep(0)
        labeller(manager)

    api.seed(CM, configmap("a"))
    async with run_operator(setup, client=client, namespace="ns") as op:
        await op.wait_for_reconciles(1, controller="labeller")


@pytest.fixture
def api_in_a_thread(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path]]:
    """The fake API server on a loop of its own, and a kubeconfig naming it, for a test that
    is plain synchronous code."""
    ready = threading.Event()
    stop: list[asyncio.Event] = []
    servers: list[FakeApiServer] = []

    async def serve() -> None:
        async with FakeApiServer() as server:
            servers.append(server)
            stop.append(asyncio.Event())
            ready.set()
            await stop[0].wait()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": servers[0].url}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    try:
        yield servers[0], kubeconfig
    finally:
        loop.call_soon_threadsafe(stop[0].set)
        thread.join(10)
        loop.close()


def test_the_with_form_serves_synchronous_tests(
    api_in_a_thread: tuple[FakeApiServer, Path],
) -> None:
    api, kubeconfig = api_in_a_thread
    with run_operator(labeller, kubeconfig=kubeconfig, namespace="ns") as op:
        op.call(op.client.create, CM, configmap("sync"), namespace="ns")
        op.wait_for(lambda: labelled(api, "sync"), what="the label, seen from this thread")
        assert op.wait_for_reconciles(2, controller="labeller") >= 2
        cm = op.call(op.client.get, CM, "sync", namespace="ns")
        assert cm["metadata"]["labels"] == {"seen": "yes"}
    assert not [t for t in threading.enumerate() if t.name == "kro-operator"]


async def test_outside_the_block_there_is_no_operator(client: Client) -> None:
    op = run_operator(labeller, client=client)
    with pytest.raises(RuntimeError, match="not running"):
        _ = op.manager
