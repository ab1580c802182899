"""M-07: `kro explain` names the cluster of every node, reaching a member as its caller could.

Two fake API servers: the hub (the caller's, holding the member's registry Secret) and a member
(TLS, a bearer token only the Secret holds). A dry run over a graph whose resource targets the
member reads that resource in the member, through the Secret the caller reads, and names
`member-1` for it and the hub's local name for the others. A member the caller may not read, or
that does not answer, leaves its nodes unknown (not an error of kro's) with a note; a target
naming no registered cluster, or credentials kro refuses (M-03), is the node's error. Nothing
is ever written, and no credential reaches the output.
"""

from __future__ import annotations

import argparse
import base64
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import pytest
import yaml

from kro.api.names import LABEL_HUB
from kro.cli.explain import add_explain_command, cluster_access
from kro.cli.explain_cluster import unseen_notes
from kro.cli.explain_dryrun import ReadingClient, dry_run
from kro.cli.explain_format import SecretMask, render
from kro.cli.explain_places import ClusterAccess
from kro.cli.explain_report import InstanceReport, NodeReport, NodeStatus
from kro.graph.builder import build_graph
from kro.graph.model import Graph
from kro.graph.options import BuildOptions
from kro.graph.resolver import OfflineSchemaResolver
from kro.runtime.client import Client
from kro.runtime.gvk import GVR
from kro.testing import pki
from kro.testing.fakeapi import FakeApiServer, Fault, forbidden, unthrottled_client

pytestmark = pytest.mark.usefixtures("no_task_leaks")

NS: Final = "team"
REGISTRY: Final = "kro-system"
TOKEN: Final = "tok-3f9a-member-credential-never-shown"
CONFIGMAPS: Final = GVR("", "v1", "configmaps")
SECRETS: Final = GVR("", "v1", "secrets")
DEMOS: Final = GVR("kro.run", "v1alpha1", "demos")
ACCESS: Final = ClusterAccess(namespace=REGISTRY, local_name="hub-a", timeout_s=2.0)
INSTANCE: Final = {
    "apiVersion": "kro.run/v1alpha1", "kind": "Demo",
    "metadata": {"name": "d", "namespace": NS, "uid": "uid-1", "generation": 1},
    "spec": {},
}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> pki.ClusterPKI:
    return pki.generate(tmp_path_factory.mktemp("explain-pki"))


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def kubeconfig(server: str, certs: pki.ClusterPKI, user: Mapping[str, Any] | None = None) -> str:
    ca = _b64(certs.ca.cert.read_bytes())
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "main",
        "clusters": [{"name": "c", "cluster": {"server": server,
                                                "certificate-authority-data": ca}}],
        "users": [{"name": "u", "user": dict(user or {"token": TOKEN})}],
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}],
    })


def registry_secret(name: str, config: str, *, labelled: bool = True) -> dict[str, Any]:
    labels = {"multicluster.runtime/cluster": "true"} if labelled else {}
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": name, "namespace": REGISTRY, "labels": labels},
        "data": {"kubeconfig": _b64(config)},
    }


def member_context(certs: pki.ClusterPKI) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.apiserver.cert, certs.apiserver.key)
    return context


def configmap(node_id: str, target: str | None = None, **extra: Any) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "id": node_id,
        "template": {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "${schema.metadata.name}-" + node_id},
                     "data": {"k": "v"}},
        **extra,
    }
    if target is not None:
        resource["target"] = {"cluster": {"kubeconfigSecretName": target}}
    return resource


def graph(*resources: dict[str, Any]) -> Graph:
    rgd = {
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "demo"},
        "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Demo", "spec": {}},
                 "resources": list(resources)},
    }
    return build_graph(rgd, OfflineSchemaResolver.from_files(),
                       options=BuildOptions(multi_cluster=True))


def live(name: str, *, hub: str = "") -> dict[str, Any]:
    labels = {LABEL_HUB: hub} if hub else {}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS, "labels": labels}, "data": {"k": "v"}}


@dataclass
class Fleet:
    hub: FakeApiServer
    member: FakeApiServer
    certs: pki.ClusterPKI

    def register(self, name: str = "member-1", config: str | None = None, **kw: Any) -> None:
        config = config if config is not None else kubeconfig(self.member.url, self.certs)
        self.hub.seed(SECRETS, registry_secret(name, config, **kw))


@pytest.fixture
async def fleet(certs: pki.ClusterPKI) -> AsyncIterator[Fleet]:
    async with (
        FakeApiServer() as hub,
        FakeApiServer(ssl_context=member_context(certs), tokens={TOKEN}) as member,
    ):
        yield Fleet(hub, member, certs)


@dataclass(frozen=True)
class Explained:
    nodes: dict[str, NodeReport]
    text: str
    data: dict[str, Any]


async def explain(fleet: Fleet, g: Graph, access: ClusterAccess = ACCESS) -> Explained:
    mask = SecretMask()
    async with unthrottled_client(fleet.hub) as hub:
        reader = ReadingClient(cast(Client, hub), INSTANCE, mask)
        done = await dry_run(g, INSTANCE, DEMOS, reader, {}, access=access)
    report = InstanceReport(
        root_cause="-", api_version="kro.run/v1alpha1", kind="Demo", namespace=NS, name="d",
        state="ACTIVE", generation=1, source=None, nodes=done.nodes,
        notes=tuple(unseen_notes(done.nodes, access)),
    )
    text = render(report, "text", mask)
    data = json.loads(render(report, "json", mask))
    for server in (fleet.hub, fleet.member):
        assert {r.method for r in server.requests} <= {"GET"}, "a dry run never writes"
    assert TOKEN not in text + json.dumps(data)
    return Explained({n.id: n for n in done.nodes}, text, data)


def row(text: str, node_id: str) -> list[str]:
    return next(line.split() for line in text.splitlines() if line.split()[:1] == [node_id])


async def test_each_node_names_its_cluster_and_the_member_is_read_there(fleet: Fleet) -> None:
    fleet.register()
    fleet.hub.seed(CONFIGMAPS, live("d-here"))
    fleet.member.seed(CONFIGMAPS, live("d-there", hub="hub-a"))
    g = graph(configmap("here"), configmap("there", "member-1",
                                           readyWhen=["${there.data.k == 'v'}"]))
    done = await explain(fleet, g)
    assert done.nodes["here"].clusters == ("hub-a",)
    assert done.nodes["here"].status is NodeStatus.APPLIED
    assert done.nodes["there"].clusters == ("member-1",)
    assert done.nodes["there"].status is NodeStatus.READY
    member_paths = [r.path for r in fleet.member.requests]
    assert f"/api/v1/namespaces/{NS}/configmaps/d-there" in member_paths
    assert not any("d-there" in r.path for r in fleet.hub.requests)
    assert not any("d-here" in r.path for r in fleet.member.requests)
    assert row(done.text, "NODE")[:5] == ["NODE", "WAVE", "OBJECT", "CLUSTER", "STATE"]
    assert row(done.text, "there")[4:6] == ["member-1", "ready"]
    assert row(done.text, "here")[4:6] == ["hub-a", "applied"]
    by_id = {n["id"]: n for n in done.data["nodes"]}
    assert by_id["there"]["clusters"] == ["member-1"]


async def test_the_hub_named_as_a_target_is_the_hub(fleet: Fleet) -> None:
    fleet.hub.seed(CONFIGMAPS, live("d-home"))
    done = await explain(fleet, graph(configmap("home", "hub-a")))
    assert done.nodes["home"].clusters == ("hub-a",)
    assert done.nodes["home"].status is NodeStatus.APPLIED
    assert not fleet.member.requests


async def test_a_node_that_did_not_render_names_its_literal_target(fleet: Fleet) -> None:
    fleet.register()
    g = graph(
        configmap("first", readyWhen=["${first.data.k == 'done'}"]),
        {**configmap("later", "member-1"),
         "template": {**configmap("later")["template"], "data": {"x": "${first.data.k}"}}},
    )
    fleet.hub.seed(CONFIGMAPS, live("d-first"))
    done = await explain(fleet, g)
    assert done.nodes["later"].status is NodeStatus.WAITING
    assert done.nodes["later"].clusters == ("member-1",)
    assert not fleet.member.requests  # not admitted: nothing of it was read


async def test_a_cluster_the_caller_may_not_read_is_unknown_not_an_error(fleet: Fleet) -> None:
    fleet.register()
    fleet.hub.seed(CONFIGMAPS, live("d-here"))
    fleet.hub.inject(Fault("status", method="GET", path="/secrets/member-1", status=403,
                           body=forbidden("secrets", verb="get"), times=10))
    done = await explain(fleet, graph(configmap("here"), configmap("there", "member-1")))
    there = done.nodes["there"]
    assert there.status is NodeStatus.UNKNOWN
    assert there.clusters == ("member-1",)
    assert 'cannot reach cluster "member-1" as you' in there.reason
    assert f"Secret {REGISTRY}/member-1 is not allowed" in there.reason
    assert not there.is_root_cause
    assert done.nodes["here"].status is NodeStatus.APPLIED
    assert "--cluster-secrets-namespace" in done.text  # the note says why
    assert not fleet.member.requests


async def test_a_member_that_does_not_answer_is_unknown(fleet: Fleet) -> None:
    fleet.register(config=kubeconfig("https://127.0.0.1:1", fleet.certs))
    done = await explain(fleet, graph(configmap("there", "member-1")))
    there = done.nodes["there"]
    assert there.status is NodeStatus.UNKNOWN
    assert 'cluster "member-1" (https://127.0.0.1:1) does not answer from here' in there.reason


async def test_a_target_naming_no_registered_cluster_is_the_nodes_error(fleet: Fleet) -> None:
    fleet.register()
    fleet.register("unlabelled", labelled=False)
    done = await explain(fleet, graph(configmap("lost", "nowhere"),
                                      configmap("stray", "unlabelled")))
    lost, stray = done.nodes["lost"], done.nodes["stray"]
    assert lost.status is NodeStatus.ERROR
    assert lost.is_root_cause
    assert lost.clusters == ("nowhere",)
    assert lost.message == f'cluster "nowhere" is not registered: no Secret {REGISTRY}/nowhere'
    assert stray.status is NodeStatus.ERROR
    assert "does not carry the label multicluster.runtime/cluster=true" in stray.message
    assert "its target cluster cannot be used" in done.text


async def test_refused_credentials_are_the_nodes_error_without_a_value(
    fleet: Fleet, tmp_path: Path
) -> None:
    exec_user = {"exec": {"command": "touch", "args": [str(tmp_path / "ran")]}}
    fleet.register(config=kubeconfig(fleet.member.url, fleet.certs, exec_user))
    done = await explain(fleet, graph(configmap("there", "member-1")))
    there = done.nodes["there"]
    assert there.status is NodeStatus.ERROR
    assert f"cluster Secret {REGISTRY}/member-1 refused (ExecPlugin)" in there.message
    assert not (tmp_path / "ran").exists()
    assert not fleet.member.requests


async def test_a_graph_without_targets_names_no_cluster(fleet: Fleet) -> None:
    fleet.hub.seed(CONFIGMAPS, live("d-here"))
    done = await explain(fleet, graph(configmap("here")))
    assert done.nodes["here"].clusters == ()
    assert "CLUSTER" not in done.text
    assert not any("secrets" in r.path for r in fleet.hub.requests)


def test_the_registry_flags_are_the_controllers() -> None:
    parser = argparse.ArgumentParser(prog="kro")
    add_explain_command(parser.add_subparsers(dest="command", required=True))
    defaults = cluster_access(parser.parse_args(["explain", "demo/d"]))
    assert defaults == ClusterAccess()
    assert (defaults.namespace, defaults.label, defaults.key, defaults.local_name) == (
        "kro-system", "multicluster.runtime/cluster=true", "kubeconfig", "local"
    )
    given = cluster_access(parser.parse_args([
        "explain", "demo/d", "--cluster-secrets-namespace", "fleet", "--cluster-secrets-label",
        "fleet/member=yes", "--cluster-secrets-key", "config", "--local-cluster-name", "hub-a",
        "--cluster-timeout", "1.5",
    ]))
    assert given == ClusterAccess("fleet", "fleet/member=yes", "config", "hub-a", 1.5)


def test_a_malformed_label_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="kro")
    add_explain_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["explain", "demo/d", "--cluster-secrets-label", "novalue"])
    assert args.handler(args) == 2
    assert "--cluster-secrets-label must be one key=value" in capsys.readouterr().err
