"""In-memory doubles for the control-half tests: a recording metrics provider and a tiny API.

`FakeKubeClient` implements only what leader election and the event recorder call (get, create,
update, patch) with real resourceVersion semantics (Conflict on a stale one), plus fault
injection: queue an exception for the next call of a verb, or make a verb hang.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kro.runtime.errors import AlreadyExists, Conflict, NotFound
from kro.runtime.gvk import GVR
from kro.runtime.metrics import Counter, Gauge, Histogram

Key = tuple[str, frozenset[tuple[str, str]]]


async def yield_until(predicate: Callable[[], bool], max_yields: int = 10_000) -> None:
    """Let the loop run until `predicate` holds; fail after `max_yields` turns (no wall time)."""
    for _ in range(max_yields):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


def remove_series(
    stores: Sequence[dict[Key, Any]], name: str, declared: Sequence[str], labels: Mapping[str, str]
) -> None:
    """What PrometheusProvider's `remove(**labels)` does, on recorded values: drop every key of
    metric `name` whose labels include `labels`, and refuse what it refuses."""
    if not labels:
        raise ValueError("remove() needs the labels of the series to remove")
    unknown = sorted(set(labels) - set(declared))
    if unknown:
        raise ValueError(f"unknown labels {unknown}; {name} has {list(declared)}")
    wanted = labels.items()
    for store in stores:
        for key in [k for k in store if k[0] == name and dict(k[1]).items() >= wanted]:
            del store[key]


class _Metric:
    def __init__(self, owner: RecordingMetrics, name: str, labels: Sequence[str]) -> None:
        self._owner = owner
        self._name = name
        self._labels = tuple(labels)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = (self._name, frozenset(labels.items()))
        self._owner.values[key] = self._owner.values.get(key, 0.0) + amount

    def dec(self, amount: float = 1.0, **labels: str) -> None:
        self.inc(-amount, **labels)

    def set(self, value: float, **labels: str) -> None:
        self._owner.values[(self._name, frozenset(labels.items()))] = value

    def observe(self, value: float, **labels: str) -> None:
        key = (self._name, frozenset(labels.items()))
        self._owner.observations.setdefault(key, []).append(value)

    def remove(self, **labels: str) -> None:
        owner = self._owner
        remove_series([owner.values, owner.observations], self._name, self._labels, labels)


class RecordingMetrics:
    """A MetricsProvider that keeps every value and observation for assertions; `remove`
    drops them as the real provider drops series."""

    def __init__(self) -> None:
        self.values: dict[Key, float] = {}
        self.observations: dict[Key, list[float]] = {}
        self.names: set[str] = set()

    def _metric(self, name: str, labels: Sequence[str]) -> _Metric:
        self.names.add(name)
        return _Metric(self, name, labels)

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
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


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, Mapping) and isinstance(target.get(k), dict):
            _merge(target[k], v)
        else:
            target[k] = copy.deepcopy(v)


class FakeKubeClient:
    """Objects keyed by (gvr, namespace, name) with a global resourceVersion counter."""

    def __init__(self) -> None:
        self.objects: dict[tuple[GVR, str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str]] = []  # (verb, resource, name)
        self.failures: dict[str, list[BaseException]] = {}
        self.hang: set[str] = set()
        self._rv = itertools.count(1)
        self._uid = itertools.count(1)
        self._changed = asyncio.Condition()

    # -- fault injection and waiting -----------------------------------------------------------

    def fail_next(self, verb: str, error: BaseException) -> None:
        self.failures.setdefault(verb, []).append(error)

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until `predicate` holds after some call (wrap in a deadline)."""
        async with self._changed:
            await self._changed.wait_for(predicate)

    def stored(self, gvr: GVR, namespace: str, name: str) -> dict[str, Any]:
        return self.objects[(gvr, namespace, name)]

    def put(self, gvr: GVR, obj: dict[str, Any]) -> dict[str, Any]:
        """Seed an object directly (no call recorded)."""
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(self._rv))
        self.objects[(gvr, meta.get("namespace", ""), meta["name"])] = copy.deepcopy(obj)
        return obj

    # -- the client API ------------------------------------------------------------------------

    async def get(self, gvr: GVR, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        await self._enter("get", gvr, name)
        try:
            return copy.deepcopy(self.objects[(gvr, namespace or "", name)])
        except KeyError:
            raise NotFound(status=404, reason="NotFound", message=f"{name} not found") from None
        finally:
            await self._notify()

    async def create(
        self,
        gvr: GVR,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        new = copy.deepcopy(dict(obj))
        meta = new.setdefault("metadata", {})
        await self._enter("create", gvr, meta.get("name", ""))
        try:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = f"{meta['generateName']}{next(self._uid):05d}"
            key = (gvr, namespace or meta.get("namespace", ""), meta["name"])
            if key in self.objects:
                raise AlreadyExists(status=409, reason="AlreadyExists", message="exists")
            meta["resourceVersion"] = str(next(self._rv))
            meta["uid"] = f"uid-{next(self._uid)}"
            self.objects[key] = new
            return copy.deepcopy(new)
        finally:
            await self._notify()

    async def update(
        self,
        gvr: GVR,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        new = copy.deepcopy(dict(obj))
        meta = new.setdefault("metadata", {})
        await self._enter("update", gvr, meta.get("name", ""))
        try:
            key = (gvr, namespace or meta.get("namespace", ""), meta["name"])
            current = self.objects.get(key)
            if current is None:
                raise NotFound(status=404, reason="NotFound", message="not found")
            rv = meta.get("resourceVersion")
            if rv and rv != current["metadata"]["resourceVersion"]:
                raise Conflict(status=409, reason="Conflict", message="stale resourceVersion")
            meta["resourceVersion"] = str(next(self._rv))
            self.objects[key] = new
            return copy.deepcopy(new)
        finally:
            await self._notify()

    async def patch(
        self,
        gvr: GVR,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        await self._enter("patch", gvr, name)
        try:
            key = (gvr, namespace or "", name)
            current = self.objects.get(key)
            if current is None:
                raise NotFound(status=404, reason="NotFound", message="not found")
            _merge(current, patch)
            current["metadata"]["resourceVersion"] = str(next(self._rv))
            return copy.deepcopy(current)
        finally:
            await self._notify()

    # -- internals -----------------------------------------------------------------------------

    async def _enter(self, verb: str, gvr: GVR, name: str) -> None:
        self.calls.append((verb, gvr.resource, name))
        if verb in self.hang:
            await self._notify()
            await asyncio.get_running_loop().create_future()  # until cancelled
        queued = self.failures.get(verb)
        if queued:
            error = queued.pop(0)
            await self._notify()
            raise error

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()
