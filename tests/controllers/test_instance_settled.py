"""A converged instance costs nothing: once its pass needed no follow-up, the next one sends no
request while the informer caches show every object it read at the same resourceVersion; any
change of the instance or a child brings the full pass back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from controllers_fakes import CONFIGMAPS, GREETERS, NS, greeter, greeter_graph, greeter_reconciler

from kro.applyset import Applier
from kro.controllers.instance.reconciler import probably_settled, should_enqueue_update
from kro.controllers.registry import RevisionRegistry
from kro.dynamic import DynamicController
from kro.runtime.client import Client
from kro.runtime.informer import Informer
from kro.runtime.reconcile import Request, Result
from kro.testing.fakeapi import FakeApiServer


async def _until(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the caches did not catch up")


def _version(informer: Informer, name: str) -> str:
    return str(
        ((informer.store.get_by(NS, name) or {}).get("metadata") or {}).get("resourceVersion")
    )


async def test_a_converged_instance_is_reconciled_without_a_request(
    api: FakeApiServer, client: Client, applier: Applier, dynamic: DynamicController
) -> None:
    registry = RevisionRegistry()
    registry.activate("greeter", 1, "h1", greeter_graph())
    reconciler = greeter_reconciler(
        client=client,
        registry=registry,
        applier=applier,
        watches=dynamic.watches,
    )
    api.seed(GREETERS, greeter())
    # Registered without running workers: the test drives the reconciles itself.
    await dynamic.register(
        GREETERS,
        reconciler.reconcile,
        should_enqueue_update=should_enqueue_update,
        probably_settled=probably_settled,
    )
    request = Request(NS, "hi")
    results = [await reconciler.reconcile(request) for _ in range(3)]  # creates, then settles
    assert results[-1] == Result()
    instance = api.object(GREETERS, "hi", NS)
    child = api.object(CONFIGMAPS, "hi", NS)
    assert instance is not None
    assert child is not None
    assert instance["status"]["state"] == "ACTIVE"

    # Wait until the caches have seen the last writes, then a pass costs nothing.
    parent_informer = dynamic._pool.synced(GREETERS)
    child_informer = dynamic._pool.synced(CONFIGMAPS)
    assert parent_informer is not None
    assert child_informer is not None
    await _until(
        lambda: (
            _version(parent_informer, "hi") == instance["metadata"]["resourceVersion"]
            and _version(child_informer, "hi") == child["metadata"]["resourceVersion"]
        )
    )
    before = len(api.requests)
    assert await reconciler.reconcile(request) == Result()
    assert [r for r in api.requests[before:] if not r.is_watch] == []

    # A child changed by someone else: the pass reads again (and puts the data back).
    changed = dict(child)
    changed["data"] = {"text": "edited"}
    api.modify(CONFIGMAPS, changed)
    edited = api.object(CONFIGMAPS, "hi", NS)
    assert edited is not None
    await _until(lambda: _version(child_informer, "hi") == edited["metadata"]["resourceVersion"])
    before = len(api.requests)
    await reconciler.reconcile(request)
    sent = [(r.method, r.path) for r in api.requests[before:] if not r.is_watch]
    assert ("GET", f"/apis/{GREETERS.group}/v1alpha1/namespaces/{NS}/greeters/hi") in sent
    assert any(method == "PATCH" for method, _ in sent)
    fixed = api.object(CONFIGMAPS, "hi", NS)
    assert fixed is not None
    assert fixed["data"] == {"text": "hello world"}


def test_only_managed_instances_that_are_not_deleting_wait_in_the_background() -> None:
    managed = {"metadata": {"name": "a", "finalizers": ["kro.run/finalizer"]}}
    assert probably_settled(managed)
    assert not probably_settled({"metadata": {"name": "a"}})
    deleting = {"metadata": {**managed["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert not probably_settled(deleting)
