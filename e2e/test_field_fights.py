"""A field another controller keeps rewriting: kro stops fighting, and says so.

kube-controller-manager owns the annotation `deployment.kubernetes.io/revision` on every
Deployment and writes the revision of the current ReplicaSet into it. A template that sets it
too makes kro and kube-controller-manager rewrite it in turn forever (upstream kro loops at
several writes a second). kro-py counts the rounds (kro.applyset.contest), yields the field
after a bounded number, and reports it: the instance's FieldConflict condition names the
resource id, the field path and the other manager, a Warning Event says the same, and
`instance_field_conflicts_total` counts the rounds. Afterwards kro does not write the Deployment
again: for a minute its generation stays put and so do kro's managedFields entries.

Not its resourceVersion: kube-controller-manager goes on writing the Deployment's status
(through `/status`) until the Pod is available, which once came after kro had yielded on a
loaded machine and failed the test. Those writes are not a fight. The test now makes one of them
come late every time (`minReadySeconds`), and tells writes apart by the managedFields entries
each one changed; a failure lists them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kro_harness import (
    DEPLOYMENTS,
    KroEnv,
    condition,
    kro_fixtures,
    meta,
    wait_for,
)

from kro.api.graph import FIELD_MANAGER_TEMPLATE_PREFIX
from kro.api.names import (
    FIELD_MANAGER_APPLYSET,
    FIELD_MANAGER_APPLYSET_PARENT,
    FIELD_MANAGER_INSTANCE_STATUS,
    FIELD_MANAGER_LABELLER,
)
from kro.runtime.gvk import GVR

REVISION = "deployment.kubernetes.io/revision"
EVENTS = GVR("", "v1", "events")
QUIET_S = 60.0
MAX_WRITES_BEFORE_YIELD = 20
KRO_MANAGERS = frozenset(
    {
        FIELD_MANAGER_APPLYSET,
        FIELD_MANAGER_APPLYSET_PARENT,
        FIELD_MANAGER_LABELLER,
        FIELD_MANAGER_INSTANCE_STATUS,
    }
)
"""kro's field managers (kro.api.names); a Graph's template managers share one prefix."""

EntryKey = tuple[str, str, str]
"""One managedFields entry: (manager, operation, subresource)."""


controller, kro = kro_fixtures()


def fighting_rgd(kro: KroEnv) -> dict[str, Any]:
    return kro.rgd(
        "fight",
        "RevisionFight",
        {"image": 'string | default="nginx"'},
        [
            {
                "id": "deployment",
                "template": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {
                        "name": "${schema.metadata.name}",
                        # kube-controller-manager writes "1" here: a fight.
                        "annotations": {REVISION: "7"},
                    },
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": "${schema.metadata.name}"}},
                        "template": {
                            "metadata": {"labels": {"app": "${schema.metadata.name}"}},
                            "spec": {
                                "containers": [{"name": "web", "image": "${schema.spec.image}"}]
                            },
                        },
                    },
                },
            }
        ],
    )


def is_kros(manager: str) -> bool:
    return manager in KRO_MANAGERS or manager.startswith(FIELD_MANAGER_TEMPLATE_PREFIX)


def entries(obj: Mapping[str, Any]) -> dict[EntryKey, tuple[str, str]]:
    """managedFields by (manager, operation, subresource): (time, fieldsV1 as JSON)."""
    found: dict[EntryKey, tuple[str, str]] = {}
    for entry in meta(obj).get("managedFields") or []:
        key = (entry.get("manager", ""), entry.get("operation", ""), entry.get("subresource", ""))
        found[key] = (entry.get("time", ""), json.dumps(entry.get("fieldsV1"), sort_keys=True))
    return found


def kros(obj: Mapping[str, Any]) -> dict[EntryKey, tuple[str, str]]:
    """kro's managedFields entries. A write of kro's that changes which fields it owns, or
    changes any a second after its last write, shows here (the server keeps no no-op apply, and
    stamps times to the second); so does another manager taking a field from kro. A value kro
    changes within the same second shows in the generation, if in the spec or annotations."""
    return {key: value for key, value in entries(obj).items() if is_kros(key[0])}


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[EntryKey]:
    """The managedFields entries a write added, changed or removed: the writer's, and those of
    any manager it took a field from ([] when a manager rewrote, within the same second, only
    fields it already owned)."""
    old, new = entries(before), entries(after)
    return sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))


def who_wrote(writes: Sequence[Mapping[str, Any]]) -> list[str]:
    """For a failure message: each write's resourceVersion, generation and changed entries."""
    return [
        f"{meta(after).get('resourceVersion')} (generation {meta(after).get('generation')}): "
        f"{changed(before, after)}"
        for before, after in itertools.pairwise(writes)
    ]


async def count_writes(kro: KroEnv, name: str, writes: list[dict[str, Any]]) -> None:
    """Append the Deployment as every write left it (a watch, no polling)."""
    async with contextlib.aclosing(
        kro.client.watch(
            DEPLOYMENTS,
            namespace=kro.namespace,
            field_selector=f"metadata.name={name}",
            allow_bookmarks=False,
        )
    ) as stream:
        async for event in stream:
            if event.type in ("ADDED", "MODIFIED"):
                writes.append(dict(event.object))


async def test_kro_yields_a_field_kube_controller_manager_keeps_rewriting(kro: KroEnv) -> None:
    rgd = fighting_rgd(kro)
    # The Pod counts as available 10 s after it is ready: kube-controller-manager then writes
    # the Deployment's status once more, after kro has yielded (what a loaded machine did once).
    rgd["spec"]["resources"][0]["template"]["spec"]["minReadySeconds"] = 10
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await kro.gvr_of("RevisionFight")

    writes: list[dict[str, Any]] = []
    counter = asyncio.create_task(count_writes(kro, "web", writes))
    try:
        await kro.apply_instance("RevisionFight", "web", {})
        live = await kro.wait_instance(
            gvr,
            "web",
            lambda o: condition(o, "FieldConflict").get("status") == "True",
            what="FieldConflict True",
            timeout_s=90,
        )
        conflict = condition(live, "FieldConflict")
        assert conflict["reason"] == "FieldYielded"
        message = conflict["message"]
        assert 'resource "deployment"' in message
        assert f'metadata.annotations["{REVISION}"]' in message
        assert 'field manager "kube-controller-manager"' in message
        assert "Remove the field from the resource template" in message
        assert conflict["observedGeneration"] == meta(live)["generation"]
        # kro-py's own condition is not a dependent of Ready; the rest of the list is upstream's.
        types = [c["type"] for c in live["status"]["conditions"]]
        assert types[-1] == "Ready"

        async def warned() -> dict[str, Any] | None:
            items, _ = await kro.client.list_all(
                EVENTS,
                namespace=kro.namespace,
                field_selector="involvedObject.name=web,reason=FieldYielded",
            )
            return items[0] if items else None

        event = await wait_for(warned, what="a FieldYielded Warning Event")
        assert event["type"] == "Warning"
        assert REVISION in event["message"]
        assert "kube-controller-manager" in event["message"]
        assert len(writes) <= MAX_WRITES_BEFORE_YIELD, who_wrote(writes)

        # The fight is over: kro does not write the Deployment again. kube-controller-manager
        # may still write its status while the Pod becomes available (not a fight: it leaves
        # the spec, so the generation, and kro's managedFields entries alone).
        deployment = await kro.get(DEPLOYMENTS, "web")
        generation, ours = meta(deployment)["generation"], kros(deployment)
        assert ours, entries(deployment)  # kro's apply is there to watch

        def since_yield() -> list[dict[str, Any]]:
            """The writes from the snapshot on (etcd's revisions grow: the watch may lag the
            GET, so the position in `writes` would not do)."""
            start = int(meta(deployment)["resourceVersion"])
            return [deployment] + [w for w in writes if int(meta(w)["resourceVersion"]) > start]

        deadline = time.monotonic() + QUIET_S
        while time.monotonic() < deadline:
            await asyncio.sleep(2.0)
            now = await kro.get(DEPLOYMENTS, "web")
            assert meta(now)["generation"] == generation, who_wrote(since_yield())
            assert kros(now) == ours, who_wrote(since_yield())
        # Every write the watch saw, not only those a poll caught.
        quiet = since_yield()
        for write in quiet:
            assert meta(write)["generation"] == generation, who_wrote(quiet)
            assert kros(write) == ours, who_wrote(quiet)
        assert (await kro.get(DEPLOYMENTS, "web"))["metadata"]["annotations"][REVISION] == "1"
        assert "instance_field_conflicts_total" in kro.controller.scrape()  # type: ignore[union-attr]
    finally:
        counter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await counter


async def test_a_one_off_edit_is_corrected_and_not_reported(kro: KroEnv) -> None:
    """A person's edit is drift: kro takes the field back at once (round 1), as upstream."""
    rgd = fighting_rgd(kro)
    rgd["spec"]["resources"][0]["template"]["metadata"]["annotations"] = {"team": "a"}
    await kro.apply_rgd(rgd)
    await kro.wait_rgd_active(meta(rgd)["name"])
    gvr = await kro.gvr_of("RevisionFight")
    await kro.apply_instance("RevisionFight", "calm", {})
    await kro.wait_instance(gvr, "calm")
    await kro.client.patch(
        DEPLOYMENTS,
        "calm",
        {"metadata": {"annotations": {"team": "b"}}},
        namespace=kro.namespace,
        field_manager="kubectl-edit",
    )

    async def restored() -> dict[str, Any] | None:
        live = await kro.get(DEPLOYMENTS, "calm")
        return live if live["metadata"]["annotations"]["team"] == "a" else None

    await wait_for(restored, what="kro restores the annotation")
    live = await kro.wait_instance(gvr, "calm")
    # Upstream's five, no FieldConflict (their order follows their transition times).
    types = [c["type"] for c in live["status"]["conditions"]]
    assert sorted(types) == sorted(
        ["InstanceManaged", "GraphResolved", "ResourcesReady", "WatchesHealthy", "Ready"]
    )
    assert types[-1] == "Ready"
