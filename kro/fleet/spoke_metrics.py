"""kro.fleet.spoke_metrics: what the members' spokes record, exported beside the hub's (M-21).

With hub and spokes, the hub runs per member a spoke of its own (kro.controllers.spokes): a
DynamicController (queue, workers, informers) and InstanceControllers over the member's client.
They record the very families the hub's controllers do, under upstream's names and label sets.
Prometheus allows one label set per family, and the provider one registration per name
(kro.runtime.prometheus: asking again for a name returns the same metric; other labels raise).
A `cluster` label on upstream's families would break every dashboard built for them, and a
registry per spoke would export each family twice. So a spoke records through a
`SpokeProvider`, the hub's provider with these rules:

* counters and histograms are the hub's own: a spoke's reconciles, errors, requeues, CEL and
  node evaluations add to them, so instance counts and durations aggregate over the fleet
  under upstream's names (the member's requests are told apart by `kro_cluster_requests_total`);
* the workqueue families (`workqueue_*`, whose `name` label is the queue's) get series of the
  spoke's own: its queue is `dynamic-controller-queue/<cluster>`, so an SRE sees each member's
  depth, latency, retries and stuck work;
* a gauge that holds one absolute value of one controller (`dynamic_controller_queue_length`,
  `dynamic_controller_watch_count`, `dynamic_controller_gvr_count`, the per-GVR watch gauges)
  is not recorded: a spoke setting it would overwrite the hub's value. Per member,
  `workqueue_depth` and `kro_cluster_watch_count` tell the same;
* scrape-time gauges (`instances_by_state`) are summed over the hub and every spoke: the
  spokes' samples are one more source of the hub's gauge (kro.runtime.metrics);
* removals of shared series are the hub's to make: a spoke stops serving a kind when the hub
  does, or when its member leaves, and then the fleet's series must stay. Only the spoke's own
  queue series go with its member (`SpokeMetrics.forget`).

A spoke replaced by a new one of the same member (a rotated credential) records nothing more;
the new one continues the member's series.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from kro.runtime.metrics import (
    NOOP,
    CallbackGaugeProvider,
    Counter,
    Gauge,
    Histogram,
    MetricsProvider,
    Removable,
    Sample,
)

__all__ = ["QUEUE_FAMILIES", "SpokeMetrics", "SpokeProvider", "spoke_queue"]

QUEUE_FAMILIES: Final = "workqueue_"
"""The prefix of the families whose `name` label names a queue (kro.runtime.workqueue)."""
QUEUE_LABEL: Final = "name"


def spoke_queue(queue: str, cluster: str) -> str:
    """The `name` label of a spoke's queue: `dynamic-controller-queue/member-1`."""
    return f"{queue}/{cluster}"


class _Series:
    """One family as a spoke records it: the hub's metric, queue names relabelled for `own`
    families, removals left to the hub for shared ones, nothing once the spoke is replaced."""

    def __init__(self, metric: Any, spoke: SpokeProvider, *, own: bool) -> None:
        self._metric = metric  # the hub's Counter, Gauge or Histogram: called as its kind is
        self._spoke = spoke
        self._own = own

    def _labels(self, labels: dict[str, str]) -> dict[str, str]:
        if self._own and QUEUE_LABEL in labels:
            value = spoke_queue(labels[QUEUE_LABEL], self._spoke.cluster)
            labels = {**labels, QUEUE_LABEL: value}
            self._spoke.owned(self._metric, value)
        return labels

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        if self._spoke.live:
            self._metric.inc(amount, **self._labels(labels))

    def dec(self, amount: float = 1.0, **labels: str) -> None:
        if self._spoke.live:
            self._metric.dec(amount, **self._labels(labels))

    def set(self, value: float, **labels: str) -> None:
        if self._spoke.live:
            self._metric.set(value, **self._labels(labels))

    def observe(self, value: float, **labels: str) -> None:
        if self._spoke.live:
            self._metric.observe(value, **self._labels(labels))

    def remove(self, **labels: str) -> None:
        if self._own and self._spoke.live:
            self._metric.remove(**self._labels(labels))


class SpokeProvider:
    """The provider one spoke records through (module docstring). Made by `SpokeMetrics`."""

    def __init__(self, owner: SpokeMetrics, hub: MetricsProvider, cluster: str) -> None:
        self._owner = owner
        self._hub = hub
        self.cluster = cluster
        self.live = True
        """False once a newer spoke of the member (or its removal) took over."""
        self._callbacks: dict[str, Callable[[], Iterable[Sample]]] = {}

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        metric = self._hub.counter(name, documentation, labels)
        return _Series(metric, self, own=_queue_family(name, labels))

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        metric = self._hub.gauge(name, documentation, labels)
        if not _queue_family(name, labels):  # one controller's absolute state: not recorded
            return NOOP.gauge(name, documentation, labels)
        return _Series(metric, self, own=True)

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] | None = None,
    ) -> Histogram:
        metric = self._hub.histogram(name, documentation, labels, buckets)
        return _Series(metric, self, own=_queue_family(name, labels))

    def callback_gauge(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str],
        collect: Callable[[], Iterable[Sample]],
    ) -> None:
        """The spoke's samples of a scrape-time gauge, added to the hub's (module docstring);
        a second call for the name replaces the first (a spoke's metrics built again)."""
        self._callbacks[name] = collect
        self._owner.summed(name, documentation, labels)

    def samples(self, name: str) -> Iterable[Sample]:
        collect = self._callbacks.get(name)
        return collect() if collect is not None and self.live else ()

    def owned(self, metric: Removable, value: str) -> None:
        self._owner.owned(self.cluster, metric, value)


class SpokeMetrics:
    """The members' spokes' providers over the hub's (module docstring), one live per member."""

    def __init__(self, hub: MetricsProvider) -> None:
        self._hub = hub
        self._spokes: dict[str, SpokeProvider] = {}
        self._summed: set[str] = set()
        self._owned: dict[str, dict[tuple[int, str], tuple[Removable, str]]] = {}

    def provider(self, cluster: str) -> SpokeProvider:
        """The provider of a new spoke of `cluster`; the member's previous one records no more."""
        previous = self._spokes.get(cluster)
        if previous is not None:
            previous.live = False
        provider = self._spokes[cluster] = SpokeProvider(self, self._hub, cluster)
        return provider

    def forget(self, cluster: str) -> None:
        """The member left: its spoke records no more and its own queue series go."""
        provider = self._spokes.pop(cluster, None)
        if provider is not None:
            provider.live = False
        for metric, value in (self._owned.pop(cluster, None) or {}).values():
            metric.remove(**{QUEUE_LABEL: value})

    def summed(self, name: str, documentation: str, labels: Sequence[str]) -> None:
        """Have the hub's gauge `name` add every live spoke's samples (once per name)."""
        if name in self._summed or not isinstance(self._hub, CallbackGaugeProvider):
            return
        self._summed.add(name)
        self._hub.callback_gauge(name, documentation, labels, lambda: self._samples(name, labels))

    def owned(self, cluster: str, metric: Removable, value: str) -> None:
        self._owned.setdefault(cluster, {})[(id(metric), value)] = (metric, value)

    def _samples(self, name: str, labels: Sequence[str]) -> Iterator[Sample]:
        """Every live spoke's samples of `name`, summed per label set (one source of the hub's
        gauge must not yield a label set twice)."""
        merged: dict[tuple[str, ...], float] = {}
        for provider in list(self._spokes.values()):
            for found, value in provider.samples(name):
                key = tuple(found.get(label, "") for label in labels)
                merged[key] = merged.get(key, 0.0) + value
        for key, value in merged.items():
            yield dict(zip(labels, key, strict=True)), value


def _queue_family(name: str, labels: Sequence[str]) -> bool:
    return name.startswith(QUEUE_FAMILIES) and QUEUE_LABEL in labels
