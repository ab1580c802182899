"""kro.runtime.sharding's metrics: every shard series exists at 0 from the start, the owned
range and member count follow the view, handovers are counted, fallback mode is flagged, and
`kro_shard_owned_instances` is read from the view's owner at scrape time."""

from __future__ import annotations

from typing import Any

from kro.runtime.clock import FakeClock
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.sharding import ShardingConfig, ShardMembership, ShardView
from kro.testing.leases import FakeLeases

SERIES = (
    "kro_shard_owned_range_fraction",
    "kro_shard_owned_instances",
    "kro_shard_members",
    "kro_shard_handovers_total",
    "kro_shard_fallback_mode",
)


def value(provider: PrometheusProvider, name: str) -> float | None:
    return provider.registry.get_sample_value(name)


Leases = FakeLeases


def member(api: Leases, clock: FakeClock, name: str, provider: PrometheusProvider) -> Any:
    config = ShardingConfig(identity=name, namespace="kro", retry_period_s=1.0)
    view = ShardView(metrics=provider, identity=name)
    return ShardMembership(api, config, view, clock=clock, metrics=provider)


def test_every_shard_series_exists_at_zero_before_anything_happens() -> None:
    provider = PrometheusProvider(process_metrics=False)
    member(Leases(), FakeClock(), "a", provider)
    assert {name: value(provider, name) for name in SERIES} == dict.fromkeys(SERIES, 0.0)


def test_owned_instances_are_counted_when_scraped() -> None:
    provider = PrometheusProvider(process_metrics=False)
    view = ShardView(metrics=provider)
    owned = [3]
    view.count_owned(lambda: owned[0])
    assert value(provider, "kro_shard_owned_instances") == 3
    owned[0] = 5
    assert value(provider, "kro_shard_owned_instances") == 5
    assert view.owned_count() == 5
    assert b"kro_shard_owned_instances 5.0" in provider.render()


def test_fallback_mode_is_flagged_once() -> None:
    provider = PrometheusProvider(process_metrics=False)
    view = ShardView(metrics=provider)
    view.enter_fallback("ignored")
    view.enter_fallback("rejected")
    assert value(provider, "kro_shard_fallback_mode") == 1


async def test_range_members_and_handovers_follow_the_view() -> None:
    api, clock = Leases(), FakeClock()
    providers = {n: PrometheusProvider(process_metrics=False) for n in ("a", "b")}
    a = member(api, clock, "a", providers["a"])
    for _ in range(2):
        await a.step()
        clock.jump(1.0)
    assert value(providers["a"], "kro_shard_owned_range_fraction") == 1.0
    assert value(providers["a"], "kro_shard_members") == 1
    assert value(providers["a"], "kro_shard_handovers_total") == 1
    b = member(api, clock, "b", providers["b"])
    for _ in range(4):
        for m in (a, b):
            await m.step()
        clock.jump(1.0)
    for name in ("a", "b"):
        assert value(providers[name], "kro_shard_owned_range_fraction") == 0.5
        assert value(providers[name], "kro_shard_members") == 2
    assert value(providers["a"], "kro_shard_handovers_total") == 2
