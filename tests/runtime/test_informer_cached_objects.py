"""kro_informer_cached_objects: the objects in the running informers' caches, so sharded
replicas can show the memory they were spared (bench_controller --replicas) apart from the
watch events they were spared (kro_informer_watch_events_total)."""

from __future__ import annotations

import pytest
from informer_runs import configmap as obj
from informer_runs import owning, running, until

from kro.runtime.client import Client
from kro.runtime.clock import FakeClock
from kro.runtime.gvk import GVR
from kro.runtime.informer import Informer
from kro.runtime.prometheus import PrometheusProvider
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")


def cached(provider: PrometheusProvider, sharded: str) -> float | None:
    return provider.registry.get_sample_value("kro_informer_cached_objects", {"sharded": sharded})


async def test_the_gauge_follows_lists_adds_deletes_and_relists(
    client: Client, fake_api: FakeApiServer
) -> None:
    provider = PrometheusProvider(process_metrics=False)
    for name in ("a", "b"):
        fake_api.seed(CM, obj(name))
    informer = Informer(client, CM, clock=FakeClock(), metrics=provider)
    async with running(informer, fake_api=fake_api):
        assert cached(provider, "false") == 2  # the first list
        created = fake_api.seed(CM, obj("c"))
        await until(lambda: cached(provider, "false") == 3, "an add counted")
        fake_api.modify(CM, dict(created, data={"x": "1"}))
        fake_api.remove(CM, "a", "default")
        await until(lambda: "default/a" not in informer.store, "the delete applied")
        assert cached(provider, "false") == 2  # the update changed nothing, the delete did
        # a 410 while deletes and creates happen: the relist replaces the count
        fake_api.inject(Fault("gone", watch=True))
        fake_api.end_watches()
        for name in ("b", "c"):
            fake_api.remove(CM, name, "default")
        fake_api.seed(CM, obj("d"))
        await until(lambda: informer.store.keys() == ["default/d"], "relisted")
        assert cached(provider, "false") == 1
    assert cached(provider, "false") == 0  # a stopped informer's cache is not counted


async def test_informers_with_the_same_label_add_up_and_a_shard_counts_what_it_keeps(
    client: Client, fake_api: FakeApiServer
) -> None:
    provider = PrometheusProvider(process_metrics=False)
    view = owning("mine")
    for ns in ("mine", "theirs"):
        fake_api.seed(CM, obj("cm", ns))
        fake_api.seed(SECRETS, obj("secret", ns))
    sharded = Informer(client, CM, clock=FakeClock(), shard=view, metrics=provider)
    configmaps = Informer(client, CM, clock=FakeClock(), metrics=provider)
    secrets = Informer(client, SECRETS, clock=FakeClock(), metrics=provider)
    async with running(sharded, configmaps, secrets, fake_api=fake_api):
        assert cached(provider, "true") == 1
        assert cached(provider, "false") == 4
        fake_api.seed(CM, obj("more", "theirs"))
        fake_api.seed(CM, obj("more", "mine"))
        await until(lambda: cached(provider, "false") == 6, "both unsharded adds counted")
        await until(lambda: cached(provider, "true") == 2, "the owned add counted")
    assert (cached(provider, "true"), cached(provider, "false")) == (0, 0)
