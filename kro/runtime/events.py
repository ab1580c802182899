"""kro.runtime.events: Kubernetes Events about an object, for the humans running `kubectl describe`.

A reconciler calls `EventRecorder.record(obj, "Warning", "ApplyFailed", "...")` and moves on:
recording is synchronous, never raises, and never waits for the API server. Events go through a
bounded buffer to one sender task (`run`, owned by the manager), which:

* folds repeats (same object, type, reason, message, action) seen within `series_window_s` into
  the first Event: a `series` count for events.k8s.io/v1, `count`/`lastTimestamp` for core/v1;
* rate limits per object (client-go's spam filter: a burst of 25, then one per 5 minutes), so a
  hot failure loop cannot flood etcd; folded repeats are still counted and the next allowed
  update carries the total;
* logs and drops on any failure: an Event is a courtesy, never a reason to fail a reconcile.

Every message is scrubbed of credentials and cut to the API server's 1 KiB limit when it is
recorded (`kro.runtime.redact.scrub`): Events are readable by anyone who may list them in the
namespace, a wider audience than the controller's logs.

Neighbours: kro.runtime.client (the `create`/`patch` calls, via the `EventClient` Protocol).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

import structlog

from .clock import Clock, RealClock
from .errors import NotFound
from .gvk import GVR
from .ratelimit import TokenBucket
from .redact import EVENT_MESSAGE_LIMIT, scrub

log = structlog.get_logger(__name__)

EVENTS_V1: Final = GVR("events.k8s.io", "v1", "events")
CORE_EVENTS: Final = GVR("", "v1", "events")
MAX_NOTE_BYTES: Final = EVENT_MESSAGE_LIMIT  # events.k8s.io/v1 validation limit for `note`
_MAX_NAME = 253

EventType = Literal["Normal", "Warning"]


class EventClient(Protocol):
    """The two calls the recorder makes (kro.runtime.client.Client provides them)."""

    async def create(
        self, gvr: GVR, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def patch(
        self, gvr: GVR, name: str, patch: Any, *, namespace: str | None = None
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EventRecorderOptions:
    """Who reports, in which API, and the de-duplication and spam limits.

    reporting_controller: e.g. "kro.run/controller" (events.k8s.io requires it).
    reporting_instance: this replica, e.g. the pod name.
    api: "events.k8s.io/v1" (default, what client-go's new recorder writes) or "v1".
    series_window_s: a repeat within this long of the last occurrence joins its series.
    burst / refill_interval_s: per-object spam filter (client-go: 25, one per 300 s).
    buffer_size: events waiting for the sender; beyond it new events are dropped.
    cache_size: objects and series remembered (least recently used are forgotten).
    """

    reporting_controller: str
    reporting_instance: str
    api: Literal["events.k8s.io/v1", "v1"] = "events.k8s.io/v1"
    series_window_s: float = 360.0
    burst: int = 25
    refill_interval_s: float = 300.0
    buffer_size: int = 1000
    cache_size: int = 4096


@dataclass(frozen=True, slots=True)
class _Pending:
    """One `record` call, captured at call time."""

    regarding: dict[str, str]
    type: str
    reason: str
    message: str
    action: str
    at: datetime
    at_mono: float

    @property
    def key(self) -> tuple[str, ...]:
        ref = self.regarding
        obj = (
            ref.get("uid") or f"{ref['apiVersion']}/{ref['kind']}/{ref['namespace']}/{ref['name']}"
        )
        return (obj, self.type, self.reason, self.message, self.action)


@dataclass(slots=True)
class _Series:
    """An Event we created, and how often it happened since."""

    name: str
    namespace: str
    count: int
    last_seen: float


def reference_to(obj: Mapping[str, Any]) -> dict[str, str]:
    """An ObjectReference for `obj` (apiVersion, kind, namespace, name, uid, resourceVersion)."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": str(obj.get("apiVersion", "")),
        "kind": str(obj.get("kind", "")),
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
    }
    for src, dst in (("uid", "uid"), ("resourceVersion", "resourceVersion")):
        if meta.get(src):
            ref[dst] = str(meta[src])
    return ref


def _micro(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Records Events for objects; see the module docstring for the guarantees."""

    def __init__(
        self,
        client: EventClient,
        options: EventRecorderOptions,
        *,
        clock: Clock | None = None,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.options = options
        self._client = client
        self._clock: Clock = clock or RealClock()
        self._wall = wall_clock
        self._buffer: asyncio.Queue[_Pending] = asyncio.Queue(options.buffer_size)
        self._series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self._buckets: OrderedDict[str, TokenBucket[str]] = OrderedDict()
        self._last_name_ns = 0

    def record(
        self,
        regarding: Mapping[str, Any],
        event_type: EventType,
        reason: str,
        message: str,
        *,
        action: str = "",
    ) -> None:
        """Queue an Event about `regarding`; never raises, never blocks. `message` is scrubbed
        of credentials and cut to `MAX_NOTE_BYTES` here, before anything can hold it."""
        try:
            pending = _Pending(
                regarding=reference_to(regarding),
                type=event_type,
                reason=reason,
                message=scrub(message, MAX_NOTE_BYTES),
                action=action or reason,
                at=self._wall(),
                at_mono=self._clock.now(),
            )
            self._buffer.put_nowait(pending)
        except asyncio.QueueFull:
            log.warning("event.dropped", reason=reason, cause="buffer_full")
        except Exception:
            log.warning("event.record_failed", reason=reason, exc_info=True)

    @property
    def pending(self) -> int:
        """Events recorded but not yet handled by the sender."""
        return self._buffer.qsize()

    async def flush(self) -> None:
        """Wait until every Event recorded so far has been sent (or dropped); needs `run`."""
        await self._buffer.join()

    async def run(self) -> None:
        """Send recorded Events one at a time until cancelled."""
        while True:
            pending = await self._buffer.get()
            try:
                await self._send(pending)
            except Exception:
                ref = pending.regarding
                log.warning(
                    "event.send_failed",
                    kind=ref["kind"],
                    namespace=ref["namespace"],
                    name=ref["name"],
                    reason=pending.reason,
                    exc_info=True,
                )
            finally:
                self._buffer.task_done()

    async def _send(self, pending: _Pending) -> None:
        key = pending.key
        series = self._series.get(key)
        window = self.options.series_window_s
        if series is not None and pending.at_mono - series.last_seen <= window:
            series.count += 1
            series.last_seen = pending.at_mono
            self._series.move_to_end(key)
            if self._allow(key[0]):
                await self._update(series, pending)
            return
        if not self._allow(key[0]):
            log.debug("event.dropped", reason=pending.reason, cause="rate_limited")
            return
        await self._create(key, pending)

    async def _create(self, key: tuple[str, ...], pending: _Pending) -> None:
        namespace = pending.regarding["namespace"] or "default"
        name = self._event_name(pending)
        body = self._body(name, namespace, pending)
        await self._client.create(self._gvr, body, namespace=namespace)
        self._series[key] = _Series(name, namespace, 1, pending.at_mono)
        self._series.move_to_end(key)
        while len(self._series) > self.options.cache_size:
            self._series.popitem(last=False)

    async def _update(self, series: _Series, pending: _Pending) -> None:
        if self.options.api == "v1":
            patch: dict[str, Any] = {"count": series.count, "lastTimestamp": _seconds(pending.at)}
        else:
            patch = {"series": {"count": series.count, "lastObservedTime": _micro(pending.at)}}
        try:
            await self._client.patch(self._gvr, series.name, patch, namespace=series.namespace)
        except NotFound:
            # The Event expired (events have a TTL); start over with a fresh one.
            self._series.pop(pending.key, None)
            await self._create(pending.key, pending)

    @property
    def _gvr(self) -> GVR:
        return CORE_EVENTS if self.options.api == "v1" else EVENTS_V1

    def _allow(self, obj_key: str) -> bool:
        bucket = self._buckets.get(obj_key)
        if bucket is None:
            qps = 1.0 / self.options.refill_interval_s
            bucket = TokenBucket[str](qps=qps, burst=self.options.burst, clock=self._clock)
            self._buckets[obj_key] = bucket
            while len(self._buckets) > self.options.cache_size:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(obj_key)
        return bucket.try_acquire()

    def _event_name(self, pending: _Pending) -> str:
        """`<object>.<hex unix nanos>` like client-go, unique even within one nanosecond."""
        stamp = max(int(pending.at.timestamp() * 1e9), self._last_name_ns + 1)
        self._last_name_ns = stamp
        suffix = f".{stamp:x}"
        return pending.regarding["name"][: _MAX_NAME - len(suffix)] + suffix

    def _body(self, name: str, namespace: str, p: _Pending) -> dict[str, Any]:
        opts = self.options
        meta = {"name": name, "namespace": namespace}
        if opts.api == "v1":
            return {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": meta,
                "involvedObject": p.regarding,
                "reason": p.reason,
                "message": p.message,
                "type": p.type,
                "action": p.action,
                "source": {"component": opts.reporting_controller},
                "firstTimestamp": _seconds(p.at),
                "lastTimestamp": _seconds(p.at),
                "count": 1,
                "reportingComponent": opts.reporting_controller,
                "reportingInstance": opts.reporting_instance,
            }
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": meta,
            "eventTime": _micro(p.at),
            "reportingController": opts.reporting_controller,
            "reportingInstance": opts.reporting_instance,
            "action": p.action,
            "reason": p.reason,
            "regarding": p.regarding,
            "note": p.message,
            "type": p.type,
        }
