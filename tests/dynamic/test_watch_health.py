"""Watch health (V-14, V-15): a kind kro may not list or watch is reported, not waited for.

A watched kind whose list the API server refuses (403) neither fails nor holds up the
reconcile that asks for it: the request is kept, `health` names the kind and the refusal, and
the informer keeps retrying; its first list then enqueues every parent that watches the kind,
so their reports recover with no edit. Registering a parent kind kro may not list fails at the
first refusal (WatchForbidden), not at the 30 s sync deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from dynamic_fakes import (
    CONFIGMAPS,
    SECRETS,
    WIDGETS,
    FakeKube,
    MakeController,
    Recorder,
    drain,
    obj,
)

from kro.dynamic import DynamicController, ObjectRef, ScalarWatch, WatchForbidden, WatchHealth
from kro.runtime.cache import InformerCache
from kro.runtime.clock import FakeClock
from kro.testing.waiting import eventually

P1 = ObjectRef(WIDGETS, "default", "p1")
P2 = ObjectRef(WIDGETS, "default", "p2")
CREDS = ScalarWatch("creds", SECRETS, "default", "creds")
SETTINGS = ScalarWatch("settings", CONFIGMAPS, "default", "settings")


async def declare(dynamic: DynamicController, parent: ObjectRef, *requests: ScalarWatch) -> None:
    """One reconcile cycle; bounded in real time, and the fake clock never moves: no request
    may wait for the sync deadline."""
    for request in requests:
        await asyncio.wait_for(dynamic.watches.watch(parent, request), 2.0)
    await dynamic.watches.done(parent, commit=True)


async def until(check: Callable[[], bool], timeout_s: float = 2.0) -> None:
    async def probe() -> bool:
        return check()

    await eventually(probe, what="the condition", timeout_s=timeout_s, interval_s=0.01)


async def test_a_kind_kro_may_not_list_is_reported_blocked_at_once(
    dynamic: DynamicController, kube: FakeKube, cache: InformerCache
) -> None:
    kube.forbidden.add(CONFIGMAPS)
    kube.put(SECRETS, obj("creds"))
    await declare(dynamic, P1, CREDS, SETTINGS)

    assert dynamic.watches.requests(P1) == {CREDS, SETTINGS}  # kept, to be served later
    health = dynamic.watches.health(P1)
    assert not health.synced
    assert health.pending == ()
    ((name, error),) = health.blocked
    assert name == "configmaps"
    assert "403 Forbidden" in error
    assert 'cannot list resource "configmaps"' in error
    assert dynamic.watches.health(P1, [CREDS]) == WatchHealth()  # the other kind is fine
    assert dynamic.watches.health(P1, [CREDS]).synced
    # Its cache cannot vouch for anything: reads go to the API server.
    assert dynamic.watches.cached_versions(SETTINGS) is None
    assert dynamic.watches.cached_object(SETTINGS) == (False, None)

    await dynamic.watches.forget(P1)
    assert cache.informers() == []  # the retrying informer goes with its last request


async def test_granting_the_kind_enqueues_the_parents_that_watch_it(
    dynamic: DynamicController, kube: FakeKube, clock: FakeClock
) -> None:
    kube.forbidden.add(CONFIGMAPS)
    await declare(dynamic, P1, CREDS, SETTINGS)
    await declare(dynamic, P2, CREDS)  # P2 does not watch ConfigMaps
    drain(dynamic.queue)

    kube.forbidden.clear()
    await asyncio.wait_for(clock.wait_for_sleepers(1), 2.0)  # the informer's retry
    await clock.advance(1.0)  # the first retry comes within the base backoff (0.8 s)
    await until(lambda: dynamic.watches.health(P1).synced)
    # No ConfigMap exists, so no event matches P1's request: the recovery itself brings P1.
    assert drain(dynamic.queue) == [P1]


async def test_a_parent_that_asks_for_a_blocked_kind_later_does_not_wait_either(
    dynamic: DynamicController, kube: FakeKube
) -> None:
    kube.forbidden.add(CONFIGMAPS)
    await declare(dynamic, P1, SETTINGS)
    await declare(dynamic, P2, ScalarWatch("other", CONFIGMAPS, "default", "other"))
    assert [name for name, _ in dynamic.watches.health(P2).blocked] == ["configmaps"]
    assert kube.lists[CONFIGMAPS] == 1  # one informer, shared, retrying on its own clock


async def test_a_request_nobody_serves_is_pending(dynamic: DynamicController) -> None:
    health = dynamic.watches.health(P1, [SETTINGS])
    assert health == WatchHealth(pending=("configmaps",))
    assert not health.synced


async def test_registering_a_kind_kro_may_not_list_fails_at_the_first_refusal(
    make_controller: MakeController, kube: FakeKube, cache: InformerCache
) -> None:
    dynamic = make_controller(informer_sync_timeout_s=30.0)
    kube.forbidden.add(WIDGETS)
    with pytest.raises(WatchForbidden) as caught:
        await asyncio.wait_for(dynamic.register(WIDGETS, Recorder()), 2.0)
    assert caught.value.gvr == WIDGETS
    message = str(caught.value)
    assert message.startswith("cannot list and watch widgets.example.com: 403 Forbidden: ")
    assert "is forbidden" in message
    assert isinstance(caught.value, PermissionError)
    assert not dynamic.is_registered(WIDGETS)
    assert cache.informers() == []

    kube.forbidden.clear()  # granted: the owner's retry registers
    await asyncio.wait_for(dynamic.register(WIDGETS, Recorder()), 2.0)
    assert dynamic.is_registered(WIDGETS)
