"""What /metrics must not carry, and what turns it off: no `*_created` series, scrape-time gauges
fed by several sources, and `--metrics-bind-address=0` serving no /metrics at all (also not on
the health probe port)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kro.runtime.manager import Manager, ManagerOptions
from kro.runtime.prometheus import PrometheusProvider


def test_no_created_series() -> None:
    provider = PrometheusProvider()
    provider.counter("things_total", "things", ("kind",)).inc(kind="a")
    provider.histogram("thing_seconds", "durations").observe(0.1)
    text = provider.render().decode()
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert "things_total" in names
    assert "thing_seconds_count" in names
    assert not [n for n in names if n.endswith("_created")]


def test_the_host_applications_own_metrics_keep_their_created_series() -> None:
    """kro.runtime is imported (and a provider rendered) in someone else's process: the host's
    own registry is exported as prometheus_client exports it by default."""
    from prometheus_client import CollectorRegistry, Counter, generate_latest

    host = CollectorRegistry()
    Counter("host_requests_total", "the host's requests", registry=host).inc()
    PrometheusProvider().render()
    names = {
        s.name
        for f in text_string_to_metric_families(generate_latest(host).decode())
        for s in f.samples
    }
    assert "host_requests_created" in names


def test_a_gauge_named_like_a_created_series_is_kept() -> None:
    provider = PrometheusProvider(process_metrics=False)
    provider.gauge("backup_created", "when the last backup was made").set(1700000000)
    assert "backup_created 1.7e+09" in provider.render().decode()


def test_a_counter_started_at_zero_is_exported_before_its_first_increment() -> None:
    provider = PrometheusProvider(process_metrics=False)
    provider.counter("errors_total", "errors", ("reason",)).inc(0, reason="x")
    assert provider.registry.get_sample_value("errors_total", {"reason": "x"}) == 0.0


def test_callback_gauges_merge_their_sources() -> None:
    provider = PrometheusProvider(process_metrics=False)
    provider.callback_gauge("objects", "objects", ("group",), lambda: [({"group": "a"}, 1.0)])
    provider.callback_gauge(
        "objects", "objects", ("group",), lambda: [({"group": "a"}, 2.0), ({"group": "b"}, 5.0)]
    )
    get = provider.registry.get_sample_value
    assert (get("objects", {"group": "a"}), get("objects", {"group": "b"})) == (3.0, 5.0)


def test_a_callback_gauge_name_keeps_its_labels() -> None:
    provider = PrometheusProvider(process_metrics=False)
    provider.callback_gauge("objects", "objects", ("group",), list)
    for labels in (("other",), ()):
        with pytest.raises(ValueError, match="exists as a callback_gauge"):
            provider.callback_gauge("objects", "objects", labels, list)
    with pytest.raises(ValueError, match="exists as a callback_gauge"):
        provider.counter("objects", "objects", ("group",))


async def _status(address: tuple[str, int], path: str) -> int:
    timeout = aiohttp.ClientTimeout(total=5.0)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(f"http://{address[0]}:{address[1]}{path}") as response,
    ):
        return response.status


async def _serve(metrics_bind_address: str) -> dict[str, int]:
    manager = Manager(
        ManagerOptions(
            health_probe_bind_address="127.0.0.1:0",
            metrics_bind_address=metrics_bind_address,
            handle_signals=False,
            gc_tuning=None,
        )
    )
    task = asyncio.create_task(manager.run(), name="test:manager")
    try:
        await asyncio.wait_for(manager.wait_for_serving(), timeout=5)
        return {
            f"{port_index}{path}": await _status(address, path)
            for port_index, address in enumerate(manager.addresses)
            for path in ("/healthz", "/metrics")
        }
    finally:
        manager.stop()
        await asyncio.wait_for(task, timeout=5)


async def test_metrics_bind_address_0_serves_no_metrics_anywhere() -> None:
    assert await _serve("0") == {"0/healthz": 200, "0/metrics": 404}


async def test_metrics_are_served_when_an_address_is_given() -> None:
    assert (await _serve("127.0.0.1:0"))["0/metrics"] == 200
