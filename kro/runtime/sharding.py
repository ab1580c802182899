"""kro.runtime.sharding: replicas share the objects by hash range of the namespace.

Kubernetes v1.36's ShardedListAndWatch (alpha) lets a List/Watch carry a `shardSelector`
(`shardRange(object.metadata.namespace, '0x…', '0x…') || …`); the API server then sends only
the objects whose 64-bit FNV-1a hash of that field falls in one of the ranges. The bounds are
0x-prefixed, lower-case, exactly 16 hex digits, except the exclusive upper bound 2^64, written
`0x10000000000000000`. So the distribution is Kubernetes' own; this module only decides who
asks for which range, and makes a handover safe:

Membership. Each replica holds its own Lease (`kro-shard-<identity>`, label
`kro.run/shard-group`) and renews it every `retry_period_s`. Liveness follows the leader Lease
(kro.runtime.leaderelection): a Lease is alive until `lease_duration_s` have passed on *our*
monotonic clock since we last saw it change, and a replica that could not renew for
`renew_deadline_s` (< the lease duration) fences itself: it owns nothing until it renews.

Assignment. The sorted names of the live members split [0, 2^64) into contiguous equal ranges
(`assign`); every replica computes the same answer from the same view. A view is identified by
`view_id` (a digest of the sorted names).

Fencing. On a new view a replica first *shrinks*: it keeps only what it owns in both the old and
the new assignment, waits until its in-flight reconciles of what it lost have finished
(`ShardView.drain`), drops that part of its caches (its informers relist with the smaller
selector), and then writes the view id into its Lease (`kro.run/shard-view`, the
acknowledgement). It *grows* to its full new range only once every member of the view has
acknowledged that same view. Members that disagree about the view never grow, so two replicas
never own one hash at once; a dead member stops counting after the lease duration.

Metrics, per replica: `kro_shard_owned_range_fraction` (how much of the hash space it owns),
`kro_shard_owned_instances` (the objects it owns, counted at scrape time by what the owner of
the view hands `ShardView.count_owned`), `kro_shard_members`, `kro_shard_handovers_total` and
`kro_shard_fallback_mode`; each exists, at 0, from the start.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from .clock import Clock, RealClock
from .errors import AlreadyExists, Conflict, KubeError, NotFound
from .leaderelection import LEASES, format_micro_time
from .metrics import NOOP, CallbackGaugeProvider, MetricsProvider, Sample

log = structlog.get_logger(__name__)

HASH_SPACE = 1 << 64
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
NAMESPACE_FIELD = "object.metadata.namespace"
GROUP_LABEL = "kro.run/shard-group"
VIEW_ANNOTATION = "kro.run/shard-view"
TRACE_ENV = "KRO_SHARD_TRACE_RECONCILES"

Range = tuple[int, int]
"""[start, end) over the 64-bit hash space; end may be 2^64."""


def fnv1a64(value: str) -> int:
    """64-bit FNV-1a of the UTF-8 bytes: the API server's shard hash."""
    h = FNV_OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def spread_hash(key: str) -> int:
    """A point of the hash space for a key no API server filters by (a member cluster's
    name): the first 8 bytes of SHA-256. FNV-1a spreads names that differ only in their last
    characters over one narrow band, which is harmless for namespaces, whose selector is the
    server's, but would give `member-1` .. `member-9` all to one replica."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def assign(members: Iterable[str]) -> dict[str, Range]:
    """Contiguous, equal ranges over the sorted member names; together exactly [0, 2^64)."""
    names = sorted(set(members))
    n = len(names)
    return {name: (i * HASH_SPACE // n, (i + 1) * HASH_SPACE // n) for i, name in enumerate(names)}


def view_id(members: Iterable[str]) -> str:
    """A short digest naming one membership view; equal views, equal ids."""
    return hashlib.sha256("\n".join(sorted(set(members))).encode()).hexdigest()[:16]


def _hex(bound: int) -> str:
    return "0x10000000000000000" if bound == HASH_SPACE else f"0x{bound:016x}"


def selector(ranges: Sequence[Range], field: str = NAMESPACE_FIELD) -> str | None:
    """The `shardSelector` for these ranges; None for no range (nothing to ask the server)."""
    parts = [f"shardRange({field}, '{_hex(s)}', '{_hex(e)}')" for s, e in ranges if s < e]
    return " || ".join(parts) or None


def intersect(a: Sequence[Range], b: Sequence[Range]) -> tuple[Range, ...]:
    """The hashes in both range lists, as sorted non-empty ranges."""
    out = [(max(s1, s2), min(e1, e2)) for s1, e1 in a for s2, e2 in b]
    return tuple(sorted(r for r in out if r[0] < r[1]))


def contains(ranges: Sequence[Range], value: int) -> bool:
    return any(s <= value < e for s, e in ranges)


def describe(ranges: Sequence[Range]) -> str:
    """For logs: `0x…-0x…` per range, comma-separated ("none" when empty)."""
    return ",".join(f"{_hex(s)}-{_hex(e)}" for s, e in ranges) or "none"


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


class ShardView:
    """What this replica owns now: the ranges, the in-flight reconciles, the fallback mode.

    Informers (kro.runtime.informer) read `selector()` when they list and watch, filter every
    object with `owns_object` (the client-side fallback), and relist when `changed()` fires.
    Workers ask `begin(namespace)` before a reconcile and call `end(namespace)` after; `drain`
    waits for the in-flight ones outside the current ranges.
    """

    def __init__(self, *, metrics: MetricsProvider = NOOP, identity: str = "") -> None:
        self.ranges: tuple[Range, ...] = ()
        self.version = 0
        self.fallback = False
        self.identity = identity
        self._changed = asyncio.Event()
        self._inflight: Tally[int] = Tally()
        self._trace = os.environ.get(TRACE_ENV) == "1"
        self._fallback_gauge = metrics.gauge(
            "kro_shard_fallback_mode",
            "1 when the API server ignored or rejected shardSelector and kro filters locally.",
        )
        self._fallback_gauge.set(0)
        self._count_owned: Callable[[], int] = lambda: 0
        if isinstance(metrics, CallbackGaugeProvider):
            metrics.callback_gauge(
                "kro_shard_owned_instances",
                "Objects this replica owns now (in its sharded informers).",
                (),
                self._owned_samples,
            )

    def count_owned(self, count: Callable[[], int]) -> None:
        """`count()` says how many objects this replica owns now; read at every scrape of
        `kro_shard_owned_instances` (0 until this is called)."""
        self._count_owned = count

    def owned_count(self) -> int:
        return self._count_owned()

    def _owned_samples(self) -> Iterable[Sample]:
        yield {}, float(self._count_owned())

    def owns(self, namespace: str) -> bool:
        return contains(self.ranges, fnv1a64(namespace))

    def owns_object(self, obj: Mapping[str, Any]) -> bool:
        return self.owns(namespace_of(obj))

    def selector(self) -> str | None:
        """The selector to send; None in fallback mode (the server would ignore it)."""
        if self.fallback:
            return None
        # Nothing owned: ask for a range no namespace hashes to in practice, and filter anyway.
        return selector(self.ranges) or selector([(0, 1)])

    def set_ranges(self, ranges: Sequence[Range]) -> None:
        """Own exactly `ranges` from now on; informers relist (dropping what left)."""
        ranges = tuple(sorted(ranges))
        if ranges == self.ranges:
            return
        self.ranges = ranges
        self.version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def changed(self, version: int) -> None:
        """Return once the ranges differ from `version`."""
        while self.version == version:
            await self._changed.wait()

    def enter_fallback(self, reason: str, **details: Any) -> None:
        """Filter on the client from now on; said once in the log and in a metric."""
        if self.fallback:
            return
        self.fallback = True
        self._fallback_gauge.set(1)
        log.warning("shard.fallback_client_filter", reason=reason, **details)

    def begin(self, namespace: str, name: str = "") -> bool:
        """Admit one reconcile of an object in `namespace`; False if not ours (skip it)."""
        return self.enter(fnv1a64(namespace), ns=namespace, obj=name)

    def end(self, namespace: str, name: str = "") -> None:
        self.leave(fnv1a64(namespace), ns=namespace, obj=name)

    def enter(self, point: int, **trace: str) -> bool:
        """Admit one reconcile of whatever hashes to `point`; False if not ours. `trace`
        names it in the reconcile trace (`KRO_SHARD_TRACE_RECONCILES=1`)."""
        if not contains(self.ranges, point):
            return False
        self._inflight[point] += 1
        if self._trace:
            log.info("shard.reconcile_start", replica=self.identity, **trace)
        return True

    def leave(self, point: int, **trace: str) -> None:
        if self._trace:
            log.info("shard.reconcile_end", replica=self.identity, **trace)
        self._inflight[point] -= 1
        if self._inflight[point] <= 0:
            del self._inflight[point]

    def pinned(self, key: str, **trace: str) -> PinnedShare:
        """An admission for a group of objects that moves between replicas as one, at the
        point `spread_hash(key)` (a member cluster's instances: kro.controllers.spokes)."""
        return PinnedShare(self, spread_hash(key), trace)

    def inflight_outside(self) -> int:
        return sum(n for point, n in self._inflight.items() if not contains(self.ranges, point))

    async def drain(self, clock: Clock, poll_s: float = 0.05) -> None:
        """Wait until no reconcile outside the current ranges is running."""
        while self.inflight_outside():
            await clock.sleep(poll_s)


class PinnedShare:
    """Admits every key of its group while the view owns the group's one point; in-flight
    reconciles count in the view's drain, so a handover of the group is fenced exactly as one
    of a namespace (kro.runtime.controller.Admission)."""

    def __init__(self, view: ShardView, point: int, trace: Mapping[str, str]) -> None:
        self.view = view
        self.point = point
        self._trace = dict(trace)

    def owned(self) -> bool:
        return contains(self.view.ranges, self.point)

    def begin(self, namespace: str, name: str = "") -> bool:
        return self.view.enter(self.point, ns=namespace, obj=name, **self._trace)

    def end(self, namespace: str, name: str = "") -> None:
        self.view.leave(self.point, ns=namespace, obj=name, **self._trace)


class ShardLeaseClient(Protocol):
    """The Lease calls membership makes (kro.runtime.client.Client provides them)."""

    async def get(self, gvr: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]: ...

    async def list(
        self, gvr: Any, *, namespace: str | None = None, label_selector: str | None = None
    ) -> dict[str, Any]: ...

    async def create(
        self, gvr: Any, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def update(
        self, gvr: Any, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def delete(
        self, gvr: Any, name: str, *, namespace: str | None = None
    ) -> dict[str, Any] | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardingConfig:
    """Who we are, where the membership Leases live, and the leader-election timings."""

    identity: str
    namespace: str
    group: str = "kro"
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("sharding needs a non-empty identity")
        if self.lease_duration_s <= self.renew_deadline_s:
            raise ValueError("lease_duration_s must be greater than renew_deadline_s")

    @property
    def lease_name(self) -> str:
        return member_lease_name(self.group, self.identity)


def member_lease_name(group: str, identity: str) -> str:
    """A valid object name for a member's Lease (identities may hold `_` or upper case)."""
    clean = re.sub(r"[^a-z0-9.-]+", "-", identity.lower()).strip("-.")
    return f"{group}-shard-{clean}"[:253]


@dataclass(slots=True)
class _Seen:
    resource_version: str
    observed_at: float
    ack: str


class ShardMembership:
    """Keeps our member Lease, watches the others, and moves `view` through the fencing rule."""

    def __init__(
        self,
        client: ShardLeaseClient,
        config: ShardingConfig,
        view: ShardView,
        *,
        clock: Clock | None = None,
        metrics: MetricsProvider = NOOP,
        wall: Callable[[], datetime] | None = None,
    ) -> None:
        self._client = client
        self.config = config
        self.view = view
        self._clock = clock or RealClock()
        self._wall = wall or (lambda: datetime.now(UTC))
        self._seen: dict[str, _Seen] = {}
        self._lease: dict[str, Any] | None = None
        self._renewed_at: float | None = None
        self.view_id = ""  # the view we acknowledged
        self.members: tuple[str, ...] = ()
        self.target: tuple[Range, ...] = ()
        self._handovers = metrics.counter(
            "kro_shard_handovers_total", "Membership views this replica moved to."
        )
        self._range_gauge = metrics.gauge(
            "kro_shard_owned_range_fraction", "Fraction of the 64-bit hash space owned."
        )
        self._members_gauge = metrics.gauge("kro_shard_members", "Live members in our view.")
        self._handovers.inc(0)
        self._range_gauge.set(0)
        self._members_gauge.set(0)

    @property
    def name(self) -> str:
        return self.config.lease_name

    def fenced(self) -> bool:
        """True when our own Lease is older than the renew deadline: we must own nothing."""
        return (
            self._renewed_at is None
            or self._clock.now() - self._renewed_at >= self.config.renew_deadline_s
        )

    async def run(self) -> None:
        """Renew, observe and rebalance every retry period until cancelled; then leave."""
        try:
            while True:
                await self.step()
                await self._clock.sleep(self.config.retry_period_s)
        finally:
            await self._leave()

    async def step(self) -> None:
        """One round: renew our Lease, read the others, shrink or grow per the fencing rule."""
        await self._renew()
        if self.fenced():
            if self.view.ranges:
                log.warning("shard.fenced", replica=self.name)
                self._apply(())
                await self.view.drain(self._clock)
            return
        try:
            leases = await self._client.list(
                LEASES,
                namespace=self.config.namespace,
                label_selector=f"{GROUP_LABEL}={self.config.group}",
            )
        except KubeError as e:
            log.warning("shard.list_failed", error=str(e))
            return
        live = self._observe(leases.get("items") or [])
        members = tuple(sorted({*live, self.name}))
        vid = view_id(members)
        if vid != self.view_id:
            await self._move_to(members, vid)
            return
        if self.view.ranges != self.target and all(
            self._seen[m].ack == vid for m in members if m != self.name
        ):
            self._apply(self.target)
            log.info("shard.range_grown", replica=self.name, ranges=describe(self.target), view=vid)

    async def _move_to(self, members: tuple[str, ...], vid: str) -> None:
        self.members, self.target = members, (assign(members)[self.name],)
        kept = intersect(self.view.ranges, self.target)
        lost = self.view.ranges != kept
        self._apply(kept)
        await self.view.drain(self._clock)
        self.view_id = vid
        self._handovers.inc()
        self._members_gauge.set(len(members))
        log.info(
            "shard.view_changed",
            replica=self.name,
            members=list(members),
            view=vid,
            target=describe(self.target),
            kept=describe(kept),
            shrank=lost,
        )
        await self._renew()  # the acknowledgement: others may grow once all have it

    def _apply(self, ranges: Sequence[Range]) -> None:
        self.view.set_ranges(ranges)
        self._range_gauge.set(sum(e - s for s, e in self.view.ranges) / HASH_SPACE)

    def _observe(self, items: Iterable[Mapping[str, Any]]) -> list[str]:
        """Note changes (on our clock) and return the names of the live member Leases."""
        now = self._clock.now()
        live: list[str] = []
        present: set[str] = set()
        for lease in items:
            meta = lease.get("metadata") or {}
            name = str(meta.get("name") or "")
            present.add(name)
            rv = str(meta.get("resourceVersion") or "")
            ack = str((meta.get("annotations") or {}).get(VIEW_ANNOTATION) or "")
            spec = lease.get("spec") or {}
            seen = self._seen.get(name)
            if seen is None or seen.resource_version != rv:
                seen = self._seen[name] = _Seen(rv, now, ack)
            duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration_s)
            if name == self.name or (
                spec.get("holderIdentity") and now < seen.observed_at + duration
            ):
                live.append(name)
        for gone in set(self._seen) - present:
            del self._seen[gone]
        return live

    async def _renew(self) -> None:
        cfg = self.config
        now = format_micro_time(self._wall())
        try:
            if self._lease is None:
                try:
                    self._lease = await self._client.get(LEASES, self.name, namespace=cfg.namespace)
                except NotFound:
                    self._lease = await self._client.create(
                        LEASES, self._new_lease(now), namespace=cfg.namespace
                    )
                    self._renewed_at = self._clock.now()
                    return
            lease = dict(self._lease)
            meta = dict(lease.get("metadata") or {})
            meta["annotations"] = {**(meta.get("annotations") or {}), VIEW_ANNOTATION: self.view_id}
            meta["labels"] = {**(meta.get("labels") or {}), GROUP_LABEL: cfg.group}
            spec = {
                **(lease.get("spec") or {}),
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": math.ceil(cfg.lease_duration_s),
                "renewTime": now,
            }
            self._lease = await self._client.update(
                LEASES, {**lease, "metadata": meta, "spec": spec}, namespace=cfg.namespace
            )
            self._renewed_at = self._clock.now()
        except (Conflict, NotFound, AlreadyExists):
            self._lease = None  # re-read next round
        except KubeError as e:
            log.warning("shard.renew_failed", replica=self.name, error=str(e))
        except Exception:
            log.warning("shard.renew_failed", replica=self.name, exc_info=True)

    def _new_lease(self, now: str) -> dict[str, Any]:
        cfg = self.config
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": cfg.namespace,
                "labels": {GROUP_LABEL: cfg.group},
                "annotations": {VIEW_ANNOTATION: self.view_id},
            },
            "spec": {
                "holderIdentity": cfg.identity,
                "leaseDurationSeconds": math.ceil(cfg.lease_duration_s),
                "acquireTime": now,
                "renewTime": now,
            },
        }

    async def _leave(self) -> None:
        """A graceful stop: own nothing, finish what runs, delete our Lease (others grow now)."""
        self._apply(())
        try:
            await asyncio.wait_for(self.view.drain(self._clock), self.config.renew_deadline_s)
            await asyncio.wait_for(
                self._client.delete(LEASES, self.name, namespace=self.config.namespace),
                self.config.renew_deadline_s,
            )
            log.info("shard.left", replica=self.name)
        except (KubeError, TimeoutError) as e:
            log.warning("shard.leave_failed", replica=self.name, error=str(e))
