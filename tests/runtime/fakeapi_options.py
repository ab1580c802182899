"""Client options for tests against the in-process fake API server."""

from __future__ import annotations

from kro.runtime.client import ClientOptions

FAST = ClientOptions(
    qps=0,  # unthrottled unless a test is about throttling
    request_timeout_s=5.0,
    connect_timeout_s=2.0,
    watch_idle_timeout_s=5.0,
    max_retry_wait_s=0.01,
)
