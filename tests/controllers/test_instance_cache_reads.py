"""A pass takes a child from the informer cache, without a GET, when that is provably enough.

The caches hold metadata only. A missing child is believed missing unless kro applied it (then
the cache may lag behind our own create); a present child is used when no expression reads it
beyond `metadata` and it is still exactly what kro's last apply left. Everything else is read
from the API server, and what the user sees (the child's content, the instance's state) is the
same either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from controllers_fakes import CONFIGMAPS, GREETERS, NS, greeter, greeter_rgd
from kro_process import CHILD_PATH, INSTANCE_PATH, REQUEST, Kro, registry_of, running, sent, stored

from kro.controllers.instance.reconciler import ReconcileFailed
from kro.dynamic import ScalarWatch
from kro.runtime.client import Client
from kro.runtime.reconcile import Result
from kro.testing.fakeapi import FakeApiServer
from kro.testing.waiting import eventually

CHILD = ScalarWatch("greeting", CONFIGMAPS, NS, "hi")
INSTANCE = ScalarWatch("", GREETERS, NS, "hi")
PEER = ScalarWatch("peer", CONFIGMAPS, NS, "peer")


async def _cache_holds(kro: Kro, version: str | None, request: ScalarWatch = CHILD) -> None:
    """Wait until the informer has caught up with the object at `version` (None: until it
    knows the object is gone)."""

    async def caught_up() -> bool:
        known, obj = kro.dynamic.watches.cached_object(request)
        if not known:
            return False
        if version is None:
            return obj is None
        return obj is not None and obj["metadata"]["resourceVersion"] == version

    await eventually(
        caught_up, what=f"the cache of {request} at {version}", timeout_s=10, interval_s=0.01
    )


async def _passes(api: FakeApiServer, kro: Kro) -> list[tuple[str, str]]:
    """Reconcile until the instance settles, each pass after the caches saw the last one's
    writes (as the watch events that trigger the passes guarantee); what they sent."""
    before = len(api.requests)
    for _ in range(5):
        result = await kro.reconciler.reconcile(REQUEST)
        child = api.object(CONFIGMAPS, "hi", NS)
        await _cache_holds(kro, child["metadata"]["resourceVersion"] if child else None)
        instance = stored(api, GREETERS, "hi")
        await _cache_holds(kro, instance["metadata"]["resourceVersion"], INSTANCE)
        if result == Result():
            return sent(api, before)
    raise AssertionError("the instance did not settle in 5 passes")


def _status_reads_content() -> dict[str, Any]:
    rgd = greeter_rgd()
    rgd["spec"]["schema"]["status"] = {"text": "${greeting.data.text}"}
    return rgd


def _status_reads_name() -> dict[str, Any]:
    rgd = greeter_rgd()
    rgd["spec"]["schema"]["status"] = {"child": "${greeting.metadata.name}"}
    return rgd


async def test_a_new_instance_converges_without_reading_a_child_nobody_reads(
    api: FakeApiServer, client: Client
) -> None:
    api.seed(GREETERS, greeter())
    async with running(client, registry_of()) as kro:
        requests = await _passes(api, kro)
    assert ("GET", CHILD_PATH) not in requests
    assert requests.count(("PATCH", CHILD_PATH)) == 1  # created once, never re-applied
    # A new ApplySet has no member kro did not apply: its prune lists nothing.
    assert ("GET", f"/api/v1/namespaces/{NS}/configmaps") not in requests
    # The instance is never read: kro's labelling answers with it, and the next passes start
    # from kro's own last write.
    assert requests.count(("GET", INSTANCE_PATH)) == 0
    assert stored(api, CONFIGMAPS, "hi")["data"] == {"text": "hello world"}
    assert stored(api, GREETERS, "hi")["status"]["state"] == "ACTIVE"


async def test_an_instance_deleted_after_the_cache_saw_it_is_not_brought_back(
    api: FakeApiServer, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass labels the instance without reading it, from the cache's view; a cache
    that has yet to deliver the deletion must not make kro's apply create an empty instance."""
    api.seed(GREETERS, greeter())
    async with running(client, registry_of()) as kro:
        await _cache_holds(
            kro, stored(api, GREETERS, "hi")["metadata"]["resourceVersion"], INSTANCE
        )
        stale = kro.dynamic.watches.cached_object(INSTANCE)
        monkeypatch.setattr(kro.dynamic.watches, "cached_object", lambda request: stale)
        api.remove(GREETERS, "hi", NS)
        before = len(api.requests)
        assert await kro.reconciler.reconcile(REQUEST) == Result()
        requests = sent(api, before)
    assert requests == [("PATCH", INSTANCE_PATH), ("GET", INSTANCE_PATH)]  # refused; gone
    assert api.object(GREETERS, "hi", NS) is None


async def _renamed(api: FakeApiServer, kro: Kro) -> list[tuple[str, str]]:
    """Converge, then change the instance's spec: what the passes for the change sent."""
    await _passes(api, kro)
    instance = stored(api, GREETERS, "hi")
    api.modify(GREETERS, {**instance, "spec": {"name": "there"}})
    await _cache_holds(kro, stored(api, GREETERS, "hi")["metadata"]["resourceVersion"], INSTANCE)
    return await _passes(api, kro)


@pytest.mark.parametrize(
    ("rgd", "read", "status"),
    [
        (_status_reads_name, False, {"child": "hi"}),
        (_status_reads_content, True, {"text": "hello there"}),
    ],
    ids=["metadata-from-the-cache", "content-from-the-api-server"],
)
async def test_a_child_is_read_from_the_api_server_only_for_its_content(
    api: FakeApiServer,
    client: Client,
    rgd: Callable[[], dict[str, Any]],
    read: bool,
    status: dict[str, str],
) -> None:
    api.seed(GREETERS, greeter())
    async with running(client, registry_of(rgd())) as kro:
        requests = await _renamed(api, kro)
    assert (("GET", CHILD_PATH) in requests) is read
    assert stored(api, CONFIGMAPS, "hi")["data"] == {"text": "hello there"}
    written = stored(api, GREETERS, "hi")["status"]
    assert {k: written[k] for k in status} == status
    assert written["state"] == "ACTIVE"


async def test_a_child_someone_else_changed_is_read_and_put_right(
    api: FakeApiServer, client: Client
) -> None:
    api.seed(GREETERS, greeter())
    async with running(client, registry_of()) as kro:
        await _passes(api, kro)
        child = stored(api, CONFIGMAPS, "hi")
        api.modify(CONFIGMAPS, {**child, "data": {"text": "edited"}})
        await _cache_holds(kro, stored(api, CONFIGMAPS, "hi")["metadata"]["resourceVersion"])
        requests = await _passes(api, kro)
    # The cache's version is not the one kro's apply returned: the rest is unknown.
    assert ("GET", CHILD_PATH) in requests
    assert stored(api, CONFIGMAPS, "hi")["data"] == {"text": "hello world"}


async def test_a_child_kro_applied_and_the_cache_misses_is_asked_for(
    api: FakeApiServer, client: Client
) -> None:
    api.seed(GREETERS, greeter())
    async with running(client, registry_of()) as kro:
        await _passes(api, kro)
        api.remove(CONFIGMAPS, "hi", NS)
        await _cache_holds(kro, None)
        requests = await _passes(api, kro)
    # kro applied it, so a cache without it might only lag behind: the API server decides.
    assert ("GET", CHILD_PATH) in requests
    assert stored(api, CONFIGMAPS, "hi")["data"] == {"text": "hello world"}


def _waiting_for_peer() -> dict[str, Any]:
    """The greeter, whose text comes from an existing ConfigMap `peer`: until somebody makes
    it, the instance waits IN_PROGRESS."""
    rgd = greeter_rgd(text="${peer.data.text}")
    rgd["spec"]["resources"].append(
        {
            "id": "peer",
            "externalRef": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "peer", "namespace": NS},
            },
        }
    )
    return rgd


async def test_later_passes_start_from_the_instance_as_kro_last_wrote_it(
    api: FakeApiServer, client: Client
) -> None:
    api.seed(GREETERS, greeter())
    async with running(client, registry_of(_waiting_for_peer())) as kro:
        before = len(api.requests)
        await kro.reconciler.reconcile(REQUEST)
        assert stored(api, GREETERS, "hi")["status"]["state"] == "IN_PROGRESS"
        instance = stored(api, GREETERS, "hi")
        await _cache_holds(kro, instance["metadata"]["resourceVersion"], INSTANCE)
        peer = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "peer", "namespace": NS},
        }
        api.seed(CONFIGMAPS, {**peer, "data": {"text": "from a peer"}})
        await _cache_holds(
            kro, stored(api, CONFIGMAPS, "peer")["metadata"]["resourceVersion"], PEER
        )
        await _passes(api, kro)
        requests = sent(api, before)
    assert requests.count(("GET", INSTANCE_PATH)) == 0
    assert stored(api, CONFIGMAPS, "hi")["data"] == {"text": "from a peer"}
    assert stored(api, GREETERS, "hi")["status"]["state"] == "ACTIVE"


def _copy(node_id: str, source: str, name: str) -> dict[str, Any]:
    """A ConfigMap `name` whose text is `source`'s."""
    return {
        "id": node_id,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"text": "${" + source + ".data.text}"},
        },
    }


def _chained(name: str = "${schema.metadata.name}-copy") -> dict[str, Any]:
    """The greeter and a second ConfigMap that copies the first one's text."""
    rgd = greeter_rgd()
    rgd["spec"]["resources"].append(_copy("copy", "greeting", name))
    return rgd


async def test_data_that_flows_within_one_pass_converges_in_one(
    api: FakeApiServer, client: Client
) -> None:
    """`copy` waits for `greeting`'s data; the pass applies `greeting`, then renders `copy`
    from the server's answer and applies it too: one status write, no read of `greeting`."""
    api.seed(GREETERS, greeter())
    async with running(client, registry_of(_chained())) as kro:
        requests = await _passes(api, kro)
    copy_path = CHILD_PATH + "-copy"
    assert requests.count(("PATCH", CHILD_PATH)) == 1
    assert requests.count(("PATCH", copy_path)) == 1
    assert ("GET", CHILD_PATH) not in requests
    assert requests.count(("PATCH", f"{INSTANCE_PATH}/status")) == 1
    assert stored(api, CONFIGMAPS, "hi-copy")["data"] == {"text": "hello world"}
    assert stored(api, GREETERS, "hi")["status"]["state"] == "ACTIVE"


async def test_a_later_wave_rendering_an_object_of_an_earlier_one_is_a_conflict(
    api: FakeApiServer, client: Client
) -> None:
    api.seed(GREETERS, greeter())
    async with running(client, registry_of(_chained(name="${schema.metadata.name}"))) as kro:
        with pytest.raises(ReconcileFailed):
            await kro.reconciler.reconcile(REQUEST)
    status = stored(api, GREETERS, "hi")["status"]
    assert status["state"] == "ERROR"
    ready = next(c for c in status["conditions"] if c["type"] == "ResourcesReady")
    assert (
        "found resources with conflicts: resourceID: copy conflicts with resourceID: greeting"
        in (ready["message"])
    )


async def test_an_rgd_without_resources_makes_its_instances_active(
    api: FakeApiServer, client: Client
) -> None:
    rgd = greeter_rgd()
    rgd["spec"]["resources"] = []
    api.seed(GREETERS, greeter())
    async with running(client, registry_of(rgd)) as kro:
        # ACTIVE in one pass, with nothing left to come back for.
        assert await kro.reconciler.reconcile(REQUEST) == Result()
    assert stored(api, GREETERS, "hi")["status"]["state"] == "ACTIVE"


async def test_a_chain_of_three_converges_in_one_pass_each_applied_once(
    api: FakeApiServer, client: Client
) -> None:
    """greeting -> copy -> echo: three waves in one pass, no object applied twice."""
    rgd = _chained()
    rgd["spec"]["resources"].append(_copy("echo", "copy", "${schema.metadata.name}-echo"))
    api.seed(GREETERS, greeter())
    async with running(client, registry_of(rgd)) as kro:
        requests = await _passes(api, kro)
    for path in (CHILD_PATH, CHILD_PATH + "-copy", CHILD_PATH + "-echo"):
        assert requests.count(("PATCH", path)) == 1, path
    assert requests.count(("PATCH", f"{INSTANCE_PATH}/status")) == 1
    assert stored(api, CONFIGMAPS, "hi-echo")["data"] == {"text": "hello world"}
    assert stored(api, GREETERS, "hi")["status"]["state"] == "ACTIVE"


async def test_the_status_write_sends_the_status_and_the_instance_identity_only(
    api: FakeApiServer, client: Client
) -> None:
    """The API server takes nothing but `status` from a status write (and the uid and
    resourceVersion as preconditions): the rest of the instance is not sent."""
    api.seed(GREETERS, greeter())
    async with running(client, registry_of()) as kro:
        await _passes(api, kro)
    put = next(r for r in api.requests if r.method == "PATCH" and r.path.endswith("/status"))
    body = json.loads(put.body)
    assert set(body) == {"apiVersion", "kind", "metadata", "status"}
    assert set(body["metadata"]) == {"name", "namespace", "uid", "resourceVersion"}
    stored_instance = stored(api, GREETERS, "hi")
    assert stored_instance["status"]["state"] == "ACTIVE"
    assert stored_instance["spec"] == {"name": "world"}
    assert "kro.run/finalizer" in stored_instance["metadata"]["finalizers"]
