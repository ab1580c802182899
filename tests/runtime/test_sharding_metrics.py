"""kro.runtime.sharding's metrics: every shard series exists at 0 from the start, the owned
range and member count follow the view, handovers are counted, fallback mode is flagged, and
`kro_shard_owned_instances` is read from the view's owner at scrape time."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kro.runtime.clock import FakeClock
from kro.runtime.errors import Conflict, NotFound
from kro.runtime.prometheus import PrometheusProvider
from kro.runtime.sharding import ShardingConfig, ShardMembership, ShardView

SERIES = (
    "kro_shard_owned_range_fraction",
    "kro_shard_owned_instances",
    "kro_shard_members",
    "kro_shard_handovers_total",
    "kro_shard_fallback_mode",
)


def value(provider: PrometheusProvider, name: str) -> float | None:
    return provider.registry.get_sample_value(name)


class Leases:
    """Just enough of the Lease API for members that never race."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.rv = 0

    def _store(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.rv += 1
        new = copy.deepcopy(dict(obj))
        new["metadata"]["resourceVersion"] = str(self.rv)
        self.items[new["metadata"]["name"]] = new
        return copy.deepcopy(new)

    async def get(self, gvr: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        if name not in self.items:
            raise NotFound(status=404, reason="NotFound", message=name)
        return copy.deepcopy(self.items[name])

    async def list(self, gvr: Any, **_: Any) -> dict[str, Any]:
        return {"items": copy.deepcopy(list(self.items.values()))}

    async def create(self, gvr: Any, obj: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        return self._store(obj)

    async def update(self, gvr: Any, obj: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        current = self.items[obj["metadata"]["name"]]
        if current["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]:
            raise Conflict(status=409, reason="Conflict", message="stale")
        return self._store(obj)

    async def delete(self, gvr: Any, name: str, **_: Any) -> None:
        self.items.pop(name, None)


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
