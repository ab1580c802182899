"""Doubles for the kro.dynamic tests: an in-memory list+watch source and a recording handler.

`FakeKube` implements only what kro.runtime.informer.Informer calls (`list_all`, `watch`), so
the real InformerCache and Informer run on it without HTTP. Writes are synchronous and
go to an event log that watches replay from their resourceVersion. `settle(gvr)` waits until
every open watch of `gvr` has handed every logged event to its informer, which has then
dispatched it to all handlers: the barrier that lets a test assert that something was NOT
enqueued without sleeping.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import itertools
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from kro.dynamic import DynamicController, ObjectRef
from kro.runtime.client import WatchEvent
from kro.runtime.errors import Forbidden, NotFound
from kro.runtime.gvk import GVR
from kro.runtime.metrics import Counter as CounterMetric
from kro.runtime.metrics import Gauge, Histogram
from kro.runtime.reconcile import Request, Result
from kro.runtime.workqueue import QueueEmpty, WorkQueue

Obj = dict[str, Any]

CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
WIDGETS = GVR("example.com", "v1", "widgets")


def obj(
    name: str,
    namespace: str = "default",
    *,
    labels: dict[str, str] | None = None,
    spec: Any = None,
    status: Any = None,
) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        meta["labels"] = labels
    out: Obj = {"metadata": meta}
    if spec is not None:
        out["spec"] = spec
    if status is not None:
        out["status"] = status
    return out


class FakeKube:
    """Objects per GVR, one resourceVersion counter, an event log; GVRs not `served` 404,
    `forbidden` ones 403 (as RBAC refuses a list or watch)."""

    def __init__(self, served: Sequence[GVR] = (CONFIGMAPS, SECRETS, WIDGETS)) -> None:
        self.served = set(served)
        self.forbidden: set[GVR] = set()
        self.objects: dict[GVR, dict[tuple[str, str], Obj]] = {g: {} for g in served}
        self.log: list[tuple[int, GVR, str, Obj]] = []
        self.watching: Counter[GVR] = Counter()
        self.lists: Counter[GVR] = Counter()
        self._rv = itertools.count(1)
        self._uid = itertools.count(1)
        self._delivered: dict[int, int] = {}  # watch id -> last rv handed to and processed
        self._watch_gvr: dict[int, GVR] = {}
        self._watch_ids = itertools.count()
        self._tick = asyncio.Event()  # replaced on every change; waiters re-check

    # -- writes (synchronous, like a test's direct API call) ------------------------------------

    def put(self, gvr: GVR, new: Obj) -> Obj:
        """Create or replace; generation is bumped when `spec` changes (as the server does)."""
        new = copy.deepcopy(new)
        meta = new.setdefault("metadata", {})
        key = (meta.get("namespace", ""), meta["name"])
        old = self.objects[gvr].get(key)
        if old is None:
            meta["generation"] = 1
            meta["uid"] = f"uid-{next(self._uid)}"
            kind = "ADDED"
        else:
            generation = old["metadata"]["generation"]
            if new.get("spec") != old.get("spec"):
                generation += 1
            meta["generation"] = generation
            meta["uid"] = old["metadata"]["uid"]
            kind = "MODIFIED"
        meta["resourceVersion"] = str(rv := next(self._rv))
        self.objects[gvr][key] = new
        self.log.append((rv, gvr, kind, copy.deepcopy(new)))
        self._notify()
        return new

    def get(self, gvr: GVR, name: str, namespace: str = "default") -> Obj:
        return copy.deepcopy(self.objects[gvr][(namespace, name)])

    def delete(self, gvr: GVR, name: str, namespace: str = "default") -> None:
        old = self.objects[gvr].pop((namespace, name))
        old["metadata"]["resourceVersion"] = str(rv := next(self._rv))
        self.log.append((rv, gvr, "DELETED", copy.deepcopy(old)))
        self._notify()

    # -- the Client surface the Informer uses ---------------------------------------------------

    async def list_all(self, gvr: GVR, **_: Any) -> tuple[list[Obj], str]:
        self.lists[gvr] += 1
        self._refuse(gvr, "list")
        if gvr not in self.served:
            raise NotFound(status=404, reason="NotFound", message=f"{gvr} is not served")
        items = [copy.deepcopy(o) for o in self.objects[gvr].values()]
        return items, str(self.log[-1][0] if self.log else 0)

    async def watch(
        self, gvr: GVR, *, resource_version: str | None = None, **_: Any
    ) -> AsyncGenerator[WatchEvent, None]:
        self._refuse(gvr, "watch")
        watch_id = next(self._watch_ids)
        position = int(resource_version or 0)
        self.watching[gvr] += 1
        self._watch_gvr[watch_id] = gvr
        self._delivered[watch_id] = position
        try:
            while True:
                await self._wait(functools.partial(self._has_events_after, gvr, position))
                snapshot = list(self.log)
                for rv, g, kind, item in snapshot:
                    if rv <= position or g != gvr:
                        continue
                    yield WatchEvent(kind, copy.deepcopy(item))
                    position = rv  # resumed: the informer finished dispatching the event
                    self._delivered[watch_id] = rv
                    self._notify()
                self._delivered[watch_id] = snapshot[-1][0]
                self._notify()
        finally:
            self.watching[gvr] -= 1
            del self._watch_gvr[watch_id]
            del self._delivered[watch_id]
            self._notify()

    def _refuse(self, gvr: GVR, verb: str) -> None:
        if gvr in self.forbidden:
            plural = gvr.resource if not gvr.group else f"{gvr.resource}.{gvr.group}"
            raise Forbidden(
                status=403,
                reason="Forbidden",
                message=f'{plural} is forbidden: User "kro" cannot {verb} resource '
                f'"{gvr.resource}" in API group "{gvr.group}" at the cluster scope',
            )

    # -- waiting --------------------------------------------------------------------------------

    async def settle(self, gvr: GVR, timeout_s: float = 2.0) -> None:
        """Wait until every open watch of `gvr` has processed every event logged so far."""
        last = max((rv for rv, g, _, _ in self.log if g == gvr), default=0)

        def done() -> bool:
            return all(self._delivered[w] >= last for w, g in self._watch_gvr.items() if g == gvr)

        await asyncio.wait_for(self._wait(done), timeout_s)

    def _has_events_after(self, gvr: GVR, position: int) -> bool:
        return any(rv > position and g == gvr for rv, g, _, _ in self.log)

    def _notify(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    async def _wait(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._tick.wait()


Behaviour = Callable[[Request], Awaitable[Result]]


async def succeed(request: Request) -> Result:
    return Result()


class Recorder:
    """A handler that records calls (and how many run at once per key), then delegates."""

    def __init__(self, behaviour: Behaviour = succeed) -> None:
        self.behaviour = behaviour
        self.calls: list[Request] = []
        self.active: Counter[Request] = Counter()
        self.max_active: Counter[Request] = Counter()
        self._changed = asyncio.Condition()

    async def __call__(self, request: Request) -> Result:
        self.calls.append(request)
        self.active[request] += 1
        self.max_active[request] = max(self.max_active[request], self.active[request])
        async with self._changed:
            self._changed.notify_all()
        try:
            return await self.behaviour(request)
        finally:
            self.active[request] -= 1

    def count(self, request: Request) -> int:
        return sum(1 for c in self.calls if c == request)

    async def wait_for_calls(
        self, count: int, request: Request | None = None, timeout_s: float = 2.0
    ) -> None:
        def enough() -> bool:
            n = len(self.calls) if request is None else self.count(request)
            return n >= count

        async def wait() -> None:
            async with self._changed:
                await self._changed.wait_for(enough)

        await asyncio.wait_for(wait(), timeout_s)


def drain(queue: WorkQueue[ObjectRef]) -> list[ObjectRef]:
    """Take (and finish) everything ready in the queue, in order."""
    items: list[ObjectRef] = []
    while True:
        try:
            item = queue.get_nowait()
        except QueueEmpty:
            return items
        queue.done(item)
        items.append(item)


# -- metrics ------------------------------------------------------------------------------------

MetricKey = tuple[str, frozenset[tuple[str, str]]]


class _Metric:
    def __init__(self, owner: Metrics, name: str) -> None:
        self._owner, self._name = owner, name

    def remove(self, **labels: str) -> None:
        """Drop the recorded series matching `labels`, refusing what PrometheusProvider
        refuses (no labels, or a label the metric was not declared with)."""
        if not labels:
            raise ValueError("remove() needs the labels of the series to remove")
        declared = self._owner.labels[self._name]
        unknown = sorted(set(labels) - set(declared))
        if unknown:
            raise ValueError(f"unknown labels {unknown}; {self._name} has {list(declared)}")
        wanted = labels.items()
        stores: tuple[dict[MetricKey, Any], ...] = (self._owner.values, self._owner.observations)
        for store in stores:
            for key in [k for k in store if k[0] == self._name and dict(k[1]).items() >= wanted]:
                del store[key]

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = (self._name, frozenset(labels.items()))
        self._owner.values[key] = self._owner.values.get(key, 0.0) + amount

    def dec(self, amount: float = 1.0, **labels: str) -> None:
        self.inc(-amount, **labels)

    def set(self, value: float, **labels: str) -> None:
        self._owner.values[(self._name, frozenset(labels.items()))] = value

    def observe(self, value: float, **labels: str) -> None:
        self._owner.observations.setdefault((self._name, frozenset(labels.items())), []).append(
            value
        )


class Metrics:
    """A MetricsProvider that keeps every value and observation, with declared label names;
    `remove` drops them as the real provider drops series."""

    def __init__(self) -> None:
        self.values: dict[MetricKey, float] = {}
        self.observations: dict[MetricKey, list[float]] = {}
        self.labels: dict[str, tuple[str, ...]] = {}

    def _metric(self, name: str, labels: Sequence[str]) -> _Metric:
        self.labels[name] = tuple(labels)
        return _Metric(self, name)

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> CounterMetric:
        return self._metric(name, labels)

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        return self._metric(name, labels)

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] | None = None,
    ) -> Histogram:
        return self._metric(name, labels)

    def value(self, metric: str, /, **labels: str) -> float:
        return self.values.get((metric, frozenset(labels.items())), 0.0)

    def observed(self, metric: str, /, **labels: str) -> list[float]:
        return self.observations.get((metric, frozenset(labels.items())), [])


@asynccontextmanager
async def running(controller: DynamicController) -> AsyncIterator[None]:
    """Run the controller's workers for the duration of the block, then stop gracefully."""
    task = asyncio.create_task(controller.run(), name="dynamic-controller.run")
    try:
        yield
    finally:
        controller.shutdown()
        await asyncio.wait_for(task, 5.0)


MakeController = Callable[..., DynamicController]
"""The `make_controller` fixture: builds a DynamicController on the fake cluster."""
