"""Pruning orphans (R-13, N-10): who is an orphan, in which order they go, and when the
inventory may shrink."""

from __future__ import annotations

from typing import Any

from applyset_fakes import (
    CONFIGMAPS,
    NS,
    WEBAPPS,
    WIDGETS,
    clean,
    configmap,
    desired,
    labelled,
    live,
    seed_parent,
    status_fault,
    widget,
    writes,
)

from kro.api.names import (
    ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES,
    ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS,
    LABEL_APPLYSET_PART_OF,
    LABEL_NODE_ID,
)
from kro.applyset import (
    Applier,
    ApplyResult,
    GroupKind,
    Member,
    MemberLedger,
    ObjectRef,
    orphan_waves,
    prune,
)
from kro.runtime.client import Client
from kro.runtime.errors import Forbidden
from kro.runtime.gvk import GVK, GVR
from kro.testing.fakeapi import FakeApiServer

POSITIONS = {"a": 0, "b": 1, "c": 2, "w": 3}


def _member(name: str, node_id: str | None) -> Member:
    labels = {} if node_id is None else {LABEL_NODE_ID: node_id}
    return Member(
        ObjectRef(CONFIGMAPS, NS, name, name), GVK("", "v1", "ConfigMap"), labels, {}, False
    )


def test_orphan_waves_unknown_nodes_first_then_descending_position() -> None:
    orphans = [
        _member("a1", "a"),
        _member("c1", "c"),
        _member("gone", "removed-node"),
        _member("a2", "a"),
        _member("b1", "b"),
        _member("nolabel", None),
    ]
    waves = orphan_waves(orphans, POSITIONS)
    assert [[m.ref.name for m in wave] for wave in waves] == [
        ["gone", "nolabel"],
        ["c1"],
        ["b1"],
        ["a1", "a2"],
    ]
    assert orphan_waves([], POSITIONS) == []


async def _apply_all(api: FakeApiServer, applier: Applier, parent: dict[str, Any]) -> ApplyResult:
    return await applier.apply(
        parent,
        WEBAPPS,
        [
            desired(api, configmap("a")),
            desired(api, configmap("b")),
            desired(api, configmap("c", namespace="other")),
            desired(api, widget("w"), gvr=WIDGETS, namespaced=False),
        ],
    )


async def test_prune_deletes_what_the_batch_no_longer_applies(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    full = await _apply_all(api, applier, seed_parent(api))
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    before = len(api.requests)
    result = await prune(client, shrunk, positions=POSITIONS, all_resolved=True)
    assert clean(result)
    assert result.changed
    assert sorted(ref.name for ref in result.deleted) == ["b", "c", "w"]
    assert live(api, CONFIGMAPS, "a", NS) is not None
    assert live(api, CONFIGMAPS, "b", NS) is None
    assert live(api, CONFIGMAPS, "c", "other") is None
    assert live(api, WIDGETS, "w") is None
    deletes = [r for r in api.requests[before:] if r.method == "DELETE"]
    assert [r.path.rsplit("/", 1)[1] for r in deletes] == ["w", "c", "b"]  # reverse topo order
    assert all(b'"uid"' in r.body for r in deletes)  # UID preconditions
    lists = [r for r in api.requests[before:] if r.method == "GET"]
    assert any(r.path == "/apis/widgets.example.com/v1/widgets" for r in lists)  # cluster-wide
    assert {r.path for r in lists} >= {
        f"/api/v1/namespaces/{NS}/configmaps",
        "/api/v1/namespaces/other/configmaps",
    }
    assert result.inventory == shrunk.batch_inventory


async def test_clean_prune_lets_the_caller_shrink_the_inventory(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    full = await _apply_all(api, applier, seed_parent(api))
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    result = await prune(client, shrunk, positions=POSITIONS, all_resolved=True)
    assert result.inventory is not None
    written = await applier.ensure_inventory(shrunk.parent, shrunk.parent_obj, result.inventory)
    assert written is not None
    annotations = written["metadata"]["annotations"]
    assert annotations[ANNOTATION_APPLYSET_CONTAINS_GROUP_KINDS] == "ConfigMap"
    assert annotations[ANNOTATION_APPLYSET_ADDITIONAL_NAMESPACES] == ""
    assert await applier.ensure_inventory(shrunk.parent, written, result.inventory) is None


async def test_prune_is_skipped_unless_everything_resolved_and_applied(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    full = await _apply_all(api, applier, seed_parent(api))
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    before = len(api.requests)
    pending = await prune(client, shrunk, positions=POSITIONS, all_resolved=False)
    assert pending.skipped
    assert not clean(pending)
    assert pending.inventory is None
    api.seed(CONFIGMAPS, labelled(configmap("x"), **{LABEL_APPLYSET_PART_OF: "applyset-other-v1"}))
    failed = await applier.apply(
        shrunk.parent_obj, WEBAPPS, [desired(api, configmap("a")), desired(api, configmap("x"))]
    )
    assert failed.has_errors
    skipped = await prune(client, failed, positions=POSITIONS, all_resolved=True)
    assert skipped.skipped
    assert [r.method for r in api.requests[before:] if r.method == "DELETE"] == []
    assert live(api, CONFIGMAPS, "b", NS) is not None


async def test_other_applysets_and_unlabelled_objects_are_left_alone(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    result = await applier.apply(seed_parent(api), WEBAPPS, [desired(api, configmap("a"))])
    api.seed(
        CONFIGMAPS, labelled(configmap("foreign"), **{LABEL_APPLYSET_PART_OF: "applyset-o-v1"})
    )
    api.seed(CONFIGMAPS, configmap("plain"))
    pruned = await prune(client, result, positions=POSITIONS, all_resolved=True)
    assert clean(pruned)
    assert pruned.deleted == ()
    assert live(api, CONFIGMAPS, "foreign", NS) is not None
    assert live(api, CONFIGMAPS, "plain", NS) is not None


async def test_uid_conflict_keeps_the_superset(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    full = await _apply_all(api, applier, seed_parent(api))
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    api.inject(
        status_fault(
            "DELETE",
            "/configmaps/b",
            409,
            "Conflict",
            "Precondition failed: UID in precondition: x, UID in object meta: y",
        )
    )
    result = await prune(client, shrunk, positions=POSITIONS, all_resolved=True)
    assert [ref.name for ref in result.conflicts] == ["b"]
    assert not clean(result)
    assert result.inventory is None
    assert live(api, CONFIGMAPS, "b", NS) is not None


async def test_a_failing_wave_stops_later_waves(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    full = await _apply_all(api, applier, seed_parent(api))
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    api.inject(status_fault("DELETE", "/widgets/w", 403, "Forbidden", "forbidden"))
    result = await prune(client, shrunk, positions=POSITIONS, all_resolved=True)
    assert [f.ref.name for f in result.failures] == ["w"]
    assert isinstance(result.failures[0].error, Forbidden)
    assert result.deleted == ()
    assert result.inventory is None
    assert live(api, CONFIGMAPS, "c", "other") is not None  # lower positions untouched


async def test_terminating_orphans_are_not_deleted_again(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    full = await _apply_all(api, applier, seed_parent(api))
    held = live(api, CONFIGMAPS, "b", NS)
    assert held is not None
    held["metadata"]["finalizers"] = ["example.com/hold"]
    api.modify(CONFIGMAPS, held)
    api.remove(CONFIGMAPS, "b", NS)  # now terminating
    keep = [
        desired(api, configmap("a")),
        desired(api, configmap("c", namespace="other")),
        desired(api, widget("w"), gvr=WIDGETS, namespaced=False),
    ]
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, keep)
    before = len(api.requests)
    result = await prune(client, shrunk, positions=POSITIONS, all_resolved=True)
    assert clean(result)
    assert result.deleted == ()
    assert [r for r in api.requests[before:] if r.method == "DELETE"] == []


async def test_kinds_no_longer_served_are_skipped(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    full = await _apply_all(api, applier, seed_parent(api))
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    api.remove_resource(WIDGETS)  # the CRD went away, and its objects with it
    result = await prune(client, shrunk, positions=POSITIONS, all_resolved=True)
    assert clean(result)
    assert sorted(ref.name for ref in result.deleted) == ["b", "c"]
    assert (
        GroupKind("widgets.example.com", "Widget")
        not in (result.inventory or shrunk.inventory).group_kinds
    )


async def test_recorded_kinds_at_a_non_preferred_version_are_found(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    from kro.testing.fakeapi import FakeResource

    api.add_resource(FakeResource("example.kro.run", "v1beta1", "gadgets", "Gadget"))
    gadgets = GVR("example.kro.run", "v1beta1", "gadgets")
    gadget = {
        "apiVersion": "example.kro.run/v1beta1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": NS, "labels": {LABEL_NODE_ID: "g"}},
    }
    full = await applier.apply(seed_parent(api), WEBAPPS, [desired(api, gadget, gvr=gadgets)])
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, [])
    result = await prune(client, shrunk, positions={}, all_resolved=True)
    assert [ref.name for ref in result.deleted] == ["g"]
    assert writes(api)[-1].endswith("/gadgets/g")


async def test_cluster_scoped_parent_records_every_namespace(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    parent = api.seed(WIDGETS, widget("root"))
    full = await applier.apply(
        parent,
        WIDGETS,
        [desired(api, configmap("a")), desired(api, configmap("d", namespace="default"))],
    )
    assert full.inventory.additional_namespaces == {NS, "default"}
    shrunk = await applier.apply(full.parent_obj, WIDGETS, [])
    before = len(api.requests)
    result = await prune(client, shrunk, positions={}, all_resolved=True)
    assert sorted(ref.name for ref in result.deleted) == ["a", "d"]
    listed = {r.path for r in api.requests[before:] if r.method == "GET"}
    assert {
        f"/api/v1/namespaces/{NS}/configmaps",
        "/api/v1/namespaces/default/configmaps",
    } <= listed


def _lists(api: FakeApiServer, before: int) -> list[str]:
    return [r.path for r in api.requests[before:] if r.method == "GET"]


async def test_the_ledger_skips_the_list_only_while_it_knows_every_member(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    ledger = MemberLedger()
    first = await _apply_all(api, applier, seed_parent(api))
    ledger.started(first.parent.id)  # kro wrote its first inventory: no member existed before
    before = len(api.requests)
    started = await prune(client, first, positions=POSITIONS, all_resolved=True, ledger=ledger)
    assert clean(started)
    assert started.inventory == first.batch_inventory
    assert _lists(api, before) == []

    # The same members applied again: the ledger knows there is nothing to delete.
    again = await _apply_all(api, applier, first.parent_obj)
    before = len(api.requests)
    assert clean(await prune(client, again, positions=POSITIONS, all_resolved=True, ledger=ledger))
    assert _lists(api, before) == []

    # Fewer applied: the list runs, and deletes what is no longer applied.
    shrunk = await applier.apply(again.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    before = len(api.requests)
    pruned = await prune(client, shrunk, positions=POSITIONS, all_resolved=True, ledger=ledger)
    assert sorted(ref.name for ref in pruned.deleted) == ["b", "c", "w"]
    assert f"/api/v1/namespaces/{NS}/configmaps" in _lists(api, before)

    # An ApplySet this process never saw start is listed.
    other = MemberLedger()
    before = len(api.requests)
    await prune(client, shrunk, positions=POSITIONS, all_resolved=True, ledger=other)
    assert _lists(api, before) != []


async def test_a_conflicted_prune_makes_the_ledger_forget(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    ledger = MemberLedger()
    full = await _apply_all(api, applier, seed_parent(api))
    shrunk = await applier.apply(full.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    ledger.settled(shrunk.parent.id, full.applied_uids)  # knows the full set: must list
    api.inject(status_fault("DELETE", "/configmaps/b", 409, "Conflict", "Precondition failed"))
    result = await prune(client, shrunk, positions=POSITIONS, all_resolved=True, ledger=ledger)
    assert [ref.name for ref in result.conflicts] == ["b"]
    assert not ledger.nothing_to_prune(shrunk.parent.id, full.applied_uids)  # forgotten


async def test_what_a_pass_that_could_not_prune_applied_is_pruned_later(
    api: FakeApiServer, client: Client, applier: Applier
) -> None:
    """A new ApplySet's first pass applies everything but waits for data (no prune); the next
    pass no longer wants most of it: the ledger knows those members exist, so it lists."""
    ledger = MemberLedger()
    first = await _apply_all(api, applier, seed_parent(api))
    ledger.started(first.parent.id)
    assert (
        await prune(client, first, positions=POSITIONS, all_resolved=False, ledger=ledger)
    ).skipped
    shrunk = await applier.apply(first.parent_obj, WEBAPPS, [desired(api, configmap("a"))])
    pruned = await prune(client, shrunk, positions=POSITIONS, all_resolved=True, ledger=ledger)
    assert sorted(ref.name for ref in pruned.deleted) == ["b", "c", "w"]
