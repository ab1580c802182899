"""Deletion in apply-order waves (D-02..D-05, N-09) and finalizer removal by merge patch."""

from __future__ import annotations

from typing import Any

import pytest
from applyset_fakes import (
    CONFIGMAPS,
    NS,
    WEBAPPS,
    WIDGETS,
    configmap,
    desired,
    live,
    seed_parent,
    widget,
)

from kro.api.names import (
    ANNOTATION_APPLY_ORDER,
    ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
    FINALIZER,
    LABEL_APPLYSET_ID,
)
from kro.applyset import (
    Applier,
    InvalidInventory,
    Member,
    ObjectRef,
    apply_order,
    delete_next_wave,
)
from kro.engine.ownership import FINALIZER_ATTEMPTS
from kro.runtime.client import Client
from kro.runtime.finalizers import remove_finalizer
from kro.runtime.gvk import GVK
from kro.testing.fakeapi import FakeApiServer


@pytest.mark.parametrize(
    ("value", "wave"),
    [("3", 3), ("1", 1), ("0", 0), ("-2", 0), ("x", 0), ("", 0), ("2.5", 0), (None, 0)],
    ids=["3", "1", "0", "negative", "text", "empty", "float", "missing"],
)
def test_apply_order_falls_back_to_wave_zero(value: str | None, wave: int) -> None:
    annotations = {} if value is None else {ANNOTATION_APPLY_ORDER: value}
    ref = ObjectRef(CONFIGMAPS, NS, "x", "uid")
    assert apply_order(Member(ref, GVK("", "v1", "ConfigMap"), {}, annotations, False)) == wave


async def _applied(api: FakeApiServer, applier: Applier) -> dict[str, Any]:
    """Children in waves 3 (c, w), 2 (b), 1 (a) and 0 (z: no annotation); returns the parent."""
    result = await applier.apply(
        seed_parent(api),
        WEBAPPS,
        [
            desired(api, configmap("a", order=1)),
            desired(api, configmap("b", order=2, namespace="other")),
            desired(api, configmap("c", order=3)),
            desired(api, configmap("z")),
            desired(
                api,
                widget("w")
                | {
                    "metadata": widget("w")["metadata"]
                    | {"annotations": {ANNOTATION_APPLY_ORDER: "3"}}
                },
                gvr=WIDGETS,
                namespaced=False,
            ),
        ],
    )
    assert not result.has_errors
    return result.parent_obj


def _present(api: FakeApiServer) -> list[str]:
    names = [n for n in ("a", "c", "z") if live(api, CONFIGMAPS, n, NS)]
    names += ["b"] * bool(live(api, CONFIGMAPS, "b", "other"))
    names += ["w"] * bool(live(api, WIDGETS, "w"))
    return sorted(names)


async def test_waves_are_deleted_highest_first_one_per_call(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _applied(api, applier)
    seen: list[tuple[int | None, list[str]]] = []
    for _ in range(6):
        progress = await delete_next_wave(client, parent, WEBAPPS)
        if progress.done:
            break
        seen.append((progress.wave, sorted(ref.name for ref in progress.deleted)))
        assert progress.wave is not None  # deleting that wave
    assert progress.done
    assert progress.wave is None
    assert seen == [(3, ["c", "w"]), (2, ["b"]), (1, ["a"]), (0, ["z"])]
    assert _present(api) == []


async def test_only_the_highest_wave_is_touched(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _applied(api, applier)
    progress = await delete_next_wave(client, parent, WEBAPPS)
    assert progress.wave == 3
    assert progress.remaining == 5
    assert _present(api) == ["a", "b", "z"]
    deletes = [r for r in api.requests if r.method == "DELETE"]
    assert all(b'"uid"' in r.body for r in deletes)


async def test_a_terminating_member_blocks_lower_waves(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _applied(api, applier)
    held = live(api, CONFIGMAPS, "c", NS)
    assert held is not None
    held["metadata"]["finalizers"] = ["example.com/hold"]
    api.modify(CONFIGMAPS, held)
    first = await delete_next_wave(client, parent, WEBAPPS)
    assert first.wave == 3
    assert sorted(r.name for r in first.deleted) == ["c", "w"]
    deletes_before = sum(r.method == "DELETE" for r in api.requests)
    second = await delete_next_wave(client, parent, WEBAPPS)
    assert second.wave == 3
    assert second.deleted == ()
    assert [r.name for r in second.waiting] == ["c"]
    assert sum(r.method == "DELETE" for r in api.requests) == deletes_before  # no re-delete
    assert _present(api) == ["a", "b", "c", "z"]
    held = live(api, CONFIGMAPS, "c", NS)
    assert held is not None
    held["metadata"]["finalizers"] = []
    api.modify(CONFIGMAPS, held)  # the other controller lets go
    third = await delete_next_wave(client, parent, WEBAPPS)
    assert third.wave == 2
    assert [r.name for r in third.deleted] == ["b"]


async def test_candidates_come_only_from_the_inventory(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _applied(api, applier)
    parent["metadata"]["annotations"][ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS] = "ConfigMap"
    del parent["metadata"]["annotations"]["internal.kro.run/applyset-inventory-hash"]
    for _ in range(5):
        if (await delete_next_wave(client, parent, WEBAPPS)).done:
            break
    assert _present(api) == ["w"]  # Widgets were not recorded, so they were not looked for


async def test_no_members_means_done(api: FakeApiServer, client: Client, applier: Applier) -> None:
    result = await applier.apply(seed_parent(api), WEBAPPS, [])
    progress = await delete_next_wave(client, result.parent_obj, WEBAPPS)
    assert progress.done
    assert progress.remaining == 0


@pytest.mark.parametrize("mutation", ["strip", "tamper-id", "tamper-kinds"])
async def test_untrusted_inventory_blocks_deletion(
    api: FakeApiServer, client: Client, applier: Applier, mutation: str
) -> None:
    parent = await _applied(api, applier)
    meta = parent["metadata"]
    if mutation == "strip":
        meta["labels"].pop(LABEL_APPLYSET_ID)
        meta["annotations"] = {}
    elif mutation == "tamper-id":
        meta["labels"][LABEL_APPLYSET_ID] = "applyset-other-v1"
    else:
        meta["annotations"][ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS] = "ConfigMap"
    with pytest.raises(InvalidInventory) as caught:
        await delete_next_wave(client, parent, WEBAPPS)
    assert str(caught.value).startswith("validate deletion inventory: ")
    assert not [r for r in api.requests if r.method == "DELETE"]


async def test_remove_finalizer_uses_a_merge_patch_with_resource_version(
    api: FakeApiServer, client: Client
) -> None:
    parent = seed_parent(api)
    parent["metadata"]["finalizers"] = ["other/keep", FINALIZER]
    parent = api.modify(WEBAPPS, parent)
    out = await remove_finalizer(client, WEBAPPS, parent, FINALIZER)
    assert out is not None
    assert out["metadata"]["finalizers"] == ["other/keep"]
    patch = [r for r in api.requests if r.method == "PATCH"][-1]
    assert patch.headers["content-type"].startswith("application/merge-patch+json")
    assert b'"resourceVersion"' in patch.body


async def test_remove_finalizer_retries_on_conflict(api: FakeApiServer, client: Client) -> None:
    parent = seed_parent(api)
    parent["metadata"]["finalizers"] = [FINALIZER]
    stale = api.modify(WEBAPPS, parent)
    newer = dict(stale) | {"spec": {"replicas": 2}}
    api.modify(WEBAPPS, newer)  # our copy is now stale
    out = await remove_finalizer(client, WEBAPPS, stale, FINALIZER, attempts=FINALIZER_ATTEMPTS)
    assert out is not None
    assert not out["metadata"].get("finalizers")
    assert live(api, WEBAPPS, "app", NS)["spec"] == {"replicas": 2}  # type: ignore[index]
    assert sum(r.method == "PATCH" for r in api.requests) == 2


async def test_removing_the_last_finalizer_of_a_terminating_parent_deletes_it(
    api: FakeApiServer, client: Client
) -> None:
    parent = seed_parent(api)
    parent["metadata"]["finalizers"] = [FINALIZER]
    api.modify(WEBAPPS, parent)
    api.remove(WEBAPPS, "app", NS)
    terminating = live(api, WEBAPPS, "app", NS)
    assert terminating is not None
    assert terminating["metadata"].get("deletionTimestamp")
    await remove_finalizer(client, WEBAPPS, terminating, FINALIZER)
    assert live(api, WEBAPPS, "app", NS) is None
    assert await remove_finalizer(client, WEBAPPS, terminating, FINALIZER) is None


async def test_remove_finalizer_is_a_no_op_without_it(api: FakeApiServer, client: Client) -> None:
    parent = seed_parent(api)
    assert await remove_finalizer(client, WEBAPPS, parent, FINALIZER) == parent
    assert not [r for r in api.requests if r.method == "PATCH"]
