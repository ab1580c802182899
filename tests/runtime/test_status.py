"""StatusWriter writes a status only when it differs from what the server holds, including right
after its own write, while the cache still shows the object as it was before."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fakeapi import FakeApiServer, FakeResource

from kro.runtime.client import Client
from kro.runtime.conditions import set_condition
from kro.runtime.gvk import GVK, GVR
from kro.runtime.status import StatusWriter
from kro.runtime.typed import Condition, KubeModel, WireModel

pytestmark = pytest.mark.usefixtures("no_task_leaks")

WEBSITES = GVR("example.com", "v1", "websites")
T0 = "2026-01-01T00:00:00Z"


class WebsiteStatus(WireModel):
    ready_replicas: int = 0
    conditions: list[Condition] = []


class Website(KubeModel):
    gvk = GVK("example.com", "v1", "Website")
    gvr = WEBSITES
    status: WebsiteStatus | None = None


@pytest.fixture
def site(fake_api: FakeApiServer) -> dict[str, Any]:
    fake_api.add_resource(FakeResource("example.com", "v1", "websites", "Website"))
    return fake_api.seed(
        WEBSITES,
        {
            "apiVersion": "example.com/v1",
            "kind": "Website",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"image": "nginx"},
        },
    )


def status_patches(api: FakeApiServer) -> int:
    return sum(1 for r in api.requests if r.method == "PATCH" and r.path.endswith("/status"))


async def test_an_unchanged_status_is_not_written(
    fake_api: FakeApiServer, client: Client, site: dict[str, Any]
) -> None:
    writer = StatusWriter(client)
    status: dict[str, Any] = {}
    set_condition(status, "Ready", "True", now=T0)
    assert await writer.update(WEBSITES, site, status)
    fresh = await client.get(WEBSITES, "w", namespace="ns")
    assert fresh["status"] == status
    again: dict[str, Any] = copy.deepcopy(fresh["status"])
    assert not set_condition(again, "Ready", "True", now="2030-01-01T00:00:00Z")
    assert not await writer.update(WEBSITES, fresh, again)
    assert status_patches(fake_api) == 1
    assert (writer.writes, writer.skipped) == (1, 1)


async def test_fields_dropped_from_the_status_are_removed(
    fake_api: FakeApiServer, client: Client, site: dict[str, Any]
) -> None:
    writer = StatusWriter(client)
    await writer.update(WEBSITES, site, {"a": 1, "b": 2})
    fresh = await client.get(WEBSITES, "w", namespace="ns")
    await writer.update(WEBSITES, fresh, {"a": 1})
    assert (await client.get(WEBSITES, "w", namespace="ns"))["status"] == {"a": 1}


async def test_a_stale_cache_neither_repeats_a_write_nor_hides_one(
    fake_api: FakeApiServer, client: Client, site: dict[str, Any]
) -> None:
    writer = StatusWriter(client)
    stale = site  # what the cache holds until the watch delivers our write
    assert await writer.update(WEBSITES, stale, {"phase": "Ready"})
    # The same status from the same stale object: the server has it already.
    assert not await writer.update(WEBSITES, stale, {"phase": "Ready"})
    # Back to what the stale object shows: the server holds "Ready", so this must be written.
    assert await writer.update(WEBSITES, stale, {})
    assert (await client.get(WEBSITES, "w", namespace="ns"))["status"] == {}
    # Once the cache is fresh, the object itself is compared again.
    fresh = await client.get(WEBSITES, "w", namespace="ns")
    assert not await writer.update(WEBSITES, fresh, {})
    assert status_patches(fake_api) == 2


async def test_someone_elses_later_write_makes_the_object_authoritative(
    fake_api: FakeApiServer, client: Client, site: dict[str, Any]
) -> None:
    writer = StatusWriter(client)
    await writer.update(WEBSITES, site, {"phase": "Ready"})
    theirs = await client.patch(
        WEBSITES, "w", {"status": {"phase": "Broken"}}, namespace="ns", subresource="status"
    )
    assert writer.current_status(theirs) == {"phase": "Broken"}
    assert await writer.update(WEBSITES, theirs, {"phase": "Ready"})


async def test_typed_objects_and_statuses(
    fake_api: FakeApiServer, client: Client, site: dict[str, Any]
) -> None:
    writer = StatusWriter(client)
    typed = Website.from_object(site)
    status = WebsiteStatus(
        ready_replicas=2,
        conditions=[Condition(type="Ready", status="True", last_transition_time=T0)],
    )
    assert await writer.update(Website, typed, status)
    fresh = Website.from_object(await client.get(WEBSITES, "w", namespace="ns"))
    assert fresh.status is not None
    assert fresh.status.ready_replicas == 2
    raw = await client.get(WEBSITES, "w", namespace="ns")
    assert raw["status"] == {
        "readyReplicas": 2,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T0}],
    }
    assert not await writer.update(Website, fresh, status)
