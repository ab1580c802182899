"""Manager: controllers added with `leader_only=False` run on every replica, leader or not,
beside the leader-only ones; `may_reconcile` tells them when a write is the leader's to make."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import pytest
from fakes_control import FakeKubeClient

from kro.runtime.clock import FakeClock
from kro.runtime.controller import Controller
from kro.runtime.leaderelection import LEASES, LeaderElectionConfig, LeaderElectionLost
from kro.runtime.manager import ControllersStopped, Manager, ManagerOptions
from kro.runtime.ratelimit import ItemExponentialBackoff
from kro.runtime.reconcile import Request, Result
from kro.runtime.workqueue import WorkQueue

pytestmark = pytest.mark.usefixtures("no_task_leaks")


class Recorder:
    """Records each reconcile and whether the manager would let it write as the leader."""

    def __init__(self, manager: Manager, hang: bool = False) -> None:
        self.manager = manager
        self.seen: list[tuple[str, bool]] = []
        self.called = asyncio.Event()
        self.release = asyncio.Event()
        if not hang:
            self.release.set()

    async def reconcile(self, request: Request) -> Result:
        self.seen.append((request.name, self.manager.may_reconcile()))
        self.called.set()
        await self.release.wait()
        return Result()


class Counted(Controller[Request]):
    """A Controller that counts how often `run` starts (a restart would show as 2)."""

    runs = 0

    async def run(self) -> None:
        self.runs += 1
        await super().run()


def controller(clock: FakeClock, reconciler: Recorder, name: str) -> Counted:
    queue = WorkQueue[Request](
        name, clock=clock, rate_limiter=ItemExponentialBackoff(base_s=1.0, cap_s=10.0)
    )
    return Counted(name, reconciler, queue, clock=clock, unfinished_work_period_s=3600.0)


def manager(client: FakeKubeClient | None, clock: FakeClock, identity: str = "") -> Manager:
    fields: dict[str, Any] = {
        "health_probe_bind_address": "0",
        "metrics_bind_address": "0",
        "handle_signals": False,
        "gc_tuning": None,
        "graceful_shutdown_timeout_s": 5.0,
    }
    if identity:
        fields["leader_election"] = LeaderElectionConfig(
            lease_name="kro", lease_namespace="kro-system", identity=identity
        )
    return Manager(ManagerOptions(**fields), client=client, clock=clock)


class Pair(NamedTuple):
    """A manager with one controller that runs on every replica (`shared`, recording into
    `everywhere`) and one that runs on the leader only (`mine`, into `leader_only`)."""

    manager: Manager
    everywhere: Recorder
    leader_only: Recorder
    shared: Counted
    mine: Counted


def pair(client: FakeKubeClient | None, clock: FakeClock, identity: str = "") -> Pair:
    mgr = manager(client, clock, identity)
    everywhere, leader_only = Recorder(mgr), Recorder(mgr)
    shared = controller(clock, everywhere, "shared")
    mine = controller(clock, leader_only, "leader-only")
    mgr.add_controller(shared, leader_only=False)
    mgr.add_controller(mine)
    return Pair(mgr, everywhere, leader_only, shared, mine)


def hold_lease(client: FakeKubeClient, holder: str) -> None:
    """Another replica holds the Lease (it renews as far as anyone can tell)."""
    client.put(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "kro", "namespace": "kro-system"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
        },
    )


async def advance_until(clock: FakeClock, done: Any, steps: int = 30, step_s: float = 1.0) -> None:
    for _ in range(steps):
        if done():
            return
        await clock.advance(step_s)
    assert done()


async def test_every_replica_controllers_run_while_another_replica_leads() -> None:
    clock, client = FakeClock(), FakeKubeClient()
    hold_lease(client, "the-leader")
    follower, everywhere, leader_only, shared, mine = pair(client, clock, "follower")
    shared.queue.add(Request("ns", "a"))
    mine.queue.add(Request("ns", "b"))
    task = asyncio.create_task(follower.run())
    await asyncio.wait_for(everywhere.called.wait(), timeout=2.0)
    await clock.advance(5.0)
    assert everywhere.seen == [("a", False)]  # it works, and knows it may not write
    assert leader_only.seen == []
    assert not follower.is_leader
    assert follower.may_work()
    follower.stop()
    await asyncio.wait_for(task, timeout=2.0)


async def test_winning_the_lease_starts_leader_only_controllers_beside_the_running_ones() -> None:
    clock, client = FakeClock(), FakeKubeClient()
    hold_lease(client, "the-leader")
    replica, everywhere, leader_only, shared, mine = pair(client, clock, "replica")
    shared.queue.add(Request("ns", "before"))
    mine.queue.add(Request("ns", "promoted"))
    task = asyncio.create_task(replica.run())
    await asyncio.wait_for(everywhere.called.wait(), timeout=2.0)

    # The leader dies: its Lease is not renewed, and expires on our clock.
    await advance_until(clock, lambda: replica.is_leader)
    await advance_until(clock, leader_only.called.is_set)
    shared.queue.add(Request("ns", "after"))
    await advance_until(clock, lambda: len(everywhere.seen) == 2)
    assert everywhere.seen == [("before", False), ("after", True)]
    assert leader_only.seen == [("promoted", True)]
    assert shared.runs == 1  # never stopped or restarted by the change of leader
    replica.stop()
    await asyncio.wait_for(task, timeout=2.0)


async def test_losing_the_lease_is_fatal_and_drains_the_every_replica_controllers() -> None:
    clock, client = FakeClock(), FakeKubeClient()
    replica = manager(client, clock, "replica")
    everywhere = Recorder(replica, hang=True)
    shared = controller(clock, everywhere, "shared")
    replica.add_controller(shared, leader_only=False)
    task = asyncio.create_task(replica.run())
    await advance_until(clock, lambda: replica.is_leader, step_s=0.5)
    shared.queue.add(Request("ns", "in-flight"))
    await asyncio.wait_for(everywhere.called.wait(), timeout=2.0)

    hold_lease(client, "usurper")
    await advance_until(clock, lambda: not replica.may_reconcile(), step_s=0.5)
    everywhere.release.set()  # the in-flight reconcile finishes: drained, not cancelled
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(task, timeout=2.0)
    assert everywhere.seen == [("in-flight", True)]
    assert not replica.may_work()


async def test_without_leader_election_both_kinds_run_and_may_write() -> None:
    clock = FakeClock()
    single, everywhere, leader_only, shared, mine = pair(None, clock)
    shared.queue.add(Request("ns", "a"))
    mine.queue.add(Request("ns", "b"))
    task = asyncio.create_task(single.run())
    await asyncio.wait_for(everywhere.called.wait(), timeout=2.0)
    await asyncio.wait_for(leader_only.called.wait(), timeout=2.0)
    assert everywhere.seen == [("a", True)]
    assert leader_only.seen == [("b", True)]
    single.stop()
    await asyncio.wait_for(task, timeout=2.0)


async def test_graceful_stop_drains_every_replica_controllers_too() -> None:
    clock, client = FakeClock(), FakeKubeClient()
    hold_lease(client, "the-leader")
    follower = manager(client, clock, "follower")
    everywhere = Recorder(follower, hang=True)
    shared = controller(clock, everywhere, "shared")
    follower.add_controller(shared, leader_only=False)
    for name in ("a", "b"):
        shared.queue.add(Request("ns", name))
    task = asyncio.create_task(follower.run())
    await asyncio.wait_for(everywhere.called.wait(), timeout=2.0)
    follower.stop()
    everywhere.release.set()
    await asyncio.wait_for(task, timeout=2.0)
    assert [name for name, _ in everywhere.seen] == ["a", "b"]


class Quits:
    """A controller whose run returns by itself (a bug): fatal, as for leader-only ones."""

    async def run(self) -> None:
        return None

    def shutdown(self) -> None:
        return None


async def test_an_every_replica_controller_that_stops_on_its_own_is_fatal() -> None:
    clock = FakeClock()
    single = manager(None, clock)
    single.add_controller(Quits(), leader_only=False)
    with pytest.raises(ControllersStopped):
        await asyncio.wait_for(single.run(), timeout=2.0)
