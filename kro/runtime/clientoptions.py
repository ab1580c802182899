"""kro.runtime.clientoptions: how a `Client` behaves (timeouts, throttling, retries, pools).

Its own module because both halves of the client read it: `client` takes it from the caller and
hands it to `_transport`, which throttles, retries and times out by it. Kept apart, the
transport depends on the options alone, never on the client that owns it. `kro.runtime.client`
re-exports it, where callers have always found it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kro.runtime.clock import Clock
from kro.runtime.errors import TransportError
from kro.runtime.metrics import NOOP, MetricsProvider

__all__ = ["ClientOptions"]


@dataclass(frozen=True, kw_only=True)
class ClientOptions:
    """How the client behaves; defaults follow client-go unless noted.

    qps, burst: client-side token bucket (client-go defaults are 5/10, far too low for a
        controller; kro Go runs 100/150). Watches take one token per (re)connect.
    request_timeout_s: total time for one non-watch request attempt, headers and body.
    connect_timeout_s: TCP + TLS connect, for requests and watches.
    watch_idle_timeout_s: a watch that yields no bytes for this long is treated as dead and
        reconnected by its owner. The API server sends a bookmark about every minute when
        bookmarks are requested, so two minutes of silence means a stalled connection.
    max_retries: retries of 429/503 (honouring Retry-After), and of failed connections for GET.
    max_retry_wait_s: cap on one Retry-After wait, so a server asking for minutes cannot park us.
    user_agent: sent on every request; shows up in audit logs and APF flow schemas.
    metrics: where rest_client_* metrics go (client-go names); the default drops them.
    pool_size: connections for ordinary requests (shared by all concurrent requests).
    watch_pool_size: connections for watches; 0 = unbounded, one per open watch (HTTP/1.1).
    keepalive_timeout_s: idle pooled connections are closed after this long.
    max_line_bytes: the largest watch event accepted (etcd's limit is ~1.5 MiB per object).
    clock: time source for throttling and retry waits; tests pass a FakeClock.
    unanswered: what a request that got no response at all raises, given the transport's
        TransportError once its retries are spent (the error itself, or one that says more: a
        client of many servers names the server, kro.fleet); None raises the error as it is.
    """

    qps: float = 50.0
    burst: int = 100
    request_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    watch_idle_timeout_s: float = 120.0
    max_retries: int = 5
    max_retry_wait_s: float = 30.0
    user_agent: str = "kro-python"
    metrics: MetricsProvider = field(default=NOOP)
    pool_size: int = 64
    watch_pool_size: int = 0
    keepalive_timeout_s: float = 30.0
    max_line_bytes: int = 16 * 2**20
    clock: Clock | None = None
    unanswered: Callable[[TransportError], TransportError] | None = None
