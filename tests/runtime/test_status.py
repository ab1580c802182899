"""StatusWriter writes a status only when it differs from what the server holds, including right
after its own write, while the cache still shows the object as it was before."""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest

from kro.runtime.client import Client
from kro.runtime.conditions import set_condition
from kro.runtime.gvk import GVK, GVR
from kro.runtime.status import StatusWriter
from kro.runtime.typed import Condition, KubeModel, WireModel
from kro.testing.fakeapi import FakeApiServer, FakeResource

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


class _Recorder:
    """Answers every status write with the object at a new version, and records how it came."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def update_status(self, gvr: GVR, body: dict[str, Any], **options: Any) -> Any:
        self.calls.append(("update", {"body": body, **options}))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "2"}}

    async def apply(self, gvr: GVR, body: dict[str, Any], **options: Any) -> Any:
        self.calls.append(("apply", {"body": body, **options}))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "2"}}


@pytest.mark.parametrize("method", ["update", "apply"])
async def test_an_update_or_an_apply_carries_the_read_version_as_a_precondition(
    method: Any,
) -> None:
    """kro's own controllers write a status computed from a read: the write carries that read's
    uid and resourceVersion (a newer object refuses it), sends nothing but the status, and is
    skipped when the status is what was just written, even from the stale read."""
    recorder = _Recorder()
    writer = StatusWriter(cast(Client, recorder), field_manager="kro.run/test", method=method)
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Website",
        "metadata": {"name": "site", "namespace": "web", "uid": "u1", "resourceVersion": "1",
                     "managedFields": [{"manager": "someone"}]},
        "spec": {"replicas": 3},
        "status": {"ready": False},
    }  # fmt: skip
    written = await writer.write(WEBSITES, obj, {"ready": True})
    assert written is not None
    ((how, call),) = recorder.calls
    assert how == method
    assert call["body"]["metadata"] == {
        "name": "site", "namespace": "web", "uid": "u1", "resourceVersion": "1"
    }  # fmt: skip
    assert call["body"]["status"] == {"ready": True}
    assert "spec" not in call["body"]
    if method == "apply":
        assert (call["field_manager"], call["force"], call["subresource"]) == (
            "kro.run/test",
            True,
            "status",
        )
    assert await writer.write(WEBSITES, obj, {"ready": True}) is None  # the stale read
    assert len(recorder.calls) == 1


def test_a_status_apply_needs_a_field_manager() -> None:
    with pytest.raises(ValueError, match="field manager"):
        StatusWriter(cast(Client, None), method="apply")
