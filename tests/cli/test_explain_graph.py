"""`kro explain graph NAME`: a live Graph explained by the engine's dry run (kro.cli.explain_graph),
with its nodes compiled offline and the cluster served from a dict by a fake client that fails
the test on any write."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pytest

from kro.api.graph import patch_field_manager, template_field_manager
from kro.cli import explain_graph as explain_graph_module
from kro.cli.explain import add_explain_command
from kro.cli.explain_dryrun import ReadingClient, dry_run
from kro.cli.explain_format import SecretMask, render
from kro.cli.explain_graph import explain_graph, graph_root_cause, recorded_apply_errors
from kro.cli.explain_report import GraphReport, NodeReport, NodeStatus
from kro.controllers.graph.inventory import GRAPHS
from kro.graph.graph_kind import compile_graph
from kro.graph.model import Graph
from kro.graph.resolver import OfflineSchemaResolver
from kro.runtime.client import Client
from kro.runtime.errors import NotFound
from kro.runtime.gvk import GVR

NS = "team"
UID = "0b7e5a52-graph"
MANAGER = template_field_manager(UID)

NODES: list[dict[str, Any]] = [
    {"id": "naming", "def": {"prefix": "shop"}},
    {
        "id": "settings",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${naming.prefix}-settings"},
            "data": {"color": "blue"},
        },
    },
    {
        "id": "copy",
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${naming.prefix}-copy"},
            "data": {"color": "${settings.data.color}"},
        },
    },
]


def graph_object(
    nodes: Sequence[Mapping[str, Any]] = NODES, status: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Graph",
        "metadata": {"name": "shop", "namespace": NS, "uid": UID, "generation": 1},
        "spec": {"nodes": list(nodes)},
        "status": dict(status or {}),
    }


def compiled(obj: Mapping[str, Any]) -> Graph:
    return compile_graph(obj, OfflineSchemaResolver.from_files())


def _fields(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    return {f"f:{k}": _fields(v) for k, v in value.items()}


def applied(body: Mapping[str, Any], manager: str, subresource: str = "") -> dict[str, Any]:
    """`body` as the API server returns it after `manager` applied exactly it (through
    `subresource`, for a status patch)."""
    metadata = dict(body["metadata"])
    owned = {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "metadata")}
    owned_meta = {k: v for k, v in metadata.items() if k not in ("name", "namespace")}
    fields = {**_fields(owned), **({"f:metadata": _fields(owned_meta)} if owned_meta else {})}
    entry = {"manager": manager, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return {**body, "metadata": {**metadata, "uid": f"uid-{metadata['name']}",
                                 "resourceVersion": "7", "managedFields": [entry]}}  # fmt: skip


def decorated_settings() -> dict[str, Any]:
    """What the Graph controller applies for `settings` (its marks, V-61)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "shop-settings",
            "namespace": NS,
            "labels": {"kro.run/node-id": "settings"},
            "annotations": {
                "internal.kro.run/apply-order": "2",
                "internal.kro.run/node-path": "settings",
            },
        },
        "data": {"color": "blue"},
    }


class Cluster:
    """Objects by (resource, name) answered to GET and LIST; any write fails the test."""

    def __init__(self, *objects: Mapping[str, Any]) -> None:
        self.objects = {(f"{o['kind'].lower()}s", o["metadata"]["name"]): dict(o) for o in objects}

    async def get(self, gvr: GVR, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        found = self.objects.get((gvr.resource, name))
        if found is None:
            raise NotFound(status=404, reason="NotFound", message=f"{name} not found")
        return dict(found)

    async def list_all(
        self, gvr: GVR, *, namespace: str | None = None, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        items = [dict(o) for (resource, _), o in self.objects.items() if resource == gvr.resource]
        return items, "1"

    def __getattr__(self, verb: str) -> Any:
        raise AssertionError(f"explain called {verb}")


async def dry(
    obj: dict[str, Any], cluster: Cluster
) -> tuple[dict[str, NodeReport], tuple[str, ...]]:
    reader = ReadingClient(cast(Client, cluster), obj, SecretMask())
    done = await dry_run(compiled(obj), obj, GRAPHS, reader, recorded_apply_errors(obj))
    return {n.id: n for n in done.nodes}, done.would_write


async def test_nothing_applied_yet_is_missing_and_would_be_created() -> None:
    nodes, writes = await dry(graph_object(), Cluster())
    assert nodes["naming"].status is NodeStatus.APPLIED  # a def is computed, nothing to apply
    assert nodes["settings"].status is NodeStatus.MISSING
    # copy reads settings' data, which does not exist yet: it waits on settings.
    assert nodes["copy"].status is NodeStatus.WAITING
    assert nodes["copy"].waiting_on == "settings"
    assert writes == (f"create ConfigMap {NS}/shop-settings",)


async def test_an_object_the_graph_applied_is_judged_by_the_graphs_own_manager() -> None:
    mine = applied(decorated_settings(), MANAGER)
    nodes, writes = await dry(graph_object(), Cluster(mine))
    assert nodes["settings"].status is NodeStatus.APPLIED
    assert nodes["copy"].status is NodeStatus.MISSING  # it can render now: blue
    assert writes == (f"create ConfigMap {NS}/shop-copy",)
    # The same fields held by another manager (an RGD's ApplySet manager, say) are not ours:
    # the next pass would apply them under the Graph's manager.
    theirs = applied(decorated_settings(), "kro.run/applyset")
    _, writes = await dry(graph_object(), Cluster(theirs))
    assert f"apply ConfigMap {NS}/shop-settings" in writes


async def test_a_refusal_the_controller_recorded_is_the_nodes_error() -> None:
    status = {
        "conditions": [
            {
                "type": "ResourcesConverged",
                "status": "False",
                "reason": "ApplyFailed",
                "message": 'node "settings": 422 Invalid: data: too long',
            }
        ]
    }
    obj = graph_object(status=status)
    nodes, _ = await dry(obj, Cluster())
    assert nodes["settings"].status is NodeStatus.ERROR
    assert nodes["settings"].message == "422 Invalid: data: too long"
    root = graph_root_cause(obj, list(nodes.values()), "")
    assert root.startswith('node "settings" (ConfigMap team/shop-settings) failed')


async def test_a_missing_ref_is_the_root_cause() -> None:
    ref = {
        "id": "db",
        "ref": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-credentials"}},
    }
    obj = graph_object([ref])
    nodes, writes = await dry(obj, Cluster())
    assert nodes["db"].status is NodeStatus.WAITING
    assert writes == ()
    root = graph_root_cause(obj, list(nodes.values()), "")
    assert "Secret team/db-credentials does not exist" in root


def condition(kind: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "observedGeneration": 1}  # fmt: skip


@pytest.mark.parametrize(
    ("status", "deleting", "expected"),
    [
        (
            {"conditions": [condition("Accepted", "False", "InvalidGraph", "bad id")]},
            False,
            "the Graph is not accepted (InvalidGraph): bad id",
        ),
        (
            {"conditions": [condition("Ready", "True", "Ready")]},
            False,
            "no problem found: the Graph is Ready and every node is applied and ready",
        ),
        ({}, False, "kro has not reported on generation 1 of this Graph yet"),
        (
            {
                "managedResources": [
                    {
                        "nodeID": "a",
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": "x",
                        "namespace": NS,
                        "uid": "u",
                    }
                ]
            },
            True,
            "the Graph is being deleted: kro deletes the 1 objects recorded",
        ),
    ],
    ids=["not-accepted", "ready", "never-reported", "deleting"],
)
def test_root_cause_without_a_node_problem(
    status: dict[str, Any], deleting: bool, expected: str
) -> None:
    obj = graph_object(status=status)
    if deleting:
        obj["metadata"] |= {"deletionTimestamp": "2026-01-01T00:00:00Z",
                            "finalizers": ["kro.run/graph-finalizer"]}  # fmt: skip
    assert graph_root_cause(obj, [], "").startswith(expected)


@pytest.fixture
def offline_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Graph compiles with the offline schemas instead of the cluster's OpenAPI."""

    async def compile_offline(client: Any, obj: Mapping[str, Any]) -> Graph:
        return compiled(obj)

    monkeypatch.setattr(explain_graph_module, "_compile", compile_offline)


@pytest.mark.usefixtures("offline_compile")
async def test_the_whole_report() -> None:
    status = {
        "conditions": [
            condition("Accepted", "True", "Compiled", "compiled 3 nodes"),
            condition("ResourcesConverged", "False", "DataPending", 'node "copy": ...'),
            condition("Ready", "False", "DataPending", 'node "copy": ...'),
        ],
        "managedResources": [
            {
                "nodeID": "settings",
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "namespace": NS,
                "name": "shop-settings",
                "uid": "uid-shop-settings",
            },
            {
                "nodeID": "copy",
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "namespace": NS,
                "name": "shop-copy",
            },
        ],
        "appliedServiceAccount": f"system:serviceaccount:{NS}:default",
    }
    obj = graph_object(status=status)
    cluster = Cluster(obj, applied(decorated_settings(), MANAGER))
    report = await explain_graph(cast(Client, cluster), "shop", NS, SecretMask())
    assert isinstance(report, GraphReport)
    assert report.root_cause.startswith('node "copy" (ConfigMap team/shop-copy) does not exist')
    assert report.service_account == f"system:serviceaccount:{NS}:default"
    text = render(report, "text", SecretMask())
    lines = text.splitlines()
    assert lines[2] == f"Graph:      {NS}/shop (kro.run/v1alpha1), generation 1"
    assert f"  create ConfigMap {NS}/shop-copy" in lines
    assert f"  settings: ConfigMap {NS}/shop-settings (v1, uid uid-shop-settings)" in lines
    no_uid = "no uid yet: deleted only if it carries the Graph's field manager"
    assert f"  copy: ConfigMap {NS}/shop-copy (v1, {no_uid})" in lines
    assert any(line.startswith("  ResourcesConverged") and "DataPending" in line for line in lines)
    data = json.loads(render(report, "json", SecretMask()))
    assert data["explanation"] == "graph"
    assert [n["id"] for n in data["nodes"]] == ["naming", "settings", "copy"]
    assert data["managedResources"][1] == {
        "nodeId": "copy", "apiVersion": "v1", "kind": "ConfigMap",
        "namespace": NS, "name": "shop-copy", "uid": "",
        "cluster": "",  # M-07: the Graph's own cluster
    }  # fmt: skip


async def test_a_graph_that_is_not_there_cannot_be_explained() -> None:
    from kro.cli.explain_source import ExplainError

    with pytest.raises(ExplainError, match='Graph "nope" not found in namespace "team"'):
        await explain_graph(cast(Client, Cluster()), "nope", NS, SecretMask())


def test_graph_is_a_target_of_explain() -> None:
    parser = argparse.ArgumentParser()
    add_explain_command(parser.add_subparsers())
    args = parser.parse_args(["explain", "graph", "shop", "-n", NS])
    assert (args.target, args.name, args.namespace) == ("graph", "shop", NS)


def patch_node(**contributed: Any) -> dict[str, Any]:
    return {
        "id": "claim",
        "patch": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            **contributed,
        },
    }


def deployment(**contributed: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
        **contributed,
    }


@pytest.mark.parametrize(
    ("contributed", "subresource"),
    [({"spec": {"paused": True}}, ""), ({"status": {"observedGeneration": 3}}, "status")],
    ids=["object", "status"],
)
async def test_a_patch_is_judged_by_its_own_manager_and_endpoint(
    contributed: dict[str, Any], subresource: str
) -> None:
    obj = graph_object([patch_node(**contributed)])
    body = deployment(**contributed)
    # The target holds the values, set by someone else: the next pass would contribute them.
    nodes, writes = await dry(obj, Cluster(applied(body, "kubectl", subresource)))
    assert nodes["claim"].status is NodeStatus.APPLIED
    assert writes == (f"apply Deployment {NS}/web",)
    # Held by the node's own manager (one per patch node, V-62) through the endpoint the patch
    # targets: nothing to write. The same manager through the other endpoint is not it.
    manager = patch_field_manager(UID, "claim")
    _, writes = await dry(obj, Cluster(applied(body, manager, subresource)))
    assert writes == ()
    other = "" if subresource else "status"
    _, writes = await dry(obj, Cluster(applied(body, manager, other)))
    assert writes == (f"apply Deployment {NS}/web",)


async def test_a_missing_patch_target_is_waited_for() -> None:
    nodes, writes = await dry(graph_object([patch_node(spec={"paused": True})]), Cluster())
    assert nodes["claim"].status is NodeStatus.WAITING
    assert writes == ()
    assert "patch target Deployment team/web not found" in nodes["claim"].reason


async def test_a_computed_kind_with_no_rows_is_an_empty_collection() -> None:
    """V-48 with no rows yet (the claims example before its first claim): nothing to look up,
    read or write, and the node is done, not an error."""
    nodes = [
        {
            "id": "wanted",
            "def": {
                "objects": "${[{'apiVersion': 'v1', 'kind': 'ConfigMap', 'name': 'a'}]"
                ".filter(o, o.kind == 'Secret')}"
            },
        },
        {
            "id": "made",
            "forEach": [{"w": "${wanted.objects}"}],
            "template": {
                "apiVersion": "${w.apiVersion}",
                "kind": "${w.kind}",
                "metadata": {"name": "${w.name}"},
            },
        },
    ]
    reports, would_write = await dry(graph_object(nodes), Cluster())
    assert reports["made"].status is not NodeStatus.ERROR, reports["made"]
    assert reports["made"].objects == ()
    assert would_write == ()
