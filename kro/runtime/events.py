"""kro.runtime.events: Kubernetes Events about an object, for the humans running `kubectl describe`.

A reconciler calls `EventRecorder.record(obj, "Warning", "ApplyFailed", "...")` and moves on:
recording is synchronous, never raises, and never waits for the API server. Events go through a
bounded buffer to one sender task (`run`, owned by the manager), which:

* folds repeats (same object, reporter, type, reason, message, action) seen within
  `series_window_s` into the first Event: a `series` count for events.k8s.io/v1,
  `count`/`lastTimestamp` for core/v1;
* aggregates near-repeats like client-go's EventAggregator: once an object has had
  `aggregate_after` (10) different messages for one reason within `aggregate_window_s` (10
  minutes), further ones fold into one Event "(combined from similar events): <message>" with a
  count, so an error whose text changes every time (a resourceVersion, a timestamp) is still
  one Event, not one per retry;
* rate limits per object (client-go's spam filter: a burst of 25, then one per 5 minutes), so a
  hot failure loop cannot flood etcd; folded repeats are still counted and the next allowed
  update carries the total;
* logs and drops on any failure: an Event is a courtesy, never a reason to fail a reconcile.

One recorder (one buffer, one sender, one spam filter per object) serves every controller of a
process, as client-go's broadcaster does: `recorder.named("website")` is the recorder a
controller reports through (controller-runtime's `GetEventRecorderFor`), with the same
`record` and its own reporting controller. `Manager.event_recorder(name)` hands them out.

Every message is scrubbed of credentials and cut to the API server's 1 KiB limit when it is
recorded (`kro.runtime.redact.scrub`): Events are readable by anyone who may list them in the
namespace, a wider audience than the controller's logs.

Neighbours: kro.runtime.client (the `create`/`patch` calls, via the `EventClient` Protocol).
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
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
COMBINED: Final = "(combined from similar events): "  # client-go's aggregate message prefix

EventType = Literal["Normal", "Warning"]


class Recorder(Protocol):
    """What a reconciler records Events through (an EventRecorder, or one `named` view of it)."""

    def record(
        self,
        regarding: Mapping[str, Any] | Any,
        event_type: EventType,
        reason: str,
        message: str,
        *,
        action: str = "",
    ) -> None: ...


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
    aggregate_after / aggregate_window_s: this many different messages for one object and
        reason within the window, and further ones are combined into one Event (client-go's
        EventAggregator: 10 within 600 s).
    buffer_size: events waiting for the sender; beyond it new events are dropped.
    cache_size: objects and series remembered (least recently used are forgotten).
    """

    reporting_controller: str
    reporting_instance: str
    api: Literal["events.k8s.io/v1", "v1"] = "events.k8s.io/v1"
    series_window_s: float = 360.0
    burst: int = 25
    refill_interval_s: float = 300.0
    aggregate_after: int = 10
    aggregate_window_s: float = 600.0
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
    reporter: str
    combined: bool = False  # one of the aggregated near-repeats (see `_aggregate`)

    @property
    def object_key(self) -> str:
        ref = self.regarding
        return ref.get("uid") or (
            f"{ref['apiVersion']}/{ref['kind']}/{ref['namespace']}/{ref['name']}"
        )

    @property
    def similar_key(self) -> tuple[str, ...]:
        """Everything but the message: what client-go's aggregator groups by."""
        return (self.object_key, self.reporter, self.type, self.reason, self.action)

    @property
    def key(self) -> tuple[str, ...]:
        """What folds into one series: the same Event again, or any combined near-repeat."""
        return (*self.similar_key, COMBINED if self.combined else self.message)


@dataclass(slots=True)
class _Similar:
    """The distinct messages seen for one object and reason since `since`."""

    since: float
    messages: set[str]


@dataclass(slots=True)
class _Series:
    """An Event we created, and how often it happened since."""

    name: str
    namespace: str
    count: int
    last_seen: float


def reference_to(obj: Mapping[str, Any] | Any) -> dict[str, str]:
    """An ObjectReference for `obj` (apiVersion, kind, namespace, name, uid, resourceVersion);
    `obj` is a dict or a typed model (kro.runtime.typed)."""
    if not isinstance(obj, Mapping):
        typed = sys.modules.get("kro.runtime.typed")  # loaded by whoever defined a model
        if typed is None or not isinstance(obj, typed.WireModel):
            raise TypeError(f"an Event must regard an object, not {type(obj).__name__}")
        obj = typed.as_dict(obj)
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


_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def reporting_name(name: str) -> str:
    """`name` as a reporting controller the API server accepts (a qualified name such as
    `example.com/website` or `website`): other characters become `-`, and the part after the
    last `/` is cut to 63 characters."""
    prefix, slash, last = name.rpartition("/")
    last = re.sub(r"[^-A-Za-z0-9_.]", "-", last)[:63].strip("-_.") or "controller"
    if not slash:
        return last
    prefix = re.sub(r"[^-a-z0-9.]", "-", prefix.lower())[:253].strip("-.")
    return f"{prefix}/{last}" if prefix else last


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
        self._similar: OrderedDict[tuple[str, ...], _Similar] = OrderedDict()

    def named(self, reporting_controller: str) -> NamedRecorder:
        """A recorder reporting as `reporting_controller` (made a valid qualified name) through
        this one's buffer, sender and spam filter (controller-runtime's GetEventRecorderFor)."""
        return NamedRecorder(self, reporting_name(reporting_controller))

    def record(
        self,
        regarding: Mapping[str, Any] | Any,
        event_type: EventType,
        reason: str,
        message: str,
        *,
        action: str = "",
    ) -> None:
        """Queue an Event about `regarding` (a dict or a typed model); never raises, never
        blocks. `message` is scrubbed of credentials and cut to `MAX_NOTE_BYTES` here, before
        anything can hold it."""
        self._record(
            regarding,
            event_type,
            reason,
            message,
            action=action,
            reporter=self.options.reporting_controller,
        )

    def _record(
        self,
        regarding: Mapping[str, Any] | Any,
        event_type: EventType,
        reason: str,
        message: str,
        *,
        action: str,
        reporter: str,
    ) -> None:
        try:
            pending = _Pending(
                regarding=reference_to(regarding),
                type=event_type,
                reason=reason,
                message=scrub(message, MAX_NOTE_BYTES),
                action=action or reason,
                at=self._wall(),
                at_mono=self._clock.now(),
                reporter=reporter,
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
        pending = self._aggregate(pending)
        key = pending.key
        series = self._series.get(key)
        window = self.options.series_window_s
        if series is not None and pending.at_mono - series.last_seen <= window:
            series.count += 1
            series.last_seen = pending.at_mono
            self._series.move_to_end(key)
            if self._allow(pending.object_key):
                await self._update(series, pending)
            return
        if not self._allow(pending.object_key):
            log.debug("event.dropped", reason=pending.reason, cause="rate_limited")
            return
        await self._create(key, pending)

    def _aggregate(self, pending: _Pending) -> _Pending:
        """`pending` as it is, or as the combined Event once its object has had
        `aggregate_after` different messages for this reason within the window."""
        opts = self.options
        key = pending.similar_key
        similar = self._similar.get(key)
        if similar is None or pending.at_mono - similar.since > opts.aggregate_window_s:
            similar = self._similar[key] = _Similar(pending.at_mono, set())
        self._similar.move_to_end(key)
        while len(self._similar) > opts.cache_size:
            self._similar.popitem(last=False)
        if pending.message in similar.messages or len(similar.messages) < opts.aggregate_after - 1:
            similar.messages.add(pending.message)
            return pending
        # Every later message of this group is one series: the combined Event's count grows.
        message = scrub(COMBINED + pending.message, MAX_NOTE_BYTES)
        return replace(pending, message=message, combined=True)

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
                "source": {"component": p.reporter},
                "firstTimestamp": _seconds(p.at),
                "lastTimestamp": _seconds(p.at),
                "count": 1,
                "reportingComponent": p.reporter,
                "reportingInstance": opts.reporting_instance,
            }
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": meta,
            "eventTime": _micro(p.at),
            "reportingController": p.reporter,
            "reportingInstance": opts.reporting_instance,
            "action": p.action,
            "reason": p.reason,
            "regarding": p.regarding,
            "note": p.message,
            "type": p.type,
        }


class NamedRecorder:
    """An EventRecorder's view that reports as `reporting_controller` (`EventRecorder.named`):
    the Events go through the parent's buffer, sender and spam filter."""

    __slots__ = ("_parent", "reporting_controller")

    def __init__(self, parent: EventRecorder, reporting_controller: str) -> None:
        self._parent = parent
        self.reporting_controller = reporting_controller

    def record(
        self,
        regarding: Mapping[str, Any] | Any,
        event_type: EventType,
        reason: str,
        message: str,
        *,
        action: str = "",
    ) -> None:
        """`EventRecorder.record`, reported as this view's controller."""
        self._parent._record(
            regarding,
            event_type,
            reason,
            message,
            action=action,
            reporter=self.reporting_controller,
        )

    def __repr__(self) -> str:
        return f"NamedRecorder({self.reporting_controller!r})"
