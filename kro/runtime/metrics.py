"""kro.runtime.metrics: the metrics provider seam.

Library code below the entry point records metrics through a `MetricsProvider` so that it never
imports prometheus_client itself (client-go's pattern). The default provider does nothing; the
entry point (a manager, `kro controller`) installs `kro.runtime.prometheus.PrometheusProvider`.

Metric names are chosen by the caller and copy client-go / controller-runtime / upstream kro
exactly; this module only carries them.

Series labelled by something that comes and goes (an RGD, a generated kind, a watched GVR) are
removed with `remove(**labels)` when it goes, as client-go's `DeleteLabelValues` /
`DeletePartialMatch` and prometheus_client's `remove` / `remove_by_labels` do: otherwise every
RGD ever created would keep its series on /metrics until the process exits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable


class Removable(Protocol):
    """A labelled metric whose series can be removed."""

    def remove(self, **labels: str) -> None:
        """Remove every series whose labels include all of `labels` (an exact series when
        every label is given; no such series: nothing happens). Recording on a removed
        series afterwards starts it again from zero.

        Raises ValueError when `labels` is empty or names a label the metric was not created
        with (the no-op provider checks nothing): removing everything, or nothing because of a
        typo, is never what the caller meant.
        """
        ...


class Counter(Removable, Protocol):
    """A monotonically increasing value, optionally split by labels."""

    def inc(self, amount: float = 1.0, **labels: str) -> None: ...


class Gauge(Removable, Protocol):
    """A value that goes up and down, optionally split by labels."""

    def set(self, value: float, **labels: str) -> None: ...

    def inc(self, amount: float = 1.0, **labels: str) -> None: ...

    def dec(self, amount: float = 1.0, **labels: str) -> None: ...


class Histogram(Removable, Protocol):
    """A distribution of observations (durations in seconds, sizes)."""

    def observe(self, value: float, **labels: str) -> None: ...


class MetricsProvider(Protocol):
    """Creates named metrics. Asking twice for the same name returns the same metric."""

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter: ...

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge: ...

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] | None = None,
    ) -> Histogram: ...


class _NoopMetric:
    def inc(self, amount: float = 1.0, **labels: str) -> None:
        return None

    def dec(self, amount: float = 1.0, **labels: str) -> None:
        return None

    def set(self, value: float, **labels: str) -> None:
        return None

    def observe(self, value: float, **labels: str) -> None:
        return None

    def remove(self, **labels: str) -> None:
        return None


class NoopProvider:
    """The default: every metric accepts observations and removals and drops them."""

    _metric = _NoopMetric()

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        return self._metric

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        return self._metric

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] | None = None,
    ) -> Histogram:
        return self._metric


NOOP: MetricsProvider = NoopProvider()


Sample = tuple[Mapping[str, str], float]
"""One gauge sample: its label values and its value."""


@runtime_checkable
class CallbackGaugeProvider(Protocol):
    """A provider that can compute a gauge at scrape time (a custom collector).

    For values that are a function of time, like "seconds since a condition's last
    transition", or cheap to read from state kept anyway (objects per state): computing them
    when scraped keeps them exact without a ticking task, and a series disappears as soon as
    `collect` stops yielding it. A second `callback_gauge` call for the same name adds another
    source to that gauge; its samples are exported beside (and, for the same labels, summed
    with) the first one's.
    """

    def callback_gauge(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str],
        collect: Callable[[], Iterable[Sample]],
    ) -> None: ...
