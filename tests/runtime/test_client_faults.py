"""Client under failure: retries (429/503, Retry-After), re-authentication, transport errors,
timeouts, metrics, and the separation of the watch and request connection pools."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from fakeapi_options import FAST

from kro.runtime.client import Client, ClientOptions
from kro.runtime.clock import FakeClock
from kro.runtime.config import ConnectionConfig
from kro.runtime.errors import (
    InternalError,
    KubeError,
    RequestTimeout,
    TooManyRequests,
    TransportError,
    Unauthorized,
)
from kro.runtime.gvk import GVR
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")


class Recorder:
    """A MetricsProvider keeping counters and observations by (name, labels)."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        self.observed: dict[tuple[str, frozenset[tuple[str, str]]], list[float]] = {}

    def _metric(self, name: str) -> Any:
        rec = self

        class Metric:
            def inc(self, amount: float = 1.0, **labels: str) -> None:
                key = (name, frozenset(labels.items()))
                rec.values[key] = rec.values.get(key, 0.0) + amount

            def observe(self, value: float, **labels: str) -> None:
                rec.observed.setdefault((name, frozenset(labels.items())), []).append(value)

            def set(self, value: float, **labels: str) -> None:
                rec.values[(name, frozenset(labels.items()))] = value

            def dec(self, amount: float = 1.0, **labels: str) -> None:
                self.inc(-amount, **labels)

        return Metric()

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Any:
        return self._metric(name)

    gauge = counter

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] | None = None,
    ) -> Any:
        return self._metric(name)

    def value(self, name: str, **labels: str) -> float:
        return self.values.get((name, frozenset(labels.items())), 0.0)

    def observations(self, name: str, **labels: str) -> list[float]:
        return self.observed.get((name, frozenset(labels.items())), [])


def make_client(api: FakeApiServer, **options: Any) -> Client:
    return Client.from_config(
        ConnectionConfig(server=api.url), dataclasses.replace(FAST, **options)
    )


def seed(api: FakeApiServer) -> None:
    api.seed(CM, {"metadata": {"name": "a", "namespace": "default"}, "data": {"x": "1"}})


async def test_429_waits_for_retry_after_on_the_clock_then_succeeds(
    fake_api: FakeApiServer,
) -> None:
    seed(fake_api)
    clock = FakeClock()
    fake_api.inject(Fault("status", status=429, headers={"Retry-After": "3"}, body="slow down"))
    async with make_client(fake_api, clock=clock, max_retry_wait_s=30.0) as client:
        task = asyncio.create_task(client.get(CM, "a", namespace="default"))
        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
        assert clock.next_deadline == pytest.approx(3.0)
        await clock.advance(3.0)
        result = await asyncio.wait_for(task, timeout=5)
    assert result["data"] == {"x": "1"}
    assert len(fake_api.requests) == 2


async def test_retry_after_is_capped_by_max_retry_wait(fake_api: FakeApiServer) -> None:
    seed(fake_api)
    clock = FakeClock()
    fake_api.inject(Fault("status", status=429, headers={"Retry-After": "600"}))
    async with make_client(fake_api, clock=clock, max_retry_wait_s=5.0) as client:
        task = asyncio.create_task(client.get(CM, "a", namespace="default"))
        await asyncio.wait_for(clock.wait_for_sleepers(1), timeout=5)
        assert clock.next_deadline == pytest.approx(5.0)
        await clock.advance(5.0)
        await asyncio.wait_for(task, timeout=5)


async def test_429_gives_up_after_max_retries(fake_api: FakeApiServer) -> None:
    seed(fake_api)
    fake_api.inject(Fault("status", status=429, times=10, headers={"Retry-After": "1"}))
    async with make_client(fake_api, max_retries=2) as client:
        with pytest.raises(TooManyRequests) as info:
            await client.get(CM, "a", namespace="default")
    assert info.value.retry_after_s == 1.0
    assert len(fake_api.requests) == 3


async def test_503_without_retry_after_is_retried(fake_api: FakeApiServer) -> None:
    seed(fake_api)
    fake_api.inject(Fault("status", status=503, body="apiserver is restarting"))
    async with make_client(fake_api) as client:
        assert (await client.get(CM, "a", namespace="default"))["data"] == {"x": "1"}


async def test_500_with_text_body_is_not_retried_and_keeps_the_text(
    fake_api: FakeApiServer,
) -> None:
    fake_api.inject(Fault("status", status=500, body="x" * 5000))
    async with make_client(fake_api) as client:
        with pytest.raises(InternalError) as info:
            await client.get(CM, "a", namespace="default")
    assert info.value.status == 500
    assert info.value.message.startswith("xxx")
    assert len(info.value.message) < 1100  # truncated
    assert len(fake_api.requests) == 1


async def test_writes_are_retried_on_429_too(fake_api: FakeApiServer) -> None:
    fake_api.inject(Fault("status", method="POST", status=429, headers={"Retry-After": "0"}))
    async with make_client(fake_api) as client:
        await client.create(CM, {"metadata": {"name": "a", "namespace": "default"}})
    assert fake_api.object(CM, "a", "default") is not None


class RotatingAuth:
    """Hands out t1 until invalidated, then t2; counts invalidations."""

    def __init__(self) -> None:
        self.tokens = ["t1", "t2"]
        self.invalidations = 0

    async def authorization(self) -> str | None:
        return f"Bearer {self.tokens[0]}"

    def invalidate(self) -> None:
        self.invalidations += 1
        if len(self.tokens) > 1:
            self.tokens.pop(0)


async def test_401_refreshes_credentials_once_and_retries() -> None:
    auth = RotatingAuth()
    async with FakeApiServer(tokens={"t2"}) as api:
        config = ConnectionConfig(server=api.url, auth=auth)
        async with Client.from_config(config, FAST) as client:
            assert await client.request("GET", "/version")
    assert auth.invalidations == 1
    assert [r.headers["authorization"] for r in api.requests] == ["Bearer t1", "Bearer t2"]


async def test_401_after_refresh_raises_unauthorized() -> None:
    auth = RotatingAuth()
    async with FakeApiServer(tokens={"other"}) as api:
        config = ConnectionConfig(server=api.url, auth=auth)
        async with Client.from_config(config, FAST) as client:
            with pytest.raises(Unauthorized):
                await client.request("GET", "/version")
    assert auth.invalidations == 1


async def test_connection_refused_is_a_transport_error_retried_for_get() -> None:
    async with FakeApiServer() as api:
        url = api.url
    metrics = Recorder()
    config = ConnectionConfig(server=url)
    async with Client.from_config(config, dataclasses.replace(FAST, metrics=metrics)) as client:
        with pytest.raises(TransportError):
            await client.get(CM, "a", namespace="default")
    host = url.removeprefix("http://")
    assert metrics.value("rest_client_requests_total", code="<error>", method="GET", host=host) == 6
    retries = metrics.value(
        "rest_client_request_retries_total", code="<error>", verb="GET", host=host
    )
    assert retries == 5


async def test_dropped_write_is_not_retried(fake_api: FakeApiServer) -> None:
    fake_api.inject(Fault("drop", method="POST"))
    async with make_client(fake_api) as client:
        with pytest.raises(TransportError):
            await client.create(CM, {"metadata": {"name": "a", "namespace": "default"}})
    assert len(fake_api.requests) == 1


async def test_dropped_get_is_retried(fake_api: FakeApiServer) -> None:
    seed(fake_api)
    fake_api.inject(Fault("drop", method="GET"))
    async with make_client(fake_api) as client:
        assert await client.get(CM, "a", namespace="default")
    assert len(fake_api.requests) == 2


async def test_stalled_request_times_out_as_request_timeout(fake_api: FakeApiServer) -> None:
    fake_api.inject(Fault("stall"))
    async with make_client(fake_api, request_timeout_s=0.2) as client:
        with pytest.raises(RequestTimeout) as info:
            await client.get(CM, "a", namespace="default")
    assert isinstance(info.value, TimeoutError)
    assert isinstance(info.value, KubeError)
    assert len(fake_api.requests) == 1


async def test_metrics_use_client_go_names_and_labels(fake_api: FakeApiServer) -> None:
    seed(fake_api)
    metrics = Recorder()
    async with make_client(fake_api, metrics=metrics) as client:
        await client.get(CM, "a", namespace="default")
        with pytest.raises(KubeError):
            await client.get(CM, "missing", namespace="default")
    host = fake_api.url.removeprefix("http://")
    assert metrics.value("rest_client_requests_total", code="200", method="GET", host=host) == 1
    assert metrics.value("rest_client_requests_total", code="404", method="GET", host=host) == 1
    assert (
        len(metrics.observations("rest_client_request_duration_seconds", verb="GET", host=host))
        == 2
    )
    assert metrics.observations(
        "rest_client_rate_limiter_duration_seconds", verb="GET", host=host
    ) == [0.0, 0.0]


async def test_open_watches_do_not_starve_requests(fake_api: FakeApiServer) -> None:
    seed(fake_api)
    async with make_client(fake_api, pool_size=1) as client:

        async def watch() -> None:
            async for _ in client.watch(CM):
                pass

        watches = [asyncio.create_task(watch()) for _ in range(3)]
        await asyncio.wait_for(fake_api.wait_for_watchers(3), timeout=5)
        got = await asyncio.wait_for(client.get(CM, "a", namespace="default"), timeout=5)
        assert got["metadata"]["name"] == "a"
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)


async def test_closed_client_refuses_requests(fake_api: FakeApiServer) -> None:
    client = make_client(fake_api)
    await client.close()
    with pytest.raises(TransportError, match="closed"):
        await client.request("GET", "/version")


async def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        ClientOptions(10.0)  # positional construction is refused
