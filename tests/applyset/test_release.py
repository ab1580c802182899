"""deletionPolicy `Orphaned` (V-33..V-36): which keys a release removes, the write it makes,
and how deletion and prune release instead of delete.

The expected keys are the ones the v0.10 behaviour lists: every label and annotation under
`kro.run/` or `internal.kro.run/`, the label `applyset.kubernetes.io/part-of`, and
`app.kubernetes.io/managed-by` only when it says `kro`; nothing else of the object changes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from applyset_fakes import (
    CONFIGMAPS,
    NS,
    WEBAPPS,
    clean,
    configmap,
    desired,
    live,
    seed_parent,
    status_fault,
)

from kro.applyset import Applier, Member, ObjectRef, delete_next_wave, list_members, prune
from kro.applyset.inventory import Parent, read_inventory
from kro.applyset.members import (
    Outcome,
    is_orphaned,
    release_member,
    release_patch,
)
from kro.engine.applyset_ownership import ApplySetOwnership
from kro.engine.ownership import TeardownStep, teardown_step
from kro.runtime.client import Client
from kro.runtime.gvk import GVK
from kro.testing.fakeapi import FakeApiServer

ORPHANED = {"internal.kro.run/deletion-policy": "Orphaned"}

KRO_LABELS = {
    "kro.run/owned": "true",
    "kro.run/node-id": "ledger",
    "kro.run/instance-id": "0b5e",
    "kro.run/instance-name": "keepsake",
    "kro.run/instance-namespace": "default",
    "kro.run/kro-version": "v0.10.0",
    "kro.run/collection-index": "2",
    "kro.run/collection-size": "3",
    "applyset.kubernetes.io/part-of": "applyset-abc-v1",
    "app.kubernetes.io/managed-by": "kro",
}
KRO_ANNOTATIONS = {
    "internal.kro.run/apply-order": "1",
    "internal.kro.run/node-path": "ledger",
    "internal.kro.run/deletion-policy": "Orphaned",
}
AUTHOR_LABELS = {"retention.example.com/tier": "keep", "app.kubernetes.io/name": "ledger"}
AUTHOR_ANNOTATIONS = {"example.com/note": "hand over to team b"}


def _member(labels: dict[str, str], annotations: dict[str, str], *, version: str = "7") -> Member:
    ref = ObjectRef(CONFIGMAPS, NS, "ledger", "uid-ledger")
    return Member(
        ref, GVK("", "v1", "ConfigMap"), labels, annotations, False, resource_version=version
    )


def claim_keys(labels: dict[str, str], annotations: dict[str, str]) -> tuple[list[str], list[str]]:
    """The (labels, annotations) the release patch of such a member nulls, in its order."""
    patch: dict[str, Any] = release_patch(_member(labels, annotations)) or {"metadata": {}}
    nulled = patch["metadata"]
    return list(nulled.get("labels") or {}), list(nulled.get("annotations") or {})


def test_release_removes_exactly_kros_keys() -> None:
    labels, annotations = claim_keys(
        {**KRO_LABELS, **AUTHOR_LABELS}, {**KRO_ANNOTATIONS, **AUTHOR_ANNOTATIONS}
    )
    assert labels == sorted(KRO_LABELS)
    assert annotations == sorted(KRO_ANNOTATIONS)


def test_managed_by_is_removed_only_when_it_says_kro() -> None:
    labels, _ = claim_keys({"app.kubernetes.io/managed-by": "Helm"}, {})
    assert labels == []
    labels, _ = claim_keys({"app.kubernetes.io/managed-by": "kro"}, {})
    assert labels == ["app.kubernetes.io/managed-by"]


def test_the_release_patch_nulls_those_keys_and_carries_the_listed_version() -> None:
    member = _member({**KRO_LABELS, **AUTHOR_LABELS}, {**KRO_ANNOTATIONS, **AUTHOR_ANNOTATIONS})
    assert release_patch(member) == {
        "metadata": {
            "resourceVersion": "7",
            "labels": dict.fromkeys(KRO_LABELS),
            "annotations": dict.fromkeys(KRO_ANNOTATIONS),
        }
    }
    assert release_patch(_member(AUTHOR_LABELS, AUTHOR_ANNOTATIONS)) is None


@pytest.mark.parametrize(
    ("value", "orphaned"),
    [("Orphaned", True), ("orphaned", False), ("Delete", False), ("Orphan", False), (None, False)],
)
def test_only_exactly_orphaned_on_the_live_object_releases(
    value: str | None, orphaned: bool
) -> None:
    annotations = {} if value is None else {"internal.kro.run/deletion-policy": value}
    assert is_orphaned(_member({}, annotations)) is orphaned


def _kept(name: str, *, order: int = 1, orphaned: bool = True) -> dict[str, Any]:
    """A ConfigMap of one node, with an author label and an ownerReference."""
    obj = configmap(name, order=order)
    obj["metadata"]["labels"].update(AUTHOR_LABELS)
    obj["metadata"]["annotations"] = {
        **obj["metadata"].get("annotations", {}),
        **(ORPHANED if orphaned else {}),
        **AUTHOR_ANNOTATIONS,
    }
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "someone", "uid": "uid-someone"}
    ]
    return obj


async def _members(client: Client, parent_obj: dict[str, Any]) -> dict[str, Member]:
    parent = Parent.from_object(parent_obj, WEBAPPS)
    inventory = read_inventory(parent_obj, parent)
    assert inventory is not None
    return {m.ref.name: m for m in await list_members(client, parent, inventory)}


def _assert_released(api: FakeApiServer, name: str, before: dict[str, Any]) -> None:
    after = live(api, CONFIGMAPS, name, NS)
    assert after is not None, f"{name} was deleted"
    meta = after["metadata"]
    assert meta["uid"] == before["metadata"]["uid"]
    assert meta.get("labels") == {**AUTHOR_LABELS}
    assert meta.get("annotations") == {**AUTHOR_ANNOTATIONS}
    assert meta["ownerReferences"] == before["metadata"]["ownerReferences"]
    assert after["data"] == before["data"]


async def test_release_member_writes_once_and_keeps_the_rest(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    result = await applier.apply(seed_parent(api), WEBAPPS, [desired(api, _kept("ledger"))])
    before = live(api, CONFIGMAPS, "ledger", NS)
    assert before is not None
    member = (await _members(client, result.parent_obj))["ledger"]
    writes_before = len(api.requests)
    assert await release_member(client, member) is Outcome.RELEASED
    (patch,) = [r for r in api.requests[writes_before:] if r.method != "GET"]
    assert patch.method == "PATCH"
    assert patch.headers["content-type"].startswith("application/merge-patch+json")
    assert json.loads(patch.body)["metadata"]["resourceVersion"] == member.resource_version
    _assert_released(api, "ledger", before)
    # Nothing of kro's is left: no second write.
    again = (await client.get(CONFIGMAPS, "ledger", namespace=NS))["metadata"]
    unclaimed = Member(
        member.ref,
        member.gvk,
        again.get("labels") or {},
        again.get("annotations") or {},
        False,
        resource_version=again["resourceVersion"],
    )
    writes_before = len(api.requests)
    assert await release_member(client, unclaimed) is Outcome.UNCLAIMED
    assert [r for r in api.requests[writes_before:] if r.method != "GET"] == []


async def test_a_member_changed_since_listed_is_a_conflict_and_one_gone_is_done(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    result = await applier.apply(seed_parent(api), WEBAPPS, [desired(api, _kept("ledger"))])
    member = (await _members(client, result.parent_obj))["ledger"]
    current = live(api, CONFIGMAPS, "ledger", NS)
    assert current is not None
    current["data"] = {"key": "edited by someone"}
    api.modify(CONFIGMAPS, current)
    assert await release_member(client, member) is Outcome.CONFLICT
    after = live(api, CONFIGMAPS, "ledger", NS)
    assert after is not None
    assert after["metadata"]["labels"]["kro.run/node-id"] == "ledger"  # still claimed
    api.remove(CONFIGMAPS, "ledger", NS)
    assert await release_member(client, member) is Outcome.GONE


async def _three(api: FakeApiServer, applier: Applier) -> dict[str, Any]:
    """keep (wave 3, Orphaned), scratch (wave 2), base (wave 1, Orphaned)."""
    result = await applier.apply(
        seed_parent(api),
        WEBAPPS,
        [
            desired(api, _kept("keep", order=3)),
            desired(api, _kept("scratch", order=2, orphaned=False)),
            desired(api, _kept("base", order=1)),
        ],
    )
    assert not result.has_errors
    return result.parent_obj


async def test_deletion_releases_orphans_before_the_wave_arithmetic(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _three(api, applier)
    before = {n: live(api, CONFIGMAPS, n, NS) for n in ("keep", "base")}
    first = await delete_next_wave(client, parent, WEBAPPS)
    # The retained object of wave 3 does not hold back wave 2.
    assert first.wave == 2
    assert [r.name for r in first.deleted] == ["scratch"]
    assert sorted(r.name for r in first.released) == ["base", "keep"]
    second = await delete_next_wave(client, parent, WEBAPPS)
    assert second.done  # the released ones are no members any more
    assert live(api, CONFIGMAPS, "scratch", NS) is None
    for name, obj in before.items():
        assert obj is not None
        _assert_released(api, name, obj)


async def _finalized_parent(api: FakeApiServer, applier: Applier) -> dict[str, Any]:
    """A parent holding a finalizer, with one Orphaned child `keep`."""
    result = await applier.apply(seed_parent(api), WEBAPPS, [desired(api, _kept("keep"))])
    parent = result.parent_obj
    parent["metadata"]["finalizers"] = ["test.kro.run/finalizer"]
    return api.modify(WEBAPPS, parent)


async def _teardown(client: Client, applier: Applier, parent: dict[str, Any]) -> TeardownStep:
    """One step of the parent's teardown, as an instance takes it."""
    ownership = ApplySetOwnership(applier=applier, client=client, gvr=WEBAPPS)
    return await teardown_step(ownership, client, parent, WEBAPPS, "test.kro.run/finalizer")


async def test_releasing_the_last_members_is_done_in_the_same_step(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _finalized_parent(api, applier)
    step = await _teardown(client, applier, parent)
    assert step.done
    assert (live(api, WEBAPPS, "app", NS) or {})["metadata"].get("finalizers") in (None, [])
    assert live(api, CONFIGMAPS, "keep", NS) is not None


async def test_a_failed_release_keeps_the_finalizer(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _finalized_parent(api, applier)
    api.inject(status_fault("PATCH", "/configmaps/keep", 403, "Forbidden", "no patch for you"))
    step = await _teardown(client, applier, parent)
    assert not step.done
    assert step.transient
    assert "release orphaned resource" in step.blocked
    assert "no patch for you" in step.blocked
    assert (live(api, WEBAPPS, "app", NS) or {})["metadata"]["finalizers"] == [
        "test.kro.run/finalizer"
    ]
    kept = live(api, CONFIGMAPS, "keep", NS)
    assert kept is not None  # neither released nor deleted
    assert kept["metadata"]["labels"]["kro.run/node-id"] == "keep"


async def test_a_release_conflict_on_deletion_waits_for_the_next_step(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    result = await applier.apply(seed_parent(api), WEBAPPS, [desired(api, _kept("keep"))])
    api.inject(status_fault("PATCH", "/configmaps/keep", 409, "Conflict", "object was modified"))
    first = await delete_next_wave(client, result.parent_obj, WEBAPPS)
    assert not first.done
    assert first.failures == ()
    assert [r.name for r in first.conflicts] == ["keep"]
    assert first.wave is None  # releasing only: no wave to delete
    second = await delete_next_wave(client, result.parent_obj, WEBAPPS)
    assert second.done
    assert live(api, CONFIGMAPS, "keep", NS) is not None


async def test_prune_releases_orphans_and_deletes_the_rest(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _three(api, applier)
    kept = live(api, CONFIGMAPS, "keep", NS)
    shrunk = await applier.apply(parent, WEBAPPS, [desired(api, _kept("base", order=1))])
    result = await prune(client, shrunk, positions={}, all_resolved=True)
    assert clean(result)
    assert result.changed
    assert [r.name for r in result.released] == ["keep"]
    assert [r.name for r in result.deleted] == ["scratch"]
    assert result.inventory == shrunk.batch_inventory
    assert kept is not None
    _assert_released(api, "keep", kept)
    # Released, it is never again a candidate: the next prune finds nothing to do.
    before = len(api.requests)
    again = await prune(client, shrunk, positions={}, all_resolved=True)
    assert clean(again)
    assert (again.released, again.deleted) == ((), ())
    assert [r for r in api.requests[before:] if r.method != "GET"] == []


async def test_a_failed_release_on_prune_is_a_failure_and_keeps_the_inventory(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = await _three(api, applier)
    shrunk = await applier.apply(parent, WEBAPPS, [desired(api, _kept("base", order=1))])
    api.inject(status_fault("PATCH", "/configmaps/keep", 500, "InternalError", "etcd is sad"))
    result = await prune(client, shrunk, positions={}, all_resolved=True)
    assert not clean(result)
    assert result.inventory is None
    (failure,) = result.failures
    assert failure.ref.name == "keep"
    assert failure.message.startswith("release orphan ")
    assert "etcd is sad" in failure.message
    assert [r.name for r in result.deleted] == ["scratch"]  # a release orders nothing
    kept = live(api, CONFIGMAPS, "keep", NS)
    assert kept is not None
    assert kept["metadata"]["labels"]["kro.run/node-id"] == "keep"


async def test_explain_shows_the_wave_deletion_works_on(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    """`kro explain` lists members as deletion does: a retained member is no part of a wave."""
    from kro.cli.explain_cause import summarize_deletion
    from kro.cli.explain_dryrun import planned_deletion

    parent = await _three(api, applier)
    live_members = await planned_deletion(client, parent, WEBAPPS)
    assert [m.obj.name for m in live_members.members] == ["scratch"]
    assert summarize_deletion(parent, live_members).wave == 2
