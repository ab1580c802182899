"""Manager: probes and metrics over HTTP, controllers gated on leadership, graceful stop, GC."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from fakes_control import FakeKubeClient

from kro.runtime.clock import FakeClock
from kro.runtime.controller import Controller
from kro.runtime.leaderelection import LEASES, LeaderElectionConfig, LeaderElectionLost
from kro.runtime.manager import (
    CacheSyncTimeout,
    ControllersStopped,
    GcTuning,
    Manager,
    ManagerOptions,
    parse_bind_address,
)
from kro.runtime.ratelimit import ItemExponentialBackoff
from kro.runtime.reconcile import Request, Result
from kro.runtime.workqueue import WorkQueue

pytestmark = pytest.mark.usefixtures("no_task_leaks")

LOOPBACK = "127.0.0.1:0"


class FakeInformer:
    """Syncs when told to; records that it ran and was stopped."""

    def __init__(self) -> None:
        self.sync = asyncio.Event()
        self.running = asyncio.Event()
        self.cancelled = False

    def has_synced(self) -> bool:
        return self.sync.is_set()

    async def run(self) -> None:
        self.running.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


class Reconciler:
    def __init__(self, hang: bool = False) -> None:
        self.seen: list[Request] = []
        self.called = asyncio.Event()
        self.gate = asyncio.Event()
        self.hang = hang
        if not hang:
            self.gate.set()

    async def reconcile(self, request: Request) -> Result:
        self.seen.append(request)
        self.called.set()
        await self.gate.wait()
        return Result()


def make_controller(
    clock: FakeClock, reconciler: Reconciler, name: str = "c"
) -> Controller[Request]:
    queue = WorkQueue[Request](
        name, clock=clock, rate_limiter=ItemExponentialBackoff(base_s=1.0, cap_s=10.0)
    )
    return Controller(name, reconciler, queue, clock=clock, unfinished_work_period_s=3600.0)


def options(**overrides: Any) -> ManagerOptions:
    fields: dict[str, Any] = {
        "health_probe_bind_address": LOOPBACK,
        "metrics_bind_address": LOOPBACK,
        "handle_signals": False,
        "gc_tuning": None,
        "graceful_shutdown_timeout_s": 5.0,
    }
    fields.update(overrides)
    return ManagerOptions(**fields)


@asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(manager.run())
    try:
        await wait_for_serving(manager, task)
        yield task
    finally:
        manager.stop()
        await asyncio.wait_for(task, timeout=5.0)


async def wait_for_serving(manager: Manager, task: asyncio.Task[None]) -> None:
    await asyncio.wait_for(manager.wait_for_serving(), timeout=5.0)


async def fetch(manager: Manager, path: str) -> tuple[int, str, str]:
    host, port = manager.addresses[0]
    timeout = aiohttp.ClientTimeout(total=5.0)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(f"http://{host}:{port}{path}") as resp,
    ):
        return resp.status, await resp.text(), resp.headers.get("Content-Type", "")


async def test_healthz_answers_ok() -> None:
    manager = Manager(options())
    async with running(manager):
        assert (await fetch(manager, "/healthz"))[:2] == (200, "ok")


async def test_servers_bind_loopback_only() -> None:
    manager = Manager(options())
    async with running(manager):
        assert {host for host, _ in manager.addresses} == {"127.0.0.1"}


async def test_readyz_waits_for_informers_to_sync() -> None:
    manager = Manager(options())
    informer = FakeInformer()
    manager.add_informer(informer)
    async with running(manager):
        status, body, _ = await fetch(manager, "/readyz")
        assert status == 500
        assert "[-]informers failed" in body
        informer.sync.set()
        assert (await fetch(manager, "/readyz"))[:2] == (200, "ok")


async def test_failing_custom_checks_are_named() -> None:
    manager = Manager(options())
    manager.add_readiness_check("database", lambda: False)
    manager.add_health_check("deadlock", lambda: 1 / 0 == 0)
    async with running(manager):
        assert "[-]database failed" in (await fetch(manager, "/readyz"))[1]
        assert "[-]deadlock failed" in (await fetch(manager, "/healthz"))[1]


async def test_metrics_are_served_as_prometheus_text() -> None:
    manager = Manager(options())
    manager.metrics.counter("workqueue_adds_total", "adds", ("name",)).inc(name="q")
    async with running(manager):
        status, body, content_type = await fetch(manager, "/metrics")
    assert status == 200
    assert 'workqueue_adds_total{name="q"} 1.0' in body
    assert content_type.startswith("text/plain")


async def test_informers_run_and_are_stopped() -> None:
    manager = Manager(options())
    informer = FakeInformer()
    manager.add_informer(informer)
    async with running(manager):
        await asyncio.wait_for(informer.running.wait(), timeout=2.0)
    assert informer.cancelled


async def test_without_leader_election_controllers_run_at_once() -> None:
    clock = FakeClock()
    manager = Manager(options(), clock=clock)
    reconciler = Reconciler()
    controller = make_controller(clock, reconciler)
    manager.add_controller(controller)
    controller.queue.add(Request("ns", "a"))
    async with running(manager):
        await asyncio.wait_for(reconciler.called.wait(), timeout=2.0)
        assert manager.is_leader


async def test_graceful_stop_drains_queued_keys() -> None:
    clock = FakeClock()
    manager = Manager(options(health_probe_bind_address="0", metrics_bind_address="0"), clock=clock)
    reconciler = Reconciler(hang=True)
    controller = make_controller(clock, reconciler)
    manager.add_controller(controller)
    for name in ("a", "b", "c"):
        controller.queue.add(Request("ns", name))
    task = asyncio.create_task(manager.run())
    await asyncio.wait_for(reconciler.called.wait(), timeout=2.0)
    manager.stop()
    reconciler.gate.set()
    await asyncio.wait_for(task, timeout=2.0)
    assert [r.name for r in reconciler.seen] == ["a", "b", "c"]


async def test_readiness_fails_while_stopping() -> None:
    clock = FakeClock()
    manager = Manager(options(), clock=clock)
    controller = make_controller(clock, Reconciler(hang=True))
    manager.add_controller(controller)
    controller.queue.add(Request("ns", "stuck"))
    task = asyncio.create_task(manager.run())
    await wait_for_serving(manager, task)
    manager.stop()
    await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=2.0)  # draining, waiting
    status, body, _ = await fetch(manager, "/readyz")
    assert status == 500
    assert "[-]shutdown failed" in body
    await clock.advance(5.0)
    await asyncio.wait_for(task, timeout=2.0)


async def test_stop_gives_up_on_a_hung_reconcile_after_the_grace_period() -> None:
    clock = FakeClock()
    manager = Manager(options(health_probe_bind_address="0", metrics_bind_address="0"), clock=clock)
    reconciler = Reconciler(hang=True)
    controller = make_controller(clock, reconciler)
    manager.add_controller(controller)
    controller.queue.add(Request("ns", "stuck"))
    task = asyncio.create_task(manager.run())
    await asyncio.wait_for(reconciler.called.wait(), timeout=2.0)
    manager.stop()
    await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=2.0)
    await clock.advance(4.9)
    assert not task.done()
    await clock.advance(0.1)
    await asyncio.wait_for(task, timeout=2.0)
    assert len(controller.queue) == 0  # shut down: the handed-back key is not accepted


async def test_second_stop_cancels_run() -> None:
    clock = FakeClock()
    manager = Manager(options(health_probe_bind_address="0", metrics_bind_address="0"), clock=clock)
    reconciler = Reconciler(hang=True)
    controller = make_controller(clock, reconciler)
    manager.add_controller(controller)
    controller.queue.add(Request("ns", "stuck"))
    task = asyncio.create_task(manager.run())
    await asyncio.wait_for(reconciler.called.wait(), timeout=2.0)
    manager.stop()
    manager.stop()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=2.0)


async def test_sigterm_begins_a_graceful_stop() -> None:
    manager = Manager(
        options(handle_signals=True, health_probe_bind_address="0", metrics_bind_address="0")
    )
    task = asyncio.create_task(manager.run())
    await asyncio.sleep(0)
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        pytest.skip("signal handlers can only be installed in the main thread")
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(task, timeout=5.0)
    assert signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None)  # handlers removed


def lease_manager(client: FakeKubeClient, clock: FakeClock, identity: str) -> Manager:
    election = LeaderElectionConfig(
        lease_name="kro", lease_namespace="kro-system", identity=identity
    )
    return Manager(
        options(leader_election=election, health_probe_bind_address="0", metrics_bind_address="0"),
        client=client,
        clock=clock,
    )


async def test_controllers_run_only_on_the_leader_and_move_on_release() -> None:
    clock = FakeClock()
    client = FakeKubeClient()
    first, second = lease_manager(client, clock, "one"), lease_manager(client, clock, "two")
    seen = {"one": Reconciler(), "two": Reconciler()}
    for manager, identity in ((first, "one"), (second, "two")):
        controller = make_controller(clock, seen[identity], name=identity)
        controller.queue.add(Request("ns", "a"))
        manager.add_controller(controller)
    task_one = asyncio.create_task(first.run())
    await asyncio.wait_for(seen["one"].called.wait(), timeout=2.0)
    task_two = asyncio.create_task(second.run())
    await clock.advance(4.0)
    assert first.is_leader
    assert not second.is_leader
    assert not seen["two"].called.is_set()

    first.stop()
    await asyncio.wait_for(task_one, timeout=2.0)
    assert client.stored(LEASES, "kro-system", "kro")["spec"]["holderIdentity"] == ""
    for _ in range(10):
        if seen["two"].called.is_set():
            break
        await clock.advance(1.0)
    assert second.is_leader
    second.stop()
    await asyncio.wait_for(task_two, timeout=2.0)


async def test_leader_election_needs_a_client() -> None:
    election = LeaderElectionConfig(lease_name="kro", lease_namespace="ns", identity="x")
    with pytest.raises(ValueError, match="client"):
        Manager(options(leader_election=election))


async def test_gc_is_tuned_once_caches_are_synced() -> None:
    clock = FakeClock()
    informer = FakeInformer()
    tuning = GcTuning(freeze=True, thresholds=(1234, 11, 12))
    manager = Manager(
        options(gc_tuning=tuning, health_probe_bind_address="0", metrics_bind_address="0"),
        clock=clock,
    )
    manager.add_informer(informer)
    before = gc.get_threshold()
    task = asyncio.create_task(manager.run())
    try:
        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=2.0)
        assert gc.get_threshold() == before  # not before the sync
        informer.sync.set()
        await clock.advance(0.1)
        assert gc.get_threshold() == (1234, 11, 12)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        manager.stop()
        await asyncio.wait_for(task, timeout=2.0)


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("127.0.0.1:8079", ("127.0.0.1", 8079)),
        (":8078", (None, 8078)),
        ("[::1]:9000", ("::1", 9000)),
        ("0", None),
        ("", None),
    ],
    ids=["host-port", "all-hosts", "ipv6", "zero-disables", "empty-disables"],
)
def test_bind_addresses_parse(address: str, parsed: tuple[str | None, int] | None) -> None:
    assert parse_bind_address(address) == parsed


def test_a_bind_address_without_port_is_refused() -> None:
    with pytest.raises(ValueError, match="host:port"):
        parse_bind_address("localhost")


# -- leadership is fatal to lose; controllers start on synced caches --------------------------


def steal_lease(client: FakeKubeClient, holder: str) -> None:
    lease = client.stored(LEASES, "kro-system", "kro")
    lease["spec"]["holderIdentity"] = holder
    client.put(LEASES, lease)


async def test_losing_the_lease_stops_reconciling_and_ends_run_then_a_new_process_regains() -> None:
    clock = FakeClock()
    client = FakeKubeClient()
    first = lease_manager(client, clock, "one")
    reconciler = Reconciler()
    controller = make_controller(clock, reconciler)
    controller.queue.add(Request("ns", "before"))
    first.add_controller(controller)
    task = asyncio.create_task(first.run())
    await asyncio.wait_for(reconciler.called.wait(), timeout=2.0)

    steal_lease(client, "usurper")
    await clock.advance(2.0)  # the next renewal sees the usurper
    with pytest.raises(LeaderElectionLost, match="usurper"):
        await asyncio.wait_for(task, timeout=2.0)
    assert not first.is_leader
    assert not first.may_reconcile()
    controller.queue.add(Request("ns", "after"))
    await clock.advance(5.0)
    assert [r.name for r in reconciler.seen] == ["before"]

    # The kubelet restarts the process: a fresh manager and controller, which take the Lease
    # back once the usurper releases it, and reconcile.
    steal_lease(client, "")
    second = lease_manager(client, clock, "one-restarted")
    fresh = Reconciler()
    again = make_controller(clock, fresh)
    again.queue.add(Request("ns", "after"))
    second.add_controller(again)
    task = asyncio.create_task(second.run())
    for _ in range(10):
        if fresh.called.is_set():
            break
        await clock.advance(1.0)
    assert second.is_leader
    assert [r.name for r in fresh.seen] == ["after"]
    second.stop()
    await asyncio.wait_for(task, timeout=2.0)


async def test_a_leader_resumed_after_a_pause_reconciles_nothing_before_it_steps_down() -> None:
    clock = FakeClock()
    client = FakeKubeClient()
    manager = lease_manager(client, clock, "one")
    reconciler = Reconciler()
    controller = make_controller(clock, reconciler)
    manager.add_controller(controller)
    task = asyncio.create_task(manager.run())
    for _ in range(10):
        if manager.is_leader:
            break
        await clock.advance(0.5)
    assert manager.is_leader

    clock.jump(11.0)  # SIGSTOP past the renew deadline; another replica may lead by now
    controller.queue.add(Request("ns", "arrived-during-the-pause"))
    for _ in range(10):
        await clock.advance(0.5)
        if task.done():
            break
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(task, timeout=2.0)
    assert reconciler.seen == []


async def test_controllers_start_only_once_informers_have_synced() -> None:
    clock = FakeClock()
    manager = Manager(options(health_probe_bind_address="0", metrics_bind_address="0"), clock=clock)
    informer = FakeInformer()
    manager.add_informer(informer)
    reconciler = Reconciler()
    controller = make_controller(clock, reconciler)
    controller.queue.add(Request("ns", "a"))
    manager.add_controller(controller)
    task = asyncio.create_task(manager.run())
    await clock.advance(5.0)
    assert not reconciler.called.is_set()
    informer.sync.set()
    await clock.advance(0.1)
    await asyncio.wait_for(reconciler.called.wait(), timeout=2.0)
    manager.stop()
    await asyncio.wait_for(task, timeout=2.0)


async def test_a_cache_that_never_syncs_is_fatal_and_named() -> None:
    clock = FakeClock()
    manager = Manager(
        options(health_probe_bind_address="0", metrics_bind_address="0", cache_sync_timeout_s=30),
        clock=clock,
    )
    informer = FakeInformer()
    informer.gvr = "apps/v1, Resource=deployments"  # type: ignore[attr-defined]
    manager.add_informer(informer)
    reconciler = Reconciler()
    manager.add_controller(make_controller(clock, reconciler))
    task = asyncio.create_task(manager.run())
    await clock.advance(31.0)
    with pytest.raises(CacheSyncTimeout, match=r"within 30s: apps/v1, Resource=deployments"):
        await asyncio.wait_for(task, timeout=2.0)
    assert not reconciler.called.is_set()
    assert informer.cancelled


class BrokenInformer(FakeInformer):
    async def run(self) -> None:
        raise RuntimeError("watch handler bug")


async def test_a_failing_informer_stops_the_process_instead_of_leaving_it_half_alive() -> None:
    clock = FakeClock()
    manager = Manager(options(), clock=clock)
    manager.add_informer(BrokenInformer())
    controller = make_controller(clock, Reconciler())
    manager.add_controller(controller)
    with pytest.raises(RuntimeError, match="watch handler bug"):
        await asyncio.wait_for(manager.run(), timeout=2.0)
    assert not manager.is_ready()


async def test_controllers_that_stop_on_their_own_are_fatal() -> None:
    clock = FakeClock()
    manager = Manager(options(health_probe_bind_address="0", metrics_bind_address="0"), clock=clock)
    controller = make_controller(clock, Reconciler())
    manager.add_controller(controller)
    task = asyncio.create_task(manager.run())
    await clock.advance(0.1)
    controller.queue.shutdown()  # someone else shut the queue: nobody reconciles any more
    with pytest.raises(ControllersStopped):
        await asyncio.wait_for(task, timeout=2.0)


async def test_a_cache_that_never_syncs_on_a_leader_is_reported_as_itself() -> None:
    clock = FakeClock()
    client = FakeKubeClient()
    election = LeaderElectionConfig(lease_name="kro", lease_namespace="kro-system", identity="x")
    manager = Manager(
        options(
            leader_election=election,
            health_probe_bind_address="0",
            metrics_bind_address="0",
            cache_sync_timeout_s=30,
        ),
        client=client,
        clock=clock,
    )
    manager.add_informer(FakeInformer())
    manager.add_controller(make_controller(clock, Reconciler()))
    task = asyncio.create_task(manager.run())
    for _ in range(40):
        await clock.advance(1.0)
        if task.done():
            break
    # Not an ExceptionGroup from the elector's task group: the cause, as the CLI logs it.
    with pytest.raises(CacheSyncTimeout, match="within 30s: FakeInformer"):
        await asyncio.wait_for(task, timeout=2.0)
    assert client.stored(LEASES, "kro-system", "kro")["spec"]["holderIdentity"] == ""  # released
