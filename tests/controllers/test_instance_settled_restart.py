"""A restarted controller confirms a converged instance with one read: the instance's settled
record (kro.controllers.instance.settled_record) survives the process, and its caches confirm
that nothing the last settled pass read has changed. Anything that did change while it was down
(a child edited or deleted, a new member of a selector, the instance's labels or status, another
graph revision) brings the full pass back, and so does a record it cannot read."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from controllers_fakes import (
    CONFIGMAPS,
    GREETERS,
    NS,
    RESOLVER,
    greeter,
    greeter_rgd,
)
from fakeapi import FakeApiServer
from kro_process import (
    CHILD_PATH,
    INSTANCE_PATH,
    REQUEST,
    WRITES,
    registry_of,
    running,
    sent,
    stored,
)

from kro.api.names import ANNOTATION_SETTLED_INPUTS
from kro.controllers.instance import settled_record as record_module
from kro.controllers.instance.settled_record import SettledRecord
from kro.controllers.registry import RevisionRegistry
from kro.dynamic import (
    LabelSelector,
    ScalarWatch,
    SelectorWatch,
)
from kro.graph.builder import build_graph
from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.runtime.reconcile import Result
from kro.testing.waiting import eventually


def peers_rgd() -> dict[str, Any]:
    """The greeter, whose ConfigMap also counts the ConfigMaps labelled `peer=yes`."""
    rgd = greeter_rgd()
    rgd["spec"]["resources"][0]["template"]["data"]["peers"] = "${string(size(peers))}"
    rgd["spec"]["resources"].append(
        {
            "id": "peers",
            "externalRef": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"selector": {"matchLabels": {"peer": "yes"}}},
            },
        }
    )
    return rgd


def annotation(api: FakeApiServer) -> str | None:
    annotations = stored(api, GREETERS, "hi")["metadata"].get("annotations") or {}
    value = annotations.get(ANNOTATION_SETTLED_INPUTS)
    return value if isinstance(value, str) else None


async def restart_pass(
    api: FakeApiServer, client: Client, registry: RevisionRegistry
) -> list[tuple[str, str]]:
    """The first reconcile of the instance by a freshly started controller, and the follow-up
    it asks for in the background lane if it does: what they sent."""
    async with running(client, registry) as kro:
        before = len(api.requests)
        if (await kro.reconciler.reconcile(REQUEST)).background:
            await kro.reconciler.reconcile(REQUEST)
        return sent(api, before)


async def test_a_restarted_controller_confirms_a_converged_instance_with_one_read(
    api: FakeApiServer, client: Client
) -> None:
    registry = registry_of()
    api.seed(GREETERS, greeter())
    async with running(client, registry) as kro:
        await kro.converge()
    value = annotation(api)
    assert value is not None
    assert "hello world" not in value  # names, versions and digests only
    # Written after the status says ACTIVE (the record is not on the way to ACTIVE), and last.
    writes = [r for r in api.requests if r.method in WRITES and r.path.startswith(INSTANCE_PATH)]
    record = next(i for i, r in enumerate(writes) if ANNOTATION_SETTLED_INPUTS.encode() in r.body)
    active = next(i for i, r in enumerate(writes) if b'"state":"ACTIVE"' in r.body)
    assert active < record == len(writes) - 1
    instance, child = stored(api, GREETERS, "hi"), stored(api, CONFIGMAPS, "hi")

    async with running(client, registry) as kro:
        before = len(api.requests)
        assert await kro.reconciler.reconcile(REQUEST) == Result()
        assert sent(api, before) == [("GET", INSTANCE_PATH)]
        assert kro.reconciler.metrics.states.count("ACTIVE", "greeter") == 1
        # Remembered in memory as well: the next reconcile sends nothing at all.
        before = len(api.requests)
        assert await kro.reconciler.reconcile(REQUEST) == Result()
        assert sent(api, before) == []
        # The child's watch was committed: the restarted controller follows it.
        parent = kro.dynamic.watches.parents()
        assert [r for p in parent for r in kro.dynamic.watches.requests(p)] == [
            ScalarWatch("greeting", CONFIGMAPS, NS, "hi")
        ]
    assert (
        stored(api, GREETERS, "hi")["metadata"]["resourceVersion"]
        == (instance["metadata"]["resourceVersion"])
    )
    assert (
        stored(api, CONFIGMAPS, "hi")["metadata"]["resourceVersion"]
        == (child["metadata"]["resourceVersion"])
    )


async def test_the_record_is_written_once_nothing_else_waits_on_the_status_answer(
    api: FakeApiServer, client: Client
) -> None:
    api.seed(GREETERS, greeter())
    async with running(client, registry_of()) as kro:
        await kro.until_active()
        active = stored(api, GREETERS, "hi")
        assert active["status"]["state"] == "ACTIVE"
        assert annotation(api) is None  # not on the way to ACTIVE

        before = len(api.requests)
        assert await kro.reconciler.reconcile(REQUEST) == Result()  # the background lane
        assert sent(api, before) == [("PATCH", INSTANCE_PATH)]
        body = json.loads(api.requests[-1].body)
        assert body["metadata"]["resourceVersion"] == active["metadata"]["resourceVersion"]
        assert annotation(api) is not None

        # Once the cache shows that write, it is known for kro's own: nothing is read again.
        written = stored(api, GREETERS, "hi")["metadata"]["resourceVersion"]
        parent = ScalarWatch("", GREETERS, NS, "hi")

        async def cached() -> bool:
            return kro.dynamic.watches.cached_versions(parent) == {(NS, "hi"): written}

        await eventually(cached, what="the record in the cache", timeout_s=10, interval_s=0.01)
        before = len(api.requests)
        assert await kro.reconciler.reconcile(REQUEST) == Result()
        assert sent(api, before) == []
    assert await restart_pass(api, client, registry_of()) == [("GET", INSTANCE_PATH)]


async def test_an_instance_changed_before_its_record_is_written_gets_no_stale_record(
    api: FakeApiServer, client: Client
) -> None:
    registry = registry_of()
    api.seed(GREETERS, greeter())
    async with running(client, registry) as kro:
        await kro.until_active()
        _label_instance(api)  # before the background lane comes back
        for _ in range(3):
            await kro.reconciler.reconcile(REQUEST)
    # Whatever the caches had seen by then, the record on the instance describes the labelled
    # instance: a restart confirms it with one read.
    assert "team" in stored(api, GREETERS, "hi")["metadata"]["labels"]
    assert annotation(api) is not None
    assert await restart_pass(api, client, registry) == [("GET", INSTANCE_PATH)]


def _edit_child(api: FakeApiServer) -> None:
    child = stored(api, CONFIGMAPS, "hi")
    api.modify(CONFIGMAPS, {**child, "data": {"text": "edited"}})


def _delete_child(api: FakeApiServer) -> None:
    api.remove(CONFIGMAPS, "hi", NS)


def _label_instance(api: FakeApiServer) -> None:
    instance = stored(api, GREETERS, "hi")
    labels = {**instance["metadata"].get("labels", {}), "team": "a"}
    api.modify(GREETERS, {**instance, "metadata": {**instance["metadata"], "labels": labels}})


def _overwrite_status(api: FakeApiServer) -> None:
    instance = stored(api, GREETERS, "hi")
    api.state.replace(
        GREETERS,
        NS,
        "hi",
        {**instance, "status": {"state": "ERROR"}},
        subresource="status",
        manager="someone",
        dry_run=False,
        precondition_rv=None,
    )
    assert stored(api, GREETERS, "hi")["status"] == {"state": "ERROR"}


@pytest.mark.parametrize(
    "change",
    [_edit_child, _delete_child, _label_instance, _overwrite_status],
    ids=["child-edited", "child-deleted", "instance-labelled", "status-overwritten"],
)
async def test_what_changed_while_the_controller_was_down_is_reconciled(
    api: FakeApiServer, client: Client, change: Callable[[FakeApiServer], None]
) -> None:
    registry = registry_of()
    api.seed(GREETERS, greeter())
    async with running(client, registry) as kro:
        await kro.converge()
    assert annotation(api) is not None

    change(api)
    requests = await restart_pass(api, client, registry)

    # The full pass: it reads the child (a deleted one the cache already knows is gone) or
    # writes it back.
    assert {("GET", CHILD_PATH), ("PATCH", CHILD_PATH)} & set(requests)
    assert stored(api, CONFIGMAPS, "hi")["data"] == {"text": "hello world"}
    assert stored(api, GREETERS, "hi")["status"]["state"] == "ACTIVE"


async def test_a_new_graph_revision_is_rendered_after_a_restart(
    api: FakeApiServer, client: Client
) -> None:
    api.seed(GREETERS, greeter())
    async with running(client, registry_of()) as kro:
        await kro.converge()
    registry = registry_of()
    registry.activate("greeter", 2, "h2", build_graph(greeter_rgd(text="hi there"), RESOLVER))

    requests = await restart_pass(api, client, registry)

    assert ("GET", CHILD_PATH) in requests
    assert stored(api, CONFIGMAPS, "hi")["data"] == {"text": "hi there"}


async def test_a_new_member_of_a_selector_is_read_after_a_restart(
    api: FakeApiServer, client: Client
) -> None:
    registry = registry_of(peers_rgd())
    api.seed(GREETERS, greeter())
    peer = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": NS}}
    api.seed(
        CONFIGMAPS,
        {**peer, "metadata": {**peer["metadata"], "name": "p1", "labels": {"peer": "yes"}}},
    )
    async with running(client, registry) as kro:
        await kro.converge()
    assert stored(api, CONFIGMAPS, "hi")["data"]["peers"] == "1"
    assert annotation(api) is not None
    # Confirmed as it is: the selector's member is unchanged.
    assert await restart_pass(api, client, registry) == [("GET", INSTANCE_PATH)]

    api.seed(
        CONFIGMAPS,
        {**peer, "metadata": {**peer["metadata"], "name": "p2", "labels": {"peer": "yes"}}},
    )
    requests = await restart_pass(api, client, registry)

    assert ("GET", CHILD_PATH) in requests
    assert stored(api, CONFIGMAPS, "hi")["data"]["peers"] == "2"


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        json.dumps({"v": 99, "instance": "x", "reads": "y", "watches": ""}),
        json.dumps({"v": 1, "instance": "x", "reads": "y", "watches": "%%%"}),
        json.dumps(
            {
                "v": 1,
                "instance": "x",
                "reads": "y",
                "watches": base64.b64encode(zlib.compress(b'[["s", 1]]')).decode(),
            }
        ),
        json.dumps(
            {
                "v": 1,
                "instance": "x",
                "reads": "y",
                "watches": base64.b64encode(zlib.compress(b"[" + b"0," * 400_000 + b"0]")).decode(),
            }
        ),
    ],
    ids=["not-json", "other-format", "not-base64", "not-a-watch", "too-large-inflated"],
)
async def test_a_record_that_cannot_be_read_runs_the_pass_which_writes_a_good_one(
    api: FakeApiServer, client: Client, value: str
) -> None:
    registry = registry_of()
    api.seed(GREETERS, greeter())
    async with running(client, registry) as kro:
        await kro.converge()
    good = annotation(api)
    assert good is not None
    assert SettledRecord.decode(value) is None
    instance = stored(api, GREETERS, "hi")
    annotations = {**instance["metadata"]["annotations"], ANNOTATION_SETTLED_INPUTS: value}
    api.modify(
        GREETERS, {**instance, "metadata": {**instance["metadata"], "annotations": annotations}}
    )

    requests = await restart_pass(api, client, registry)

    assert ("GET", CHILD_PATH) in requests
    assert annotation(api) == good  # the same inputs: the same record
    assert await restart_pass(api, client, registry) == [("GET", INSTANCE_PATH)]


async def test_a_record_too_large_is_not_written_and_the_restart_runs_the_pass(
    api: FakeApiServer, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(record_module, "MAX_RECORD_BYTES", 64)
    registry = registry_of()
    api.seed(GREETERS, greeter())
    async with running(client, registry) as kro:
        await kro.converge()
    assert annotation(api) is None

    requests = await restart_pass(api, client, registry)

    assert ("GET", CHILD_PATH) in requests
    assert not [r for r in requests if r[0] in WRITES]


async def test_expressions_do_not_see_the_record(api: FakeApiServer, client: Client) -> None:
    rgd = greeter_rgd()
    rgd["spec"]["resources"][0]["template"]["metadata"]["annotations"] = (
        "${schema.metadata.annotations}"
    )
    registry = registry_of(rgd)
    api.seed(GREETERS, greeter())
    async with running(client, registry) as kro:
        await kro.converge()
        assert annotation(api) is not None
        _label_instance(api)  # a full pass, with the record on the instance
        kro.reconciler._settled.forget((NS, "hi"))
        await kro.reconciler.reconcile(REQUEST)
    child = stored(api, CONFIGMAPS, "hi")
    assert ANNOTATION_SETTLED_INPUTS not in (child["metadata"].get("annotations") or {})


def test_the_record_round_trips_every_kind_of_watch_request() -> None:
    requests = (
        ScalarWatch("cm", CONFIGMAPS, NS, "a"),
        ScalarWatch("ns", GVR("", "v1", "namespaces"), "", "team-a"),
        SelectorWatch("peers", CONFIGMAPS, NS, LabelSelector.parse("peer=yes,tier in (a,b)")),
        SelectorWatch("all", GVR("apps", "v1", "deployments"), None, LabelSelector()),
    )
    record = SettledRecord("i" * 32, "r" * 32, requests)
    value = record.encode()
    assert value is not None
    decoded = SettledRecord.decode(value)
    assert decoded is not None
    assert (decoded.instance, decoded.reads) == (record.instance, record.reads)
    assert set(decoded.watches) == set(requests)


def test_the_reads_digest_changes_with_any_version_member_or_request() -> None:
    request = SelectorWatch("peers", CONFIGMAPS, NS, LabelSelector.parse("peer=yes"))
    base = {request: {(NS, "p1"): "10"}}
    digest = record_module.reads_digest(base)
    assert record_module.reads_digest({request: {(NS, "p1"): "10"}}) == digest
    assert record_module.reads_digest({request: {(NS, "p1"): "11"}}) != digest
    assert record_module.reads_digest({request: {(NS, "p1"): "10", (NS, "p2"): "3"}}) != digest
    assert record_module.reads_digest({request: {}}) != digest
    other = SelectorWatch("peers", CONFIGMAPS, None, LabelSelector.parse("peer=yes"))
    assert record_module.reads_digest({other: {(NS, "p1"): "10"}}) != digest


def test_the_instance_digest_ignores_only_what_writing_the_record_changes() -> None:
    instance = greeter()
    instance["metadata"].update(resourceVersion="5", managedFields=[{"manager": "a"}])
    digest = record_module.instance_digest("g1", instance)
    rewritten = greeter()
    rewritten["metadata"].update(
        resourceVersion="6",
        managedFields=[{"manager": "b"}],
        annotations={ANNOTATION_SETTLED_INPUTS: "x"},
    )
    assert record_module.instance_digest("g1", rewritten) == digest
    assert record_module.instance_digest("g2", instance) != digest
    for field, value in (("generation", 2), ("labels", {"a": "b"}), ("annotations", {"a": "b"})):
        changed = greeter()
        changed["metadata"][field] = value
        assert record_module.instance_digest("g1", changed) != digest
    assert record_module.instance_digest("g1", {**instance, "status": {"state": "x"}}) != digest
    # Digested before the server stores it: a whole float is the integer the server keeps.
    floats = record_module.instance_digest("g1", {**instance, "status": {"n": [2.0, 0.5]}})
    assert record_module.instance_digest("g1", {**instance, "status": {"n": [2, 0.5]}}) == floats
