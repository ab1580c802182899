"""kro.runtime.prometheus: the MetricsProvider that the entry point installs, on prometheus_client.

This is the only kro.runtime module that imports prometheus_client (library code records through
kro.runtime.metrics). Each provider owns its own CollectorRegistry rather than the process-global
one, so two managers, or two tests, never collide; the manager serves `render()` at /metrics.

Asking twice for the same name returns the same metric, because several queues and controllers
share one metric family and tell their series apart by labels; so removing a series through one
of them removes it for all. Asking for the same name with a different type or label set is a
programming error and raises ValueError. Scrape-time gauges (`callback_gauge`) follow the same
rule: a second source for the same name adds its samples to the first one's.

No `*_created` series are exported: prometheus_client adds one per counter, histogram and summary
series by default (the creation time, an OpenMetrics extension), which more than doubled the
number of series on /metrics and that no dashboard or alert uses. A provider leaves them out of
its own `render()` only: prometheus_client's switch (`disable_created_metrics`) is process-wide,
and a library imported into someone else's process must not change how the host's own metrics
are exported. A process that wants them gone everywhere calls `disable_created_series()` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client import Counter as _PromCounter
from prometheus_client import Gauge as _PromGauge
from prometheus_client import Histogram as _PromHistogram
from prometheus_client.core import GaugeMetricFamily, Metric

from .metrics import Counter, Gauge, Histogram, Sample

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

_TIMED_TYPES: Final = frozenset({"counter", "histogram", "summary", "gaugehistogram"})


def disable_created_series() -> None:
    """Stop prometheus_client exporting `*_created` series for the whole process, the host's
    own metrics included: an explicit choice of the program's entry point, never of an import."""
    disable_created_metrics()  # type: ignore[no-untyped-call]


class _WithoutCreated:
    """The registry as /metrics should show it: each family without its `<name>_created`
    samples (only those of counters, histograms and summaries: a gauge may be named so)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        for family in self._registry.collect():
            if family.type in _TIMED_TYPES:
                created = family.name + "_created"
                family.samples = [s for s in family.samples if s.name != created]
            yield family


class _Adapter:
    """Maps our `**labels` calls onto prometheus_client children, caching children per label set.

    The cache matters: `.labels()` takes a lock and rebuilds a tuple on every call, and the work
    queue records several metrics per item. The prometheus_client family stays private, so every
    removal goes through `remove`, which keeps the cache in step with the family.
    """

    def __init__(self, metric: Any, labelnames: tuple[str, ...]) -> None:
        self._metric = metric
        self._labelnames = labelnames
        self._children: dict[tuple[tuple[str, str], ...], Any] = {}

    def _child(self, labels: dict[str, str]) -> Any:
        if not labels:
            return self._metric
        key = tuple(labels.items())
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._metric.labels(**labels)
        return child

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self._child(labels).inc(amount)

    def dec(self, amount: float = 1.0, **labels: str) -> None:
        self._child(labels).dec(amount)

    def set(self, value: float, **labels: str) -> None:
        self._child(labels).set(value)

    def observe(self, value: float, **labels: str) -> None:
        self._child(labels).observe(value)

    def remove(self, **labels: str) -> None:
        """Remove the series matching `labels` (see kro.runtime.metrics.Removable).

        The cached children of those series go too: a cached child outlives its removal from
        the family, and recording on it afterwards would never show on /metrics again.
        """
        if not labels:
            raise ValueError("remove() needs the labels of the series to remove")
        unknown = sorted(set(labels) - set(self._labelnames))
        if unknown:
            raise ValueError(f"unknown labels {unknown}; the metric has {list(self._labelnames)}")
        self._metric.remove_by_labels(labels)
        wanted = labels.items()
        for key in [key for key in self._children if dict(key).items() >= wanted]:
            del self._children[key]


class _CallbackCollector:
    """A prometheus_client collector that asks its sources for samples at scrape time.

    Several sources may feed one family (two owners of one provider, e.g. two apps in a test);
    a label set that more than one source yields is summed, since sources of one family are
    meant to partition its series (counts per RGD, per instance).
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labels: tuple[str, ...],
        collect: Callable[[], Iterable[Sample]],
    ) -> None:
        self._name, self._documentation, self._labels = name, documentation, labels
        self.sources: list[Callable[[], Iterable[Sample]]] = [collect]

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(self._name, self._documentation, labels=self._labels)]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self._name, self._documentation, labels=self._labels)
        if len(self.sources) == 1:
            for labels, value in self.sources[0]():
                family.add_metric([labels.get(name, "") for name in self._labels], value)
            yield family
            return
        merged: dict[tuple[str, ...], float] = {}
        for source in self.sources:
            for labels, value in source():
                key = tuple(labels.get(name, "") for name in self._labels)
                merged[key] = merged.get(key, 0.0) + value
        for key, value in merged.items():
            family.add_metric(list(key), value)
        yield family


class PrometheusProvider:
    """A MetricsProvider backed by one prometheus_client CollectorRegistry.

    process_metrics: also export process_*, python_info and python_gc_* like the default
    registry does (only when we create the registry).
    """

    def __init__(
        self, registry: CollectorRegistry | None = None, *, process_metrics: bool = True
    ) -> None:
        if registry is None:
            registry = CollectorRegistry()
            if process_metrics:
                ProcessCollector(registry=registry)
                PlatformCollector(registry=registry)
                GCCollector(registry=registry)
        self.registry = registry
        self._metrics: dict[str, tuple[str, tuple[str, ...], _Adapter]] = {}
        self._callbacks: dict[str, _CallbackCollector] = {}

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        return self._get(
            "counter",
            name,
            labels,
            lambda ln: _PromCounter(name, documentation, ln, registry=self.registry),
        )

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        return self._get(
            "gauge",
            name,
            labels,
            lambda ln: _PromGauge(name, documentation, ln, registry=self.registry),
        )

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] | None = None,
    ) -> Histogram:
        def make(ln: tuple[str, ...]) -> Any:
            if buckets is None:
                return _PromHistogram(name, documentation, ln, registry=self.registry)
            return _PromHistogram(name, documentation, ln, registry=self.registry, buckets=buckets)

        return self._get("histogram", name, labels, make)

    def callback_gauge(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str],
        collect: Callable[[], Iterable[Sample]],
    ) -> None:
        """A gauge whose samples `collect` computes at every scrape (CallbackGaugeProvider).

        The same name again (same labels) adds `collect` as another source of that gauge; a
        name used by another kind of metric, or with other labels, raises ValueError.
        """
        labelnames = tuple(labels)
        known = self._metrics.get(name)
        if known is not None:
            if known[:2] != ("callback_gauge", labelnames):
                raise ValueError(
                    f"metric {name} exists as a {known[0]} with labels {known[1]}; "
                    f"asked for a callback_gauge with labels {labelnames}"
                )
            self._callbacks[name].sources.append(collect)
            return
        collector = _CallbackCollector(name, documentation, labelnames, collect)
        self.registry.register(collector)
        self._callbacks[name] = collector
        self._metrics[name] = ("callback_gauge", labelnames, _Adapter(None, labelnames))

    def render(self) -> bytes:
        """The registry in Prometheus text exposition format (serve with CONTENT_TYPE), without
        `*_created` series (module docstring)."""
        return generate_latest(_WithoutCreated(self.registry))

    def _get(
        self, kind: str, name: str, labels: Sequence[str], make: Callable[[tuple[str, ...]], Any]
    ) -> _Adapter:
        labelnames = tuple(labels)
        known = self._metrics.get(name)
        if known is not None:
            known_kind, known_labels, adapter = known
            if (known_kind, known_labels) != (kind, labelnames):
                raise ValueError(
                    f"metric {name} exists as a {known_kind} with labels {known_labels}; "
                    f"asked for a {kind} with labels {labelnames}"
                )
            return adapter
        adapter = _Adapter(make(labelnames), labelnames)
        self._metrics[name] = (kind, labelnames, adapter)
        return adapter
