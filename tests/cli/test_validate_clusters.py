"""M-07: `kro validate --cluster NAME=KUBECONFIG` types a resource whose literal target names
NAME with NAME's schemas, read live through KUBECONFIG, instead of the default (the bundle,
`--crd` files, `--kubeconfig`); repeatable; needs the MultiCluster gate like any target.

The member is a small HTTP server serving the OpenAPI v3 and discovery documents of one group
version (example.com/v1: a Widget whose `spec.size` is an integer and closed); the hub is given
a Widget whose `spec.size` is a string with `--crd`, so which schema typed a resource shows in
the verdict.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from aiohttp import web

from kro.cli.main import main

GATE: Final = "--feature-gates=MultiCluster=true"
WIDGET_V1: Final = "example.com/v1"


OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def widget_schema(size_type: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": dict(metadata),
            "spec": {"type": "object", "properties": {"size": {"type": size_type}}},
        },
    }


MEMBER_OPENAPI: Final = {
    "openapi": "3.0.0",
    "components": {"schemas": {
        "com.example.v1.Widget": {
            **widget_schema("integer", {"$ref": "#/components/schemas/" + OBJECT_META}),
            "x-kubernetes-group-version-kind": [
                {"group": "example.com", "version": "v1", "kind": "Widget"}],
        },
        OBJECT_META: {"type": "object", "properties": {
            "name": {"type": "string"}, "namespace": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        }},
    }},
}
MEMBER_DISCOVERY: Final = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": WIDGET_V1,
    "resources": [{"name": "widgets", "singularName": "widget", "kind": "Widget",
                   "namespaced": True, "verbs": ["get", "list"]}],
}
HUB_WIDGET: Final = widget_schema("string", {"type": "object"})
HUB_CRD: Final = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                       "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": HUB_WIDGET}}]},
}


@dataclass
class Member:
    """The member's API server: what it serves, and the paths it was asked for."""

    url: str
    kubeconfig: Path
    paths: list[str] = field(default_factory=list)


@pytest.fixture
async def member(tmp_path: Path) -> AsyncIterator[Member]:
    served = {
        f"/openapi/v3/apis/{WIDGET_V1}": MEMBER_OPENAPI,
        f"/apis/{WIDGET_V1}": MEMBER_DISCOVERY,
    }
    paths: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        paths.append(request.path)
        if request.path in served:
            return web.json_response(served[request.path])
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                  "reason": "NotFound", "code": 404, "message": "not found"}
        return web.json_response(status, status=404)

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}"
    config = tmp_path / "member-1.kubeconfig"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "m",
        "clusters": [{"name": "m", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "m", "context": {"cluster": "m", "user": "u"}}],
    }))
    try:
        yield Member(url, config, paths)
    finally:
        await runner.cleanup()


def widget(node_id: str, size: Any, target: str | None = None, **extra: Any) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "id": node_id,
        "template": {"apiVersion": WIDGET_V1, "kind": "Widget",
                     "metadata": {"name": "${schema.spec.name}-" + node_id},
                     "spec": {"size": size, **extra}},
    }
    if target is not None:
        resource["target"] = {"cluster": {"kubeconfigSecretName": target}}
    return resource


def rgd(*resources: dict[str, Any], target: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schema": {"apiVersion": "v1alpha1", "kind": "Fleet",
                   "spec": {"name": "string", "cluster": "string | default=member-1"}},
        "resources": list(resources),
    }
    if target is not None:
        spec["target"] = {"cluster": {"kubeconfigSecretName": target}}
    return {"apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "fleet"}, "spec": spec}


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


async def validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any], *argv: str
) -> Run:
    """`kro validate -f <document> --crd <hub Widget> ARGV`, in a thread (the command runs its
    own event loop; the member serves on this one)."""
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump(document))
    crd = tmp_path / "hub-crd.yaml"
    crd.write_text(yaml.safe_dump(HUB_CRD))
    capsys.readouterr()
    try:
        code = await asyncio.to_thread(
            main, ["validate", "-f", str(path), "--crd", str(crd), *argv]
        )
    except SystemExit as usage:  # argparse's own usage errors
        code = int(usage.code or 0)
    out, err = capsys.readouterr()
    return Run(code, out, err)


def cluster(member: Member, name: str = "member-1") -> str:
    return f"--cluster={name}={member.kubeconfig}"


async def test_a_targeted_resource_is_typed_with_its_members_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], member: Member
) -> None:
    document = rgd(widget("here", "big"), widget("there", 3, "member-1"))
    done = await validate(tmp_path, capsys, document, GATE, cluster(member))
    assert done.code == 0, done.err
    assert "Validation successful" in done.out
    assert f"/openapi/v3/apis/{WIDGET_V1}" in member.paths


async def test_without_the_flag_a_targeted_resource_is_typed_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = await validate(tmp_path, capsys, rgd(widget("there", 3, "member-1")), GATE)
    assert done.code == 1  # the hub's (string) schema refuses the integer
    assert "expected string type for path spec.size, got int64" in done.err
    assert 'failed to build resource "there"' in done.err
    ok = await validate(tmp_path, capsys, rgd(widget("there", "big", "member-1")), GATE)
    assert ok.code == 0, ok.err


async def test_the_members_schema_refuses_what_the_hubs_would_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], member: Member
) -> None:
    wrong = rgd(widget("here", "big"), widget("there", "big", "member-1"))
    done = await validate(tmp_path, capsys, wrong, GATE, cluster(member))
    assert done.code == 1
    assert 'failed to build resource "there"' in done.err
    assert "expected integer type for path spec.size, got string" in done.err
    assert 'resource "here"' not in done.err
    unknown = rgd(widget("there", 3, "member-1", colour="red"))
    strict = await validate(tmp_path, capsys, unknown, GATE, cluster(member))
    assert strict.code == 1
    assert 'resource "there" (example.com/v1 Widget): unknown field "spec.colour"' in strict.err


async def test_a_kind_the_member_does_not_serve_names_the_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], member: Member
) -> None:
    gadget = widget("there", 3, "member-1")
    gadget["template"]["kind"] = "Gadget"
    done = await validate(tmp_path, capsys, rgd(gadget), GATE, cluster(member))
    assert done.code == 1
    assert 'in cluster "member-1": schema not found' in done.err  # as the controller says
    assert "the resource targets cluster member-1, which does not serve it" in done.err
    data = json.loads((await validate(
        tmp_path, capsys, rgd(gadget), GATE, cluster(member), "-o", "json")).out)
    assert 'in cluster "member-1": schema not found' in data["results"][0]["errors"][0]


async def test_the_rgd_wide_target_counts_and_a_computed_one_uses_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], member: Member
) -> None:
    wide = rgd(widget("there", 3), target="member-1")
    done = await validate(tmp_path, capsys, wide, GATE, cluster(member))
    assert done.code == 0, done.err
    member.paths.clear()
    computed = rgd(widget("there", "big", "${schema.spec.cluster}"))
    done = await validate(tmp_path, capsys, computed, GATE, cluster(member))
    assert done.code == 0, done.err  # the hub's string schema, as without --cluster
    assert "no resource targets it literally" in done.err
    assert not [p for p in member.paths if "widgets" in p or "openapi" in p]


async def test_the_hub_named_as_a_target_uses_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], member: Member
) -> None:
    home = rgd(widget("home", "big", "local"))
    done = await validate(tmp_path, capsys, home, GATE, cluster(member), cluster(member, "local"))
    assert done.code == 1  # `local` given as a member cluster: typed there, as asked
    assert 'failed to build resource "home"' in done.err
    plain = await validate(tmp_path, capsys, home, GATE, cluster(member))
    assert plain.code == 0, plain.err


async def test_a_graph_node_is_typed_in_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], member: Member
) -> None:
    node = widget("there", 3, "member-1")
    graph = {"apiVersion": "kro.run/v1alpha1", "kind": "Graph",
             "metadata": {"name": "g", "namespace": "default"},
             "spec": {"nodes": [{**node, "template": {
                 **node["template"], "metadata": {"name": "g-there"}}}]}}
    done = await validate(tmp_path, capsys, graph, GATE, cluster(member))
    assert done.code == 0, done.err
    assert "The Graph is valid" in done.out
    bad = copy.deepcopy(graph)
    bad["spec"]["nodes"][0]["template"]["spec"]["size"] = "big"
    done = await validate(tmp_path, capsys, bad, GATE, cluster(member))
    assert done.code == 1
    assert "expected integer type for path spec.size, got string" in done.err


async def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = rgd(widget("there", 3, "member-1"))
    config = tmp_path / "k"
    no_gate = await validate(tmp_path, capsys, document, f"--cluster=member-1={config}")
    assert no_gate.code == 2
    assert "needs the MultiCluster feature gate" in no_gate.err
    twice = await validate(tmp_path, capsys, document, GATE,
                           f"--cluster=member-1={config}", f"--cluster=member-1={config}")
    assert twice.code == 2
    assert "--cluster names member-1 more than once" in twice.err
    malformed = await validate(tmp_path, capsys, document, GATE, "--cluster=member-1")
    assert malformed.code == 2
    assert "want NAME=KUBECONFIG" in malformed.err


async def test_an_unreadable_member_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "down.kubeconfig"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "m",
        "clusters": [{"name": "m", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "m", "context": {"cluster": "m", "user": "u"}}],
    }))
    done = await validate(tmp_path, capsys, rgd(widget("there", 3, "member-1")), GATE,
                          f"--cluster=member-1={config}")
    assert done.code == 1
    assert f"cannot read schemas from cluster member-1 (--cluster member-1={config})" in done.err
