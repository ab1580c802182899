"""Finalizers: added to live objects before anything else, cleanup run once when the object is
being deleted, then removed (which releases the object); concurrent finalizers survive."""

from __future__ import annotations

from typing import Any

import pytest

from kro.runtime import errors
from kro.runtime.client import Client
from kro.runtime.finalizers import (
    Finalizer,
    FinalizerOutcome,
    add_finalizer,
    has_finalizer,
    is_being_deleted,
    remove_finalizer,
)
from kro.runtime.gvk import GVR
from kro.testing.fakeapi import FakeApiServer, Fault

pytestmark = pytest.mark.usefixtures("no_task_leaks")

CM = GVR("", "v1", "configmaps")
NAME = "example.com/cleanup"


def seed(api: FakeApiServer, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "a", "namespace": "ns"}
    if finalizers:
        meta["finalizers"] = finalizers
    return api.seed(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})


class Cleanup:
    def __init__(self, fail: int = 0) -> None:
        self.calls: list[str] = []
        self.fail = fail

    async def __call__(self, obj: dict[str, Any]) -> None:
        self.calls.append(obj["metadata"]["name"])
        if self.fail:
            self.fail -= 1
            raise RuntimeError("the outside world said no")


async def test_add_and_remove(fake_api: FakeApiServer, client: Client) -> None:
    obj = seed(fake_api)
    added = await add_finalizer(client, CM, obj, NAME)
    assert has_finalizer(added, NAME)
    assert await add_finalizer(client, CM, added, NAME) is not None  # idempotent, no write
    removed = await remove_finalizer(client, CM, added, NAME)
    assert removed is not None
    assert not has_finalizer(removed, NAME)


async def test_a_stale_object_never_drops_someone_elses_finalizer(
    fake_api: FakeApiServer, client: Client
) -> None:
    stale = seed(fake_api)
    await client.patch(CM, "a", {"metadata": {"finalizers": ["other.io/keep"]}}, namespace="ns")
    with pytest.raises(errors.Conflict):
        await add_finalizer(client, CM, stale, NAME)
    current = fake_api.object(CM, "a", "ns")
    assert current is not None
    assert current["metadata"]["finalizers"] == ["other.io/keep"]


async def test_handle_adds_the_finalizer_to_a_live_object(
    fake_api: FakeApiServer, client: Client
) -> None:
    cleanup = Cleanup()
    outcome = await Finalizer(client, NAME, cleanup).handle(CM, seed(fake_api))
    assert not outcome.deleting
    assert outcome.object is not None
    assert has_finalizer(outcome.object, NAME)
    assert cleanup.calls == []


async def test_handle_cleans_up_then_releases_a_deleted_object(
    fake_api: FakeApiServer, client: Client
) -> None:
    cleanup = Cleanup()
    finalizer = Finalizer(client, NAME, cleanup)
    seed(fake_api, [NAME])
    deleting = await client.delete(CM, "a", namespace="ns")
    assert deleting is not None
    assert is_being_deleted(deleting)
    outcome = await finalizer.handle(CM, deleting)
    assert outcome.deleting
    assert outcome.object is None
    assert cleanup.calls == ["a"]
    assert fake_api.object(CM, "a", "ns") is None


async def test_cleanup_runs_once_even_if_releasing_fails(
    fake_api: FakeApiServer, client: Client
) -> None:
    cleanup = Cleanup()
    finalizer = Finalizer(client, NAME, cleanup)
    seed(fake_api, [NAME])
    deleting = await client.delete(CM, "a", namespace="ns")
    assert deleting is not None
    fake_api.inject(Fault("status", method="PATCH", status=500, body="etcd hiccup"))
    with pytest.raises(errors.InternalError):
        await finalizer.handle(CM, deleting)
    assert await finalizer.handle(CM, deleting) == FinalizerOutcome(True, None)
    assert cleanup.calls == ["a"]


async def test_a_failing_cleanup_keeps_the_finalizer_and_is_retried(
    fake_api: FakeApiServer, client: Client
) -> None:
    cleanup = Cleanup(fail=1)
    finalizer = Finalizer(client, NAME, cleanup)
    seed(fake_api, [NAME])
    deleting = await client.delete(CM, "a", namespace="ns")
    assert deleting is not None
    with pytest.raises(RuntimeError):
        await finalizer.handle(CM, deleting)
    held = fake_api.object(CM, "a", "ns")
    assert held is not None
    assert has_finalizer(held, NAME)
    assert (await finalizer.handle(CM, held)).deleting
    assert cleanup.calls == ["a", "a"]
    assert fake_api.object(CM, "a", "ns") is None


async def test_an_object_being_deleted_without_our_finalizer_is_left_alone(
    fake_api: FakeApiServer, client: Client
) -> None:
    cleanup = Cleanup()
    seed(fake_api, ["other.io/keep"])
    deleting = await client.delete(CM, "a", namespace="ns")
    assert deleting is not None
    outcome = await Finalizer(client, NAME, cleanup).handle(CM, deleting)
    assert outcome.deleting
    assert cleanup.calls == []


def test_finalizer_names_are_domain_qualified(client: Client) -> None:
    with pytest.raises(ValueError, match="domain-qualified"):
        Finalizer(client, "cleanup", Cleanup())
