"""A Manager embedded in someone else's process: it leaves the garbage collector alone, takes no
port unless asked (and never kro controller's), and a stop lets in-flight reconciles finish."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from kro.runtime.builder import ControllerBuilder
from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.reconcile import Request, Result
from kro.testing.fakeapi import FakeApiServer

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
KRO_CONTROLLER_PORTS = {8078, 8079}


def test_importing_and_running_a_manager_leaves_the_collector_alone() -> None:
    """In a fresh interpreter: import, construct, run through a cache sync, stop."""
    code = textwrap.dedent(
        """
        import asyncio, gc
        before = (gc.get_threshold(), gc.get_freeze_count())
        import kro.runtime
        from kro.runtime import Manager, ManagerOptions

        class Synced:
            def has_synced(self): return True
            async def run(self): await asyncio.Event().wait()

        async def main():
            manager = Manager(ManagerOptions(handle_signals=False, sync_poll_s=0.01))
            manager.add_informer(Synced())
            task = asyncio.create_task(manager.run())
            await asyncio.sleep(0.2)
            manager.stop()
            await task

        asyncio.run(main())
        after = (gc.get_threshold(), gc.get_freeze_count())
        print(before == after, before, after)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.splitlines()[-1].startswith("True"), out.stdout + out.stderr


def test_by_default_nothing_listens_and_kro_controllers_ports_are_never_the_default() -> None:
    options = ManagerOptions()
    assert options.health_probe_bind_address == "0"
    assert options.metrics_bind_address == "0"
    assert options.gc_tuning is None


async def test_a_default_manager_binds_no_socket() -> None:
    manager = Manager(ManagerOptions(handle_signals=False))
    task = asyncio.create_task(manager.run())
    await asyncio.wait_for(manager.wait_for_serving(), 5)
    assert manager.addresses == []
    manager.stop()
    await asyncio.wait_for(task, 5)


async def test_stop_lets_in_flight_reconciles_finish_their_writes(
    fake_api: FakeApiServer, client: Client
) -> None:
    for name in ("a", "b"):
        fake_api.seed(CM, {"metadata": {"name": name, "namespace": "ns"}, "data": {}})
    manager = Manager(
        ManagerOptions(handle_signals=False, graceful_shutdown_timeout_s=10), client=client
    )
    started: set[str] = set()
    both_started = asyncio.Event()
    release = asyncio.Event()
    cancelled: list[str] = []

    async def reconcile(request: Request) -> Result:
        started.add(request.name)
        if len(started) == 2:
            both_started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.append(request.name)
            raise
        await client.patch(CM, request.name, {"data": {"done": "yes"}}, namespace="ns")
        return Result()

    controller = ControllerBuilder(manager).for_(CM).workers(2).build(reconcile)
    task = asyncio.create_task(manager.run())
    await asyncio.wait_for(both_started.wait(), 5)
    manager.stop()
    await asyncio.sleep(0.2)
    assert not task.done(), "the manager must wait for the reconciles in flight"
    assert not manager.is_ready()
    release.set()
    await asyncio.wait_for(task, 5)
    assert cancelled == []
    for name in ("a", "b"):
        obj = fake_api.object(CM, name, "ns")
        assert obj is not None
        assert obj["data"] == {"done": "yes"}
    assert controller.queue.is_shutting_down
    assert controller.queue.processing == 0
