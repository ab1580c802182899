"""kro.fleet.metrics: the fleet's metrics (M-06), recorded through the hub's provider.

`kro_cluster_ready{cluster}` is 1 while a member answers its probe, 0 otherwise (refused,
unreachable, forbidden, not probed yet); the hub's local name is always 1.
`kro_cluster_requests_total{cluster,method,code}` counts each member client's requests.
`kro_cluster_watch_count{cluster}` is upstream's `dynamic_controller_watch_count` ("active
informers") per cluster, computed at scrape time by whoever holds them (`count_watches`): for a
member, the informers kro keeps open against it (its spoke's, its owners' member watches); for
the hub's local name, the hub's own cache. Every registered member has a series from the
start, 0 while nothing watches it, and none once it is gone.

The second needs no change to kro.runtime: a member's client gets its own provider
(`member_provider`) that hands the transport the hub's metrics unchanged, except that
`rest_client_requests_total` also counts into `kro_cluster_requests_total` under the member's
name. The transport's own series are labelled by host, which says nothing about which Secret
a request served, and two members may share a host (two ServiceAccounts of one cluster).
Both families are removed with the member, so a churning fleet does not grow /metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from kro.runtime.metrics import (
    CallbackGaugeProvider,
    Counter,
    Gauge,
    Histogram,
    MetricsProvider,
    Sample,
)

REST_REQUESTS: Final = "rest_client_requests_total"
"""The transport's per-request counter (kro.runtime._transport), relabelled per member."""


class FleetMetrics:
    """The two families, created once per provider (providers return the same metric for the
    same name, so several registries may share one)."""

    def __init__(self, provider: MetricsProvider) -> None:
        self.provider = provider
        self.ready: Gauge = provider.gauge(
            "kro_cluster_ready",
            "1 when the member cluster answers its probe (/version and discovery), else 0.",
            ("cluster",),
        )
        self.requests: Counter = provider.counter(
            "kro_cluster_requests_total",
            "Requests kro sent to a member cluster, by method and HTTP status code.",
            ("cluster", "method", "code"),
        )

    def count_watches(
        self, names: Callable[[], Iterable[str]], count: Callable[[str], int]
    ) -> None:
        """Export `kro_cluster_watch_count`: `count(cluster)` for each of `names()`, read at
        every scrape (nothing with a provider that cannot compute gauges when scraped)."""
        if not isinstance(self.provider, CallbackGaugeProvider):
            return

        def samples() -> Iterator[Sample]:
            for cluster in names():
                yield {"cluster": cluster}, float(count(cluster))

        self.provider.callback_gauge(
            "kro_cluster_watch_count",
            "Number of active informers kro holds on each cluster (dynamic_controller_watch_count "
            "per cluster).",
            ("cluster",),
            samples,
        )

    def set_ready(self, cluster: str, ready: bool) -> None:
        self.ready.set(1.0 if ready else 0.0, cluster=cluster)

    def forget(self, cluster: str) -> None:
        """The member is gone: drop its series."""
        self.ready.remove(cluster=cluster)
        self.requests.remove(cluster=cluster)

    def member_provider(
        self, cluster: str, answered: Callable[[str], None] | None = None
    ) -> MetricsProvider:
        """The provider a member's client records into (module docstring); `answered(code)`
        hears the outcome of each of its requests (the registry's passive health)."""
        return _MemberProvider(self.provider, cluster, self.requests, answered)


class _MemberProvider:
    """The hub's provider, with `rest_client_requests_total` also counted per cluster."""

    def __init__(
        self,
        hub: MetricsProvider,
        cluster: str,
        requests: Counter,
        answered: Callable[[str], None] | None = None,
    ) -> None:
        self._hub = hub
        self._cluster = cluster
        self._requests = requests
        self._answered = answered

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        counter = self._hub.counter(name, documentation, labels)
        if name != REST_REQUESTS:
            return counter
        return _RequestCounter(counter, self._requests, self._cluster, self._answered)

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        return self._hub.gauge(name, documentation, labels)

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] | None = None,
    ) -> Histogram:
        return self._hub.histogram(name, documentation, labels, buckets)


class _RequestCounter:
    """Counts into the transport's counter and into the member's `kro_cluster_requests_total`."""

    def __init__(
        self,
        rest: Counter,
        requests: Counter,
        cluster: str,
        answered: Callable[[str], None] | None = None,
    ) -> None:
        self._rest = rest
        self._requests = requests
        self._cluster = cluster
        self._answered = answered

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self._rest.inc(amount, **labels)
        if self._answered is not None:
            self._answered(labels.get("code", ""))
        self._requests.inc(
            amount,
            cluster=self._cluster,
            method=labels.get("method", ""),
            code=labels.get("code", ""),
        )

    def remove(self, **labels: str) -> None:
        self._rest.remove(**labels)
