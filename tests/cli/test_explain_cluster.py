"""`kro explain` against a fake API server holding the objects a `view`-role user could see
(kro.cli.explain_cluster, explain_source, the deletion plan's reads): what is
forbidden is worked around and said, only GET/LIST are used, Secret data never shows."""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from kro.applyset import GroupKind, Inventory, Parent, render, tooling_for
from kro.cli import explain_source
from kro.cli.explain_cluster import Target, explain_instance, resolve_kind
from kro.cli.explain_format import SecretMask
from kro.cli.explain_format import render as render_report
from kro.cli.explain_report import NodeStatus
from kro.cli.explain_source import ExplainError, explain_rgd
from kro.graph.resolver import OfflineSchemaResolver
from kro.runtime.discovery import ResourceInfo
from kro.runtime.errors import Forbidden, NoKindMatch, NotFound
from kro.runtime.gvk import GVK, GVR

NS = "team"
DEMOS = GVR("kro.run", "v1alpha1", "demos")
RGDS = GVR("kro.run", "v1alpha1", "resourcegraphdefinitions")
REVISIONS = GVR("internal.kro.run", "v1alpha1", "graphrevisions")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
CONFIGMAPS = GVR("", "v1", "configmaps")
SECRETS = GVR("", "v1", "secrets")
EVENTS = GVR("", "v1", "events")
INFOS = [
    ResourceInfo(DEMOS, GVK("kro.run", "v1alpha1", "Demo"), True, frozenset({"get", "list"}),
                 singular="demo", short_names=("dm",)),
    ResourceInfo(CONFIGMAPS, GVK("", "v1", "ConfigMap"), True, frozenset({"get", "list"}),
                 singular="configmap", short_names=("cm",)),
    ResourceInfo(SECRETS, GVK("", "v1", "Secret"), True, frozenset({"get", "list"}),
                 singular="secret"),
]
VERBS: list[str] = []


class FakeMapper:
    def __init__(self, infos: Iterable[ResourceInfo]) -> None:
        self.infos = list(infos)

    async def resources(self) -> list[ResourceInfo]:
        return self.infos

    async def preferred_version(self, group: str) -> str:
        for info in self.infos:
            if info.gvk.group == group:
                return info.gvk.version
        raise NoKindMatch(f"no API group {group!r}")

    async def resource_for(self, gvk: GVK) -> ResourceInfo:
        for info in self.infos:
            if info.gvk == gvk:
                return info
        raise NoKindMatch(f"no resource for kind {gvk}")

    def invalidate(self) -> None:
        pass


def forbidden(gvr: GVR) -> Forbidden:
    return Forbidden(status=403, reason="Forbidden",
                     message=f"{gvr.resource} is forbidden: User \"viewer\" cannot list it")


def matches(obj: Mapping[str, Any], selector: str | None) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    pairs = [p.split("=", 1) for p in (selector or "").split(",") if p]
    return all(labels.get(k) == v for k, v in pairs)


class FakeClient:
    """Objects by (GVR, namespace, name); the GVRs in `forbidden` answer 403 to everything.
    Every call is recorded in VERBS, so tests can prove explain only reads."""

    def __init__(self, objects: Iterable[tuple[GVR, dict[str, Any]]],
                 forbidden: Iterable[GVR] = (REVISIONS, CRDS, SECRETS)) -> None:
        self.objects = {(g, o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
                        for g, o in objects}
        self.forbidden = set(forbidden)
        self.mapper = FakeMapper(INFOS)

    def _check(self, verb: str, gvr: GVR) -> None:
        VERBS.append(verb)
        if gvr in self.forbidden:
            raise forbidden(gvr)

    async def get(self, gvr: GVR, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        self._check("get", gvr)
        try:
            return copy.deepcopy(self.objects[(gvr, namespace or "", name)])
        except KeyError:
            raise NotFound(status=404, reason="NotFound", message=f"{name} not found") from None

    async def list(self, gvr: GVR, *, namespace: str | None = None,
                   label_selector: str | None = None, field_selector: str | None = None,
                   **_: Any) -> dict[str, Any]:
        self._check("list", gvr)
        items = [copy.deepcopy(o) for (g, ns, _), o in self.objects.items()
                 if g == gvr and (namespace is None or ns == namespace)
                 and matches(o, label_selector)]
        return {"items": items}

    async def list_all(self, gvr: GVR, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        kwargs.pop("metadata_only", None)
        return (await self.list(gvr, **kwargs))["items"], "1"


class OfflineLive(OfflineSchemaResolver):
    def __init__(self, client: Any) -> None:
        super().__init__()
        self._entries = OfflineSchemaResolver.from_files()._entries


@pytest.fixture(autouse=True)
def offline_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(explain_source, "LiveSchemaResolver", OfflineLive)
    VERBS.clear()


def configmap(name: str, data: Mapping[str, str], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", **metadata},
            "data": dict(data)}


RESOURCES = [
    {"id": "config", "readyWhen": ["${config.data.phase == 'done'}"],
     "template": {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "${schema.metadata.name}-config"},
                  "data": {"phase": "starting"}}},
    {"id": "app", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "${schema.metadata.name}-app"},
                               "data": {"phase": "${config.data.phase}"}}},
    {"id": "creds", "template": {"apiVersion": "v1", "kind": "Secret",
                                 "metadata": {"name": "${schema.metadata.name}-creds"},
                                 "stringData": {"pw": "x"}}},
]


def rgd(resources: list[dict[str, Any]] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "demo-rgd", "generation": 1},
        "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Demo", "spec": {}},
                 "resources": resources or RESOURCES},
        "status": {"state": "Active", **status},
    }


def demo(**metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kro.run/v1alpha1", "kind": "Demo",
        "metadata": {"name": "d", "namespace": NS, "uid": "uid-d", "generation": 1,
                     "labels": {"kro.run/resource-graph-definition-name": "demo-rgd"},
                     **metadata},
        "spec": {},
        "status": {"state": "IN_PROGRESS", "conditions": [
            {"type": "Ready", "status": "False", "observedGeneration": 1}]},
    }


def event(uid: str, reason: str, message: str, component: str = "replicaset-controller"
          ) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"e-{reason}", "namespace": NS},
            "involvedObject": {"uid": uid}, "type": "Warning", "reason": reason,
            "message": message, "source": {"component": component}}


async def test_a_view_user_gets_node_states_and_notes_on_what_it_could_not_read() -> None:
    client = FakeClient([
        (DEMOS, demo()), (RGDS, rgd()),
        (CONFIGMAPS, configmap("d-config", {"phase": "starting"})),
        (EVENTS, event("uid-d-config", "Stuck", "config is stuck")),
        (EVENTS, event("uid-d", "ResourcesReady", "none -> False", component="kro/x")),
    ])
    report = await explain_instance(client, Target("demo", "d", NS), SecretMask())  # type: ignore[arg-type]
    states = {n.id: n.status for n in report.nodes}
    assert states == {"config": NodeStatus.NOT_READY, "app": NodeStatus.WAITING,
                      "creds": NodeStatus.UNKNOWN}
    assert report.root_cause.startswith('node "config" (ConfigMap team/d-config) is not ready')
    assert report.source is not None
    assert not report.source.from_revision
    assert any("cannot read GraphRevisions" in n for n in report.notes)
    assert [(e.object, e.reason) for e in report.events] == [("ConfigMap team/d-config", "Stuck")]
    assert set(VERBS) <= {"get", "list"}


async def test_the_latest_graph_revision_is_what_is_explained_when_readable() -> None:
    good = rgd()["spec"]
    broken = rgd([{"id": "config", "template": {"apiVersion": "v1", "kind": "Nope",
                                                "metadata": {"name": "x"}}}])
    revision = {"apiVersion": "internal.kro.run/v1alpha1", "kind": "GraphRevision",
                "metadata": {"name": "demo-rgd-r00002"},
                "spec": {"revision": 2, "snapshot": {"name": "demo-rgd", "spec": good}}}
    client = FakeClient([(DEMOS, demo()), (RGDS, broken), (REVISIONS, revision)], forbidden=())
    report = await explain_instance(client, Target("Demo.kro.run", "d", NS), SecretMask())  # type: ignore[arg-type]
    assert report.source is not None
    assert report.source.from_revision
    assert report.source.revision == 2
    assert [n.id for n in report.nodes] == ["config", "app", "creds"]


async def test_secret_values_never_reach_the_output() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "d-creds", "namespace": NS, "uid": "uid-s"},
              "data": {"pw": base64.b64encode(b"hunter22-secret").decode()}}
    broken = demo()
    broken["status"]["conditions"].append({
        "type": "ResourcesReady", "status": "False",
        "message": "resource error: creds: 422 Invalid: value hunter22-secret rejected"})
    client = FakeClient([(DEMOS, broken), (RGDS, rgd()), (SECRETS, secret)], forbidden=())
    mask = SecretMask()
    report = await explain_instance(client, Target("dm", "d", NS), mask)  # type: ignore[arg-type]
    assert any("hunter22-secret" in n.message for n in report.nodes)  # what kro recorded...
    for output in ("text", "json", "yaml"):
        text = render_report(report, output, mask)
        assert "hunter22" not in text  # ...never printed
        assert base64.b64encode(b"hunter22-secret").decode() not in text
        assert "[REDACTED]" in text


async def test_a_deleting_instance_is_explained_from_its_applyset_members() -> None:
    parent = Parent(DEMOS, GVK("kro.run", "v1alpha1", "Demo"), "d", NS)
    inventory = Inventory.of(parent, [(GroupKind("", "ConfigMap"), NS)])
    fragment = render(inventory, tooling_for("v0.1.0"))
    obj = demo(deletionTimestamp="2024-01-01T00:00:00Z", finalizers=["kro.run/finalizer"],
               annotations=fragment["annotations"])
    obj["metadata"]["labels"].update(fragment["labels"])
    part_of = {"applyset.kubernetes.io/part-of": inventory.applyset_id}
    held = configmap("d-app", {}, deletionTimestamp="2024-01-01T00:00:01Z",
                     finalizers=["example.com/hold"],
                     labels={**part_of, "kro.run/node-id": "app"},
                     annotations={"internal.kro.run/apply-order": "2"})
    base = configmap("d-config", {}, labels={**part_of, "kro.run/node-id": "config"},
                     annotations={"internal.kro.run/apply-order": "1"})
    client = FakeClient([(DEMOS, obj), (CONFIGMAPS, held), (CONFIGMAPS, base)])
    report = await explain_instance(client, Target("demos", "d", NS), SecretMask())  # type: ignore[arg-type]
    assert report.deletion is not None
    assert report.deletion.wave == 2
    assert report.root_cause.startswith(
        'deletion is blocked at wave 2: ConfigMap team/d-app (node "app") is terminating but '
        "held by finalizer(s) example.com/hold"
    )
    assert report.nodes == ()


async def test_an_instance_that_does_not_exist_cannot_be_explained() -> None:
    client = FakeClient([(RGDS, rgd())])
    with pytest.raises(ExplainError, match='Demo "d" not found in namespace "team"'):
        await explain_instance(client, Target("demo", "d", NS), SecretMask())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "resource"),
    [("Demo", "demos"), ("demos", "demos"), ("dm", "demos"), ("demo.kro.run", "demos"),
     ("cm", "configmaps")],
    ids=["kind", "plural", "short", "with-group", "core"],
)
async def test_kinds_resolve_like_kubectl(text: str, resource: str) -> None:
    info = await resolve_kind(FakeClient([]), text)  # type: ignore[arg-type]
    assert info.gvr.resource == resource


async def test_an_ambiguous_kind_asks_for_the_group() -> None:
    client = FakeClient([])
    client.mapper = FakeMapper([
        *INFOS,
        ResourceInfo(GVR("a.io", "v1", "widgets"), GVK("a.io", "v1", "Widget"), True,
                     frozenset()),
        ResourceInfo(GVR("b.io", "v1", "widgets"), GVK("b.io", "v1", "Widget"), True,
                     frozenset()),
    ])
    with pytest.raises(ExplainError, match=r"ambiguous: name the group, one of widget\.a\.io, "
                                           r"widget\.b\.io"):
        await resolve_kind(client, "widget")  # type: ignore[arg-type]


async def test_an_rgd_that_does_not_compile_names_resource_field_and_expression() -> None:
    bad = rgd([{"id": "config", "template": {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
        "data": {"n": "${schema.spec.nope}"}}}], state="Inactive", conditions=[
        {"type": "GraphAccepted", "status": "False", "reason": "InvalidResourceGraph",
         "message": "failed"}])
    bad["status"]["state"] = "Inactive"
    bad["spec"]["schema"]["spec"] = {"name": "string"}
    report = await explain_rgd(FakeClient([(RGDS, bad)]), "demo-rgd")  # type: ignore[arg-type]
    assert report.build is not None
    assert report.build.resource_id == "config"
    assert report.build.expression == "schema.spec.nope"
    assert report.root_cause.startswith('the graph does not compile (resource "config"): ')
    assert any("cannot read GraphRevisions" in n for n in report.notes)
    assert report.graph == ()


async def test_an_active_rgd_shows_its_graph() -> None:
    report = await explain_rgd(FakeClient([(RGDS, rgd())]), "demo-rgd")  # type: ignore[arg-type]
    assert report.root_cause == "no problem found: the ResourceGraphDefinition is Active"
    assert [(n.id, n.wave, n.dependencies) for n in report.graph] == [
        ("config", 1, ()), ("app", 2, ("config",)), ("creds", 2, ()),
    ]
