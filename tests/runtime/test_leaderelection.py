"""Leader election on a Lease: acquire, renew, respect a live holder, take over, lose, release."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from fakes_control import FakeKubeClient, RecordingMetrics

from kro.runtime.clock import FakeClock
from kro.runtime.errors import Conflict, InternalError
from kro.runtime.leaderelection import (
    LEASES,
    LeaderElectionConfig,
    LeaderElectionLost,
    LeaderElector,
    format_micro_time,
)

pytestmark = pytest.mark.usefixtures("no_task_leaks")

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
NS = "kro-system"
NAME = "kro-leader"


def config(**overrides: Any) -> LeaderElectionConfig:
    fields: dict[str, Any] = {"lease_name": NAME, "lease_namespace": NS, "identity": "me"}
    fields.update(overrides)
    return LeaderElectionConfig(**fields)


class Harness:
    def __init__(self, cfg: LeaderElectionConfig | None = None) -> None:
        self.clock = FakeClock()
        self.client = FakeKubeClient()
        self.metrics = RecordingMetrics()
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.work_cancelled = asyncio.Event()
        self.new_leaders: list[str] = []
        self.elector = LeaderElector(
            self.client,
            cfg or config(),
            on_started_leading=self._lead,
            on_stopped_leading=self.stopped.set,
            on_new_leader=self.new_leaders.append,
            clock=self.clock,
            wall_clock=lambda: EPOCH + timedelta(seconds=self.clock.now()),
            rng=random.Random(0),
            metrics=self.metrics,
        )

    async def _lead(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.work_cancelled.set()
            raise

    def lease(self) -> dict[str, Any]:
        return self.client.stored(LEASES, NS, NAME)

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.lease()["spec"]
        return spec

    def seed(self, holder: str, **spec: Any) -> None:
        self.client.put(
            LEASES,
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": NAME, "namespace": NS},
                "spec": {
                    "holderIdentity": holder,
                    "leaseDurationSeconds": 15,
                    "renewTime": "2025-12-31T23:59:59.000000Z",
                    "leaseTransitions": 3,
                    **spec,
                },
            },
        )

    def bump_other_renewal(self) -> None:
        lease = self.lease()
        lease["spec"]["renewTime"] = format_micro_time(EPOCH + timedelta(seconds=self.clock.now()))
        self.client.put(LEASES, lease)

    async def until(self, predicate: Callable[[], bool]) -> None:
        await asyncio.wait_for(self.client.wait_for(predicate), timeout=2.0)

    async def advance_until(self, predicate: Callable[[], bool], step_s: float = 1.0) -> None:
        for _ in range(100):
            if predicate():
                return
            await self.clock.advance(step_s)
        raise AssertionError("condition not reached in 100 steps")


@asynccontextmanager
async def running(h: Harness) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(h.elector.run())
    try:
        yield task
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=2.0)


async def test_creates_a_missing_lease_and_leads() -> None:
    h = Harness()
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        assert h.elector.is_leader
        assert h.metrics.value("leader_election_master_status", name=NAME) == 1
        spec = h.spec()
    assert spec["holderIdentity"] == "me"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["acquireTime"] == spec["renewTime"] == "2026-01-01T00:00:00.000000Z"
    assert spec["leaseTransitions"] == 0
    assert h.metrics.value("leader_election_master_status", name=NAME) == 0  # after stop


async def test_leader_renews_every_retry_period() -> None:
    h = Harness()
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        await h.clock.advance(2.0)
        spec = h.spec()
    assert spec["renewTime"] == "2026-01-01T00:00:02.000000Z"
    assert spec["acquireTime"] == "2026-01-01T00:00:00.000000Z"
    assert spec["leaseTransitions"] == 0


async def test_a_live_holder_is_respected() -> None:
    h = Harness()
    h.seed("other")
    async with running(h):
        for _ in range(7):  # 14 s of a holder that keeps renewing
            await h.clock.advance(2.0)
            h.bump_other_renewal()
        await h.clock.advance(14.0)  # and 14 s more without renewals: still inside 15 s
        assert not h.elector.is_leader
    assert h.spec()["holderIdentity"] == "other"
    assert h.new_leaders == ["other"]


async def test_an_expired_lease_is_taken_over_by_our_own_observed_time() -> None:
    h = Harness()
    h.seed("other")
    async with running(h):
        await h.advance_until(h.started.is_set)
        spec = h.spec()
        assert h.clock.now() >= 15.0  # not before a full lease duration on our clock
    assert spec["holderIdentity"] == "me"
    assert spec["leaseTransitions"] == 4
    assert spec["acquireTime"] == spec["renewTime"]
    assert h.new_leaders == ["other", "me"]


async def test_a_released_lease_is_taken_at_once() -> None:
    h = Harness()
    h.seed("", leaseDurationSeconds=1)
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        assert h.clock.now() == 0.0
        assert h.spec()["leaseTransitions"] == 4


async def test_a_conflicting_write_is_retried() -> None:
    h = Harness()
    h.seed("", leaseDurationSeconds=1)
    h.client.fail_next("update", Conflict(status=409, reason="Conflict", message="stale"))
    async with running(h):
        await h.until(lambda: ("update", "leases", NAME) in h.client.calls)
        assert not h.elector.is_leader
        await h.advance_until(h.started.is_set)


async def test_leadership_is_lost_when_renewals_fail_past_the_deadline() -> None:
    h = Harness()
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        boom = InternalError(status=500, reason="InternalError", message="etcd down")
        for _ in range(20):
            h.client.fail_next("get", boom)
        await h.advance_until(h.stopped.is_set)
        assert h.work_cancelled.is_set()
        assert not h.elector.is_leader
        assert h.clock.now() <= 2.0 + 10.0 + 2.0  # one retry period plus the renew deadline


async def test_after_losing_it_campaigns_again() -> None:
    h = Harness()
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        h.client.hang.add("get")
        await h.advance_until(h.stopped.is_set)
        h.started.clear()
        h.client.hang.clear()
        await h.advance_until(h.started.is_set)
        assert h.elector.is_leader


async def test_a_stolen_lease_makes_us_step_down_at_the_next_renewal() -> None:
    h = Harness()
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        lease = h.lease()
        lease["spec"]["holderIdentity"] = "usurper"
        h.client.put(LEASES, lease)
        await h.clock.advance(2.0)
        await asyncio.wait_for(h.stopped.wait(), timeout=2.0)
        assert h.elector.leader == "usurper"


async def test_graceful_stop_releases_the_lease() -> None:
    h = Harness()
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        await h.clock.advance(2.0)
    spec = h.spec()
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert h.work_cancelled.is_set()
    assert h.stopped.is_set()


async def test_no_release_when_disabled() -> None:
    h = Harness(config(release_on_cancel=False))
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
    assert h.spec()["holderIdentity"] == "me"


async def test_release_after_a_lost_race_rereads_the_lease() -> None:
    h = Harness()
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        h.client.fail_next("update", Conflict(status=409, reason="Conflict", message="stale"))
    assert h.spec()["holderIdentity"] == ""


def test_micro_time_is_utc_with_microseconds() -> None:
    moment = datetime(2026, 3, 1, 9, 30, 0, 1234, tzinfo=timezone(timedelta(hours=-5)))
    assert format_micro_time(moment) == "2026-03-01T14:30:00.001234Z"


@pytest.mark.parametrize(
    "overrides",
    [
        {"identity": ""},
        {"lease_duration_s": 10.0, "renew_deadline_s": 10.0},
        {"renew_deadline_s": 2.0, "retry_period_s": 2.0},
    ],
    ids=["no-identity", "duration-not-above-deadline", "deadline-not-above-retry"],
)
def test_inconsistent_timings_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"must|needs"):
        config(**overrides)


async def test_a_leader_that_renews_is_healthy() -> None:
    h = Harness()
    assert h.elector.is_healthy()  # not leading: nothing to be stale about
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        await h.clock.advance(20.0)
        assert h.elector.is_leader
        assert h.elector.is_healthy()


async def test_a_hung_acquire_attempt_is_abandoned_and_retried() -> None:
    h = Harness()
    h.client.hang.add("get")
    async with running(h):
        await h.until(lambda: len(h.client.calls) == 1)
        await h.clock.advance(10.0)  # the renew deadline bounds the hung attempt
        h.client.hang.clear()
        await h.advance_until(h.started.is_set)


async def test_a_paused_leader_stops_leading_before_it_runs_again() -> None:
    h = Harness()
    async with running(h):
        await asyncio.wait_for(h.started.wait(), timeout=2.0)
        assert h.elector.is_leader
        h.clock.jump(10.5)  # stopped past the renew deadline: another replica may lead now
        assert not h.elector.is_leader
        # The Lease still names us, so a renewal would succeed: stepping down anyway is the point
        # (the paused term may overlap another leader's).
        await h.clock.advance(0)
        await asyncio.wait_for(h.stopped.wait(), timeout=2.0)
        assert h.work_cancelled.is_set()


async def test_without_campaigning_again_a_lost_term_raises() -> None:
    h = Harness()
    task = asyncio.create_task(h.elector.run(campaign_again=False))
    await asyncio.wait_for(h.started.wait(), timeout=2.0)
    lease = h.lease()
    lease["spec"]["holderIdentity"] = "usurper"
    h.client.put(LEASES, lease)
    await h.clock.advance(2.0)
    with pytest.raises(LeaderElectionLost, match="now held by usurper"):
        await asyncio.wait_for(task, timeout=2.0)
    assert h.work_cancelled.is_set()
    assert not h.elector.is_leader
