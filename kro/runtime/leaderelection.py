"""kro.runtime.leaderelection: one active replica, chosen through a coordination.k8s.io/v1 Lease.

client-go's leaderelection algorithm, rewritten for asyncio because kubernetes-asyncio's version
writes local time labelled `Z`, never counts transitions, never releases, and stops campaigning
after one loss (python-client.md §2.7). The manager (kro.runtime.manager) runs controllers only
while `on_started_leading` runs.

How replicas agree without synchronised clocks: a candidate never trusts the timestamps in the
Lease. It notes *when it itself* last saw the Lease record change (`_observed_at`, on our
monotonic Clock) and treats the holder as alive until `leaseDurationSeconds` have passed on its
own clock since then. The timestamps we write (RFC3339, microseconds, UTC) are for humans.

Timing (client-go defaults): the leader renews every `retry_period_s`; if it cannot renew for
`renew_deadline_s` it steps down, which is before any other candidate (waiting
`lease_duration_s` from its own observation) may take over. Unlike client-go, the renew deadline
counts from the last *successful* renewal, not from the start of a renewal round, and
`is_leader` turns false as soon as that deadline has passed on our own clock: a leader that was
paused (SIGSTOP, a stalled VM, a blocked event loop) knows it may have been replaced the moment
it runs again, before any renewal attempt, so its workers can refuse to reconcile.

Every write carries the resourceVersion we read, so two candidates racing for an expired Lease
cannot both win: the loser gets Conflict and simply tries again next period.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from .clock import Clock, RealClock, wait_with_timeout
from .errors import AlreadyExists, Conflict, KubeError, NotFound
from .gvk import GVR
from .metrics import NOOP, MetricsProvider

log = structlog.get_logger(__name__)

LEASES = GVR("coordination.k8s.io", "v1", "leases")
JITTER_FACTOR = 1.2  # client-go: retries while not leading wait retry_period * (1 + rand*1.2)


class LeaderElectionLost(Exception):
    """This replica held the Lease and lost it; the process should exit (controller-runtime).

    Raised by `LeaderElector.run(campaign_again=False)`. Everything that ran for the lost term is
    stopped by then. Exiting, so that the kubelet starts a fresh process, is the only way to be
    sure no state of the old term (queues, registrations, caches of what was applied) leaks into
    a new one.
    """


class LeaseClient(Protocol):
    """The three calls leader election makes (kro.runtime.client.Client provides them)."""

    async def get(self, gvr: GVR, name: str, *, namespace: str | None = None) -> dict[str, Any]: ...

    async def create(
        self, gvr: GVR, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def update(
        self, gvr: GVR, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    """Which Lease, who we are, and the client-go timings (seconds).

    identity: unique per replica (pod name plus a random suffix is usual); it is what
    `holderIdentity` shows. release_on_cancel: on a graceful stop, empty the Lease so the next
    replica takes over at once instead of after `lease_duration_s`.
    """

    lease_name: str
    lease_namespace: str
    identity: str
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election needs a non-empty identity")
        if self.lease_duration_s <= self.renew_deadline_s:
            raise ValueError("lease_duration_s must be greater than renew_deadline_s")
        if self.renew_deadline_s <= JITTER_FACTOR * self.retry_period_s:
            raise ValueError("renew_deadline_s must be greater than 1.2 * retry_period_s")


def format_micro_time(moment: datetime) -> str:
    """Kubernetes MicroTime: RFC3339 with microseconds, always UTC, `Z` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _utc_now() -> datetime:
    return datetime.now(UTC)


class LeaderElector:
    """Campaigns for a Lease forever; runs `on_started_leading` while holding it.

    on_started_leading: a coroutine function started when we acquire the Lease and cancelled when
    we lose it (or stop). on_stopped_leading: called after that work has finished. on_new_leader:
    called with the holder's identity whenever we observe a different holder.
    """

    def __init__(
        self,
        client: LeaseClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], Coroutine[Any, Any, None]],
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        clock: Clock | None = None,
        wall_clock: Callable[[], datetime] = _utc_now,
        rng: random.Random | None = None,
        metrics: MetricsProvider = NOOP,
    ) -> None:
        self.config = config
        self._client = client
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock: Clock = clock or RealClock()
        self._wall = wall_clock
        self._rng = rng or random.Random()
        self._status = metrics.gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ("name",),
        )
        self._lease: dict[str, Any] | None = None  # the last Lease we read or wrote
        self._observed_spec: dict[str, Any] = {}
        self._observed_at = 0.0  # our clock when the record last changed, or we renewed
        self._renewed_at = -math.inf  # our clock when we last wrote the Lease as its holder
        self._leading = False

    # -- state ----------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True while we hold the Lease *and* renewed it within `renew_deadline_s` on our clock.

        Turns false before the renew loop notices a loss, e.g. right after the process was paused
        for longer than the deadline: another replica may be leading by then.
        """
        return self._leading and self._clock.now() - self._renewed_at < self.config.renew_deadline_s

    @property
    def leader(self) -> str:
        """The holder we last observed ("" when unknown or released)."""
        return str(self._observed_spec.get("holderIdentity") or "")

    def is_healthy(self, tolerance_s: float = 0.0) -> bool:
        """False when we believe we lead but have not renewed for a whole lease duration."""
        if not self._leading:
            return True
        stale_after = self.config.lease_duration_s + tolerance_s
        return self._clock.now() - self._observed_at <= stale_after

    # -- the campaign ---------------------------------------------------------------------------

    async def run(self, *, campaign_again: bool = True) -> None:
        """Acquire, lead until the Lease is lost, then campaign again; returns on cancellation.

        campaign_again=False: raise LeaderElectionLost after the first lost term instead (what a
        manager wants: the process exits and a fresh one campaigns).
        """
        while True:
            await self._acquire()
            await self._lead()
            if not campaign_again:
                raise LeaderElectionLost(
                    f"leader election lost: lease {self.config.lease_namespace}/"
                    f"{self.config.lease_name} (now held by {self.leader or 'nobody'})"
                )

    async def _acquire(self) -> None:
        cfg = self.config
        log.info("leaderelection.campaigning", lease=cfg.lease_name, identity=cfg.identity)
        while not await self._attempt_within(cfg.renew_deadline_s):
            jitter = 1.0 + self._rng.random() * JITTER_FACTOR
            await self._clock.sleep(cfg.retry_period_s * jitter)
        log.info("leaderelection.acquired", lease=cfg.lease_name, identity=cfg.identity)

    async def _lead(self) -> None:
        self._leading = True
        self._status.set(1, name=self.config.lease_name)
        try:
            async with asyncio.TaskGroup() as tg:
                work = tg.create_task(self._on_started(), name="leaderelection:leading")
                await self._renew_until_lost()
                work.cancel()
        except BaseException:  # cancelled (graceful stop), or our leading work crashed
            self._leading = False
            if self.config.release_on_cancel:
                await self._release()
            raise
        finally:
            self._leading = False
            self._status.set(0, name=self.config.lease_name)
            if self._on_stopped is not None:
                self._on_stopped()
        log.warning("leaderelection.lost", lease=self.config.lease_name, leader=self.leader)

    async def _renew_until_lost(self) -> None:
        """Renew every retry period; return once no renewal succeeded for `renew_deadline_s`."""
        cfg = self.config
        while True:
            await self._clock.sleep(cfg.retry_period_s)
            deadline = self._renewed_at + cfg.renew_deadline_s
            if self._clock.now() >= deadline:
                # We did not run for a whole deadline (paused, starved): someone else may lead
                # now. Step down without asking; the next campaign finds out who holds it.
                log.warning("leaderelection.renew_deadline_passed", lease=cfg.lease_name)
                return
            while not await self._renew_before(deadline):
                if self.leader not in ("", cfg.identity):
                    return  # someone else holds it: no point retrying until the deadline
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    return
                await self._clock.sleep(min(cfg.retry_period_s, remaining))

    async def _renew_before(self, deadline: float) -> bool:
        remaining = deadline - self._clock.now()
        return remaining > 0 and await self._attempt_within(remaining)

    async def _attempt_within(self, timeout_s: float) -> bool:
        """One attempt, abandoned after `timeout_s`: a hung request must not outlive our lease."""
        try:
            return await wait_with_timeout(self._clock, self._try_acquire_or_renew(), timeout_s)
        except TimeoutError:
            log.warning("leaderelection.attempt_timed_out", lease=self.config.lease_name)
            return False

    # -- one attempt ----------------------------------------------------------------------------

    async def _try_acquire_or_renew(self) -> bool:
        """One read-modify-write of the Lease; True when we hold it afterwards."""
        cfg = self.config
        try:
            try:
                lease = await self._client.get(
                    LEASES, cfg.lease_name, namespace=cfg.lease_namespace
                )
            except NotFound:
                return await self._create()
            spec = dict(lease.get("spec") or {})
            self._observe(lease, spec)
            holder = str(spec.get("holderIdentity") or "")
            duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration_s)
            alive = self._clock.now() < self._observed_at + duration
            if holder and holder != cfg.identity and alive:
                return False  # held by someone alive, as far as we can tell
            return await self._write(lease, self._next_spec(spec, holder))
        except (Conflict, AlreadyExists):
            return False  # lost a race with another candidate; the next attempt re-reads
        except KubeError as e:
            log.warning("leaderelection.attempt_failed", lease=cfg.lease_name, error=str(e))
            return False
        except Exception:
            # A renewal that fails must not kill the elector: the deadline decides.
            log.warning("leaderelection.attempt_failed", lease=cfg.lease_name, exc_info=True)
            return False

    def _next_spec(self, spec: dict[str, Any], holder: str) -> dict[str, Any]:
        now = format_micro_time(self._wall())
        new = dict(spec)
        new["holderIdentity"] = self.config.identity
        new["leaseDurationSeconds"] = math.ceil(self.config.lease_duration_s)
        new["renewTime"] = now
        if holder != self.config.identity:
            new["acquireTime"] = now
            new["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        else:
            new.setdefault("acquireTime", now)
            new.setdefault("leaseTransitions", 0)
        return new

    async def _create(self) -> bool:
        cfg = self.config
        now = format_micro_time(self._wall())
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": cfg.lease_name, "namespace": cfg.lease_namespace},
            "spec": {
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": math.ceil(cfg.lease_duration_s),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        created = await self._client.create(LEASES, lease, namespace=cfg.lease_namespace)
        self._accept(created)
        return True

    async def _write(self, lease: dict[str, Any], spec: dict[str, Any]) -> bool:
        updated = await self._client.update(
            LEASES, {**lease, "spec": spec}, namespace=self.config.lease_namespace
        )
        self._accept(updated)
        return True

    def _accept(self, lease: dict[str, Any]) -> None:
        """We wrote this Lease: it is now the observed record, observed now."""
        self._lease = lease
        spec = dict(lease.get("spec") or {})
        self._observe(lease, spec)
        self._observed_at = self._clock.now()
        if spec.get("holderIdentity") == self.config.identity:
            self._renewed_at = self._observed_at

    def _observe(self, lease: dict[str, Any], spec: dict[str, Any]) -> None:
        self._lease = lease
        if spec == self._observed_spec:
            return
        previous = self.leader
        self._observed_spec = spec
        self._observed_at = self._clock.now()
        if self.leader != previous and self.leader:
            log.info("leaderelection.new_leader", lease=self.config.lease_name, leader=self.leader)
            if self._on_new_leader is not None:
                self._on_new_leader(self.leader)

    async def _release(self) -> None:
        """Hand the Lease back (empty holder, 1 s duration) so a successor need not wait."""
        try:
            await wait_with_timeout(self._clock, self._release_once(), self.config.renew_deadline_s)
        except Exception:
            log.warning(
                "leaderelection.release_failed", lease=self.config.lease_name, exc_info=True
            )

    async def _release_once(self) -> None:
        cfg = self.config
        lease = self._lease
        for _ in range(2):
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != cfg.identity:
                return  # not ours (any more): nothing to release
            now = format_micro_time(self._wall())
            spec = {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": int((lease.get("spec") or {}).get("leaseTransitions") or 0),
            }
            try:
                await self._write(lease, spec)
            except Conflict:
                # Our view was stale (a renewal landed as we were cancelled): re-read once.
                lease = await self._client.get(
                    LEASES, cfg.lease_name, namespace=cfg.lease_namespace
                )
                continue
            log.info("leaderelection.released", lease=cfg.lease_name, identity=cfg.identity)
            return
