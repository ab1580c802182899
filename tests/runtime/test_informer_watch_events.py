"""kro_informer_watch_events_total: the watch events an informer received, before the shard
filter, so sharded replicas can show what they were spared (bench_controller --replicas)."""

from __future__ import annotations

import dataclasses

import pytest
from informer_runs import configmap as cm
from informer_runs import owning, running, until

from kro.runtime.client import Client
from kro.runtime.clock import FakeClock
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.runtime.prometheus import PrometheusProvider
from kro.testing.fakeapi import FakeApiServer

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")


def received(provider: PrometheusProvider, sharded: str) -> float:
    value = provider.registry.get_sample_value(
        "kro_informer_watch_events_total", {"sharded": sharded}
    )
    return value or 0.0


async def test_watch_events_are_counted_but_listed_objects_are_not(
    client: Client, fake_api: FakeApiServer
) -> None:
    provider = PrometheusProvider(process_metrics=False)
    client.options = dataclasses.replace(client.options, metrics=provider)  # the default source
    fake_api.seed(CM, cm("listed"))
    informer = Informer(client, CM, clock=FakeClock())
    async with running(informer, fake_api=fake_api):
        created = fake_api.seed(CM, cm("a"))
        fake_api.modify(CM, dict(created, data={"x": "2"}))
        fake_api.remove(CM, "a", "default")
        await until(lambda: received(provider, "false") == 3, "3 events counted")
    assert received(provider, "true") == 0


async def test_a_sharded_informer_counts_what_it_filters_out(
    client: Client, fake_api: FakeApiServer
) -> None:
    provider = PrometheusProvider(process_metrics=False)
    view = owning("mine")
    informer = Informer(client, CM, clock=FakeClock(), shard=view, metrics=provider)
    async with running(informer, fake_api=fake_api):
        fake_api.seed(CM, cm("kept", "mine"))
        fake_api.seed(CM, cm("dropped", "theirs"))
        await until(lambda: received(provider, "true") == 2, "2 events counted")
        await until(lambda: "mine/kept" in informer.store, "the owned object cached")
    assert "theirs/dropped" not in informer.store
    assert received(provider, "false") == 0
