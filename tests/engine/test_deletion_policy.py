"""deletionPolicy in a pass (V-32, V-34): the annotation every apply of an `Orphaned` resource
carries (collection items too, and an `annotations: ${...}` result), its absence for `Delete`,
and the release of what a pass stops rendering (includeWhen false, a collection shrinking)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from test_graph_pass import CONFIGMAPS, NS, OWNERS, graph, owner, run

from kro.applyset import Applier, ApplierOptions, ReleaseFailed
from kro.engine.decorate import decorate
from kro.graph.model import Graph
from kro.runtime.client import Client
from kro.testing.fakeapi import FakeApiServer, Fault

POLICY = "internal.kro.run/deletion-policy"
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}


def test_orphaned_is_stamped_and_wins_over_what_the_template_said() -> None:
    smuggled = {**CM, "metadata": {"name": "x", "annotations": {POLICY: "Delete", "a": "b"}}}
    out = decorate(smuggled, {}, 1, node_path="cm", deletion_policy="Orphaned")
    assert out["metadata"]["annotations"] == {
        POLICY: "Orphaned",
        "a": "b",
        "internal.kro.run/apply-order": "1",
        "internal.kro.run/node-path": "cm",
    }
    created = decorate(
        {"apiVersion": "v1", "kind": "ConfigMap"}, {}, 1, node_path="cm", deletion_policy="Orphaned"
    )
    assert created["metadata"]["annotations"][POLICY] == "Orphaned"


def test_delete_is_the_absence_of_the_annotation() -> None:
    smuggled = {**CM, "metadata": {"name": "x", "annotations": {POLICY: "Orphaned"}}}
    assert (
        POLICY
        not in decorate(smuggled, {}, 1, node_path="cm", deletion_policy="Delete")["metadata"][
            "annotations"
        ]
    )
    assert (
        POLICY
        not in decorate(CM, {}, 1, node_path="cm", deletion_policy="Delete")["metadata"][
            "annotations"
        ]
    )


def test_without_the_gate_nothing_is_enforced() -> None:
    """Gate off (policy None): the rendered object goes out as it was rendered."""
    obj = {**CM, "metadata": {"name": "x", "annotations": {"a": "b"}}}
    assert decorate(obj, {}, 1, node_path="cm")["metadata"]["annotations"] == {
        "a": "b",
        "internal.kro.run/apply-order": "1",
        "internal.kro.run/node-path": "cm",
    }


def _graph(resources: list[dict[str, Any]], spec: Mapping[str, str]) -> Graph:
    return graph(resources, spec, deletion_policy=True)


def _cm(node_id: str, policy: str | None, **extra: Any) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "id": node_id,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "${schema.metadata.name}-" + node_id,
                "labels": {"retention.example.com/tier": "keep"},
            },
            "data": {"k": "v"},
        },
        **extra,
    }
    if policy is not None:
        resource["deletionPolicy"] = policy
    return resource


def _live(api: FakeApiServer, name: str) -> dict[str, Any] | None:
    return api.object(CONFIGMAPS, name, NS)


def _annotations(api: FakeApiServer, name: str) -> dict[str, str]:
    obj = _live(api, name)
    assert obj is not None, name
    return dict(obj["metadata"].get("annotations") or {})


def _assert_released(api: FakeApiServer, name: str, uid: str) -> None:
    obj = _live(api, name)
    assert obj is not None, f"{name} was deleted"
    meta = obj["metadata"]
    assert meta["uid"] == uid
    assert meta.get("annotations") in (None, {})
    # kro's keys went; the author's label and this test owner's own labels stayed.
    assert meta["labels"] == {
        "retention.example.com/tier": "keep",
        "test.kro.run/owner": meta["labels"]["test.kro.run/owner"],
        "test.kro.run/node": meta["labels"]["test.kro.run/node"],
    }
    assert obj["data"] == {"k": "v"}


async def test_include_when_false_releases_an_orphaned_resource(
    api: FakeApiServer, client: Client
) -> None:
    g = _graph(
        [
            _cm("ledger", "Orphaned", includeWhen=["${schema.spec.keep}"]),
            _cm("scratch", "Delete", includeWhen=["${schema.spec.keep}"]),
            _cm("plain", None),
        ],
        {"keep": "boolean"},
    )
    applier = Applier(client, ApplierOptions(tooling="kro/test"))
    await run(g, client, owner(api, {"keep": True}), applier=applier)
    assert _annotations(api, "o-ledger")[POLICY] == "Orphaned"
    assert POLICY not in _annotations(api, "o-scratch")
    assert POLICY not in _annotations(api, "o-plain")
    uid = (_live(api, "o-ledger") or {})["metadata"]["uid"]
    obj = dict(api.object(OWNERS, "o", NS) or {})
    obj["spec"] = {"keep": False}
    result = await run(g, client, api.modify(OWNERS, obj), applier=applier)
    assert result.pruned
    assert _live(api, "o-scratch") is None
    _assert_released(api, "o-ledger", uid)
    # Never again a candidate: another pass neither deletes nor writes it.
    version = (_live(api, "o-ledger") or {})["metadata"]["resourceVersion"]
    await run(g, client, dict(api.object(OWNERS, "o", NS) or {}), applier=applier)
    assert (_live(api, "o-ledger") or {})["metadata"]["resourceVersion"] == version


async def test_a_shrinking_collection_releases_its_dropped_items(
    api: FakeApiServer, client: Client
) -> None:
    entries = {
        "id": "entries",
        "deletionPolicy": "Orphaned",
        "forEach": [{"n": "${schema.spec.names}"}],
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "${schema.metadata.name}-${n}",
                "labels": {"retention.example.com/tier": "keep"},
            },
            "data": {"k": "v"},
        },
    }
    g = _graph([entries], {"names": "[]string"})
    applier = Applier(client, ApplierOptions(tooling="kro/test"))
    await run(g, client, owner(api, {"names": ["a", "b", "c"]}), applier=applier)
    for item in ("a", "b", "c"):
        assert _annotations(api, f"o-{item}")[POLICY] == "Orphaned"
    uids = {i: (_live(api, f"o-{i}") or {})["metadata"]["uid"] for i in ("b", "c")}
    obj = dict(api.object(OWNERS, "o", NS) or {})
    obj["spec"] = {"names": ["a"]}
    await run(g, client, api.modify(OWNERS, obj), applier=applier)
    assert _annotations(api, "o-a")[POLICY] == "Orphaned"
    for item, uid in uids.items():
        _assert_released(api, f"o-{item}", uid)


async def test_an_annotations_expression_gets_the_policy_merged_or_filtered(
    api: FakeApiServer, client: Client
) -> None:
    def resource(node_id: str, policy: str) -> dict[str, Any]:
        out = _cm(node_id, policy)
        out["template"]["metadata"]["annotations"] = "${schema.spec.notes}"
        return out

    g = _graph(
        [resource("kept", "Orphaned"), resource("gone", "Delete")], {"notes": "map[string]string"}
    )
    notes = {"example.com/note": "hi", POLICY: "Orphaned"}  # an instance trying to smuggle it
    await run(g, client, owner(api, {"notes": notes}))
    assert _annotations(api, "o-kept")[POLICY] == "Orphaned"
    assert _annotations(api, "o-kept")["example.com/note"] == "hi"
    assert POLICY not in _annotations(api, "o-gone")
    assert _annotations(api, "o-gone")["example.com/note"] == "hi"


async def test_flipping_back_to_delete_drops_the_annotation(
    api: FakeApiServer, client: Client
) -> None:
    applier = Applier(client, ApplierOptions(tooling="kro/test"))
    await run(_graph([_cm("ledger", "Orphaned")], {}), client, owner(api), applier=applier)
    assert _annotations(api, "o-ledger")[POLICY] == "Orphaned"
    obj = dict(api.object(OWNERS, "o", NS) or {})
    await run(_graph([_cm("ledger", "Delete")], {}), client, obj, applier=applier)
    assert POLICY not in _annotations(api, "o-ledger")


async def test_a_failed_release_on_prune_is_the_pass_error(
    api: FakeApiServer, client: Client
) -> None:
    g = _graph(
        [_cm("ledger", "Orphaned", includeWhen=["${schema.spec.keep}"])], {"keep": "boolean"}
    )
    applier = Applier(client, ApplierOptions(tooling="kro/test"))
    await run(g, client, owner(api, {"keep": True}), applier=applier)
    obj = dict(api.object(OWNERS, "o", NS) or {})
    obj["spec"] = {"keep": False}
    obj = api.modify(OWNERS, obj)
    forbidden = {"kind": "Status", "status": "Failure", "code": 403, "message": "no patch"}
    api.inject(
        Fault("status", method="PATCH", path="/configmaps/o-ledger", status=403, body=forbidden)
    )
    with pytest.raises(ReleaseFailed) as caught:
        await run(g, client, obj, applier=applier)
    assert str(caught.value).startswith("release orphan ")
    assert "no patch" in str(caught.value)
    assert _annotations(api, "o-ledger")[POLICY] == "Orphaned"  # still claimed
    # The recorded inventory did not shrink: the next pass finds it again and releases it.
    uid = (_live(api, "o-ledger") or {})["metadata"]["uid"]
    await run(g, client, dict(api.object(OWNERS, "o", NS) or {}), applier=applier)
    _assert_released(api, "o-ledger", uid)
