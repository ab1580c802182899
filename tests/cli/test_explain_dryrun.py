"""`kro explain`'s per-node states: the engine's pass in dry-run mode (kro.cli.explain_dryrun),
with a graph compiled offline and live objects served from a dict by a fake client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, cast

import pytest

from kro.cli.explain_dryrun import ReadingClient, dry_run
from kro.cli.explain_format import SecretMask
from kro.cli.explain_report import MissingField, NodeReport, NodeStatus, ObjectId
from kro.engine.diagnose import first_missing
from kro.graph.builder import build_graph
from kro.graph.model import Graph
from kro.graph.resolver import OfflineSchemaResolver
from kro.runtime.client import Client
from kro.runtime.errors import Forbidden, NotFound
from kro.runtime.gvk import GVR

NS = "team"


@cache
def resolver() -> OfflineSchemaResolver:
    return OfflineSchemaResolver.from_files()


def graph(resources: list[dict[str, Any]], spec: Mapping[str, Any] | None = None) -> Graph:
    rgd = {
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "demo"},
        "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Demo", "spec": dict(spec or {})},
                 "resources": resources},
    }
    return build_graph(rgd, resolver())


def cm(node_id: str, data: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "template": {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "${schema.metadata.name}-" + node_id},
                     "data": dict(data or {"k": "v"})},
        **extra,
    }


def live_cm(name: str, data: Mapping[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS, **metadata}, "data": dict(data)}


INSTANCE = {
    "apiVersion": "kro.run/v1alpha1", "kind": "Demo",
    "metadata": {"name": "d", "namespace": NS, "uid": "uid-1", "generation": 1},
    "spec": {},
}


class Cluster:
    """Live objects by name, served as the API server would to GET and LIST; names in
    `forbidden` answer 403. Any write fails the test: a dry run never writes."""

    def __init__(self, *objects: Mapping[str, Any], forbidden: Sequence[str] = ()) -> None:
        self.objects = {o["metadata"]["name"]: o for o in objects}
        self.forbidden = set(forbidden)
        self.requests: list[str] = []

    async def get(self, gvr: GVR, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        self.requests.append(f"GET {gvr.resource}/{name}")
        if name in self.forbidden:
            raise Forbidden(status=403, reason="Forbidden",
                            message="403 Forbidden: configmaps is forbidden")
        if name not in self.objects:
            raise NotFound(status=404, reason="NotFound", message=f"{name} not found")
        return dict(self.objects[name])

    async def list_all(
        self, gvr: GVR, *, namespace: str | None = None, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        self.requests.append(f"LIST {gvr.resource}")
        return [dict(o) for o in self.objects.values()], "1"

    def __getattr__(self, verb: str) -> Any:
        raise AssertionError(f"a dry run called {verb}")


async def explain(
    g: Graph, cluster: Cluster, recorded: Mapping[str, str] | None = None, spec: Any = None
) -> dict[str, NodeReport]:
    instance = {**INSTANCE, "spec": dict(spec or {})}
    reader = ReadingClient(cast(Client, cluster), instance, SecretMask())
    gvr = GVR("kro.run", "v1alpha1", "demos")
    done = await dry_run(g, instance, gvr, reader, recorded or {})
    return {n.id: n for n in done.nodes}


async def test_a_node_without_ready_when_is_applied_once_it_exists() -> None:
    nodes = await explain(graph([cm("a")]), Cluster(live_cm("d-a", {"k": "v"})))
    assert nodes["a"].status is NodeStatus.APPLIED
    assert nodes["a"].objects == (ObjectId("v1", "ConfigMap", NS, "d-a"),)
    assert nodes["a"].status.is_ok


async def test_a_ready_when_that_holds_makes_it_ready() -> None:
    g = graph([cm("a", readyWhen=["${a.data.k == 'v'}"])])
    nodes = await explain(g, Cluster(live_cm("d-a", {"k": "v"})))
    assert nodes["a"].status is NodeStatus.READY


async def test_a_false_ready_when_names_the_expression() -> None:
    g = graph([cm("a", readyWhen=["${a.data.k == 'done'}"])])
    nodes = await explain(g, Cluster(live_cm("d-a", {"k": "v"})))
    assert nodes["a"].status is NodeStatus.NOT_READY
    assert nodes["a"].expression == "a.data.k == 'done'"
    assert nodes["a"].reason == "readyWhen \"a.data.k == 'done'\" is false"
    assert nodes["a"].is_root_cause


async def test_a_ready_when_on_a_missing_field_names_the_field() -> None:
    g = graph([cm("a", readyWhen=["${a.data.phase == 'done'}"])])
    nodes = await explain(g, Cluster(live_cm("d-a", {"k": "v"})))
    assert nodes["a"].status is NodeStatus.NOT_READY
    assert nodes["a"].missing == MissingField("a", "data.phase", ObjectId("v1", "ConfigMap", NS,
                                                                          "d-a"))
    assert 'field "data.phase" of ConfigMap team/d-a (node "a")' in nodes["a"].reason


async def test_a_dependent_of_a_node_that_is_not_ready_waits_on_it() -> None:
    g = graph([
        cm("a", readyWhen=["${a.data.k == 'done'}"]),
        cm("b", {"copy": "${a.data.k}"}),
    ])
    nodes = await explain(g, Cluster(live_cm("d-a", {"k": "v"})))
    assert nodes["b"].status is NodeStatus.WAITING
    assert nodes["b"].waiting_on == "a"
    assert nodes["b"].reason == 'waits for node "a", which is not ready'
    assert not nodes["b"].is_root_cause
    assert nodes["b"].objects == ()  # not rendered yet


async def test_an_expression_on_a_field_that_never_appears_names_object_and_path() -> None:
    g = graph([cm("source"), cm("sink", {"t": "${source.data.token}"})])
    nodes = await explain(g, Cluster(live_cm("d-source", {"k": "v"})))
    sink = nodes["sink"]
    assert sink.status is NodeStatus.WAITING
    assert sink.expression == "source.data.token"
    assert sink.field_path == "data.t"
    assert sink.missing == MissingField(
        "source", "data.token", ObjectId("v1", "ConfigMap", NS, "d-source")
    )
    assert sink.reason == (
        'expression "source.data.token" reads field "data.token" of ConfigMap team/d-source '
        '(node "source"), which does not exist yet'
    )
    assert sink.is_root_cause


async def test_a_missing_instance_field_is_blamed_on_the_instance() -> None:
    g = graph([cm("a", {"v": "${schema.spec.values.key}"})], spec={"values": "map[string]string"})
    nodes = await explain(g, Cluster(), spec={"values": {}})
    assert nodes["a"].status is NodeStatus.WAITING
    assert nodes["a"].missing is not None
    assert nodes["a"].missing.node == "schema"
    assert "of the instance (Demo team/d)" in nodes["a"].reason


async def test_include_when_false_excludes_and_names_the_expression() -> None:
    g = graph(
        [cm("base"), cm("extra", {"x": "${base.data.k}"}, includeWhen=["${schema.spec.on}"]),
         cm("child", {"x": "${extra.data.x}"})],
        spec={"on": "boolean | default=false"},
    )
    nodes = await explain(g, Cluster(live_cm("d-base", {"k": "v"})), spec={"on": False})
    assert nodes["extra"].status is NodeStatus.EXCLUDED
    assert nodes["extra"].expression == "schema.spec.on"
    assert nodes["extra"].reason == 'includeWhen "schema.spec.on" is false'
    assert nodes["child"].status is NodeStatus.EXCLUDED
    assert nodes["child"].reason == 'depends on node "extra", which is excluded'


async def test_a_rendered_object_that_does_not_exist_is_missing() -> None:
    nodes = await explain(graph([cm("a")]), Cluster())
    assert nodes["a"].status is NodeStatus.MISSING
    assert "kro recorded no error" in nodes["a"].reason


async def test_an_apply_error_kro_recorded_is_an_error_with_the_servers_message() -> None:
    message = '422 Invalid: ConfigMap "d-a" is invalid: data: Invalid value'
    g = graph([cm("a"), cm("b", {"x": "${a.data.k}"})])
    nodes = await explain(g, Cluster(), {"a": message})
    assert nodes["a"].status is NodeStatus.ERROR
    assert nodes["a"].message == message
    assert nodes["a"].reason == "the API server refused it"
    assert nodes["b"].waiting_on == "a"


async def test_an_apply_error_on_an_existing_object_is_an_error_too() -> None:
    nodes = await explain(
        graph([cm("a")]), Cluster(live_cm("d-a", {"k": "v"})), {"a": "422 Invalid"}
    )
    assert nodes["a"].status is NodeStatus.ERROR
    assert nodes["a"].reason == "the last apply failed"


async def test_a_terminating_child_is_deleting() -> None:
    live = live_cm("d-a", {"k": "v"}, deletionTimestamp="2024-01-01T00:00:00Z")
    nodes = await explain(graph([cm("a")]), Cluster(live))
    assert nodes["a"].status is NodeStatus.DELETING
    assert "ConfigMap team/d-a is being deleted" in nodes["a"].reason


async def test_an_unreadable_child_is_unknown_and_its_dependents_wait() -> None:
    g = graph([cm("a"), cm("b", {"x": "${a.data.k}"})])
    nodes = await explain(g, Cluster(forbidden=["d-a"]))
    assert nodes["a"].status is NodeStatus.UNKNOWN
    assert "403 Forbidden" in nodes["a"].reason
    assert nodes["b"].status is NodeStatus.WAITING
    assert nodes["b"].waiting_on == "a"


async def test_an_expression_that_fails_is_an_error() -> None:
    g = graph([cm("a", {"x": "${string(schema.spec.n / 0)}"})], spec={"n": "integer | default=1"})
    nodes = await explain(g, Cluster(), spec={"n": 1})
    assert nodes["a"].status is NodeStatus.ERROR
    assert nodes["a"].expression == "string(schema.spec.n / 0)"
    assert "divide by zero" in nodes["a"].message


@pytest.mark.parametrize(
    ("present", "status", "fragment"),
    [
        (["d-x", "d-y"], NodeStatus.APPLIED, ""),
        (["d-x"], NodeStatus.MISSING, "(1 of 2 items exist)"),
    ],
    ids=["all-items", "one-missing"],
)
async def test_collections_count_their_items(
    present: list[str], status: NodeStatus, fragment: str
) -> None:
    g = graph(
        [{"id": "entries", "forEach": [{"n": "${schema.spec.names}"}],
          "template": {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "${schema.metadata.name}-${n}"}}}],
        spec={"names": "[]string"},
    )
    cluster = Cluster(*[live_cm(name, {}) for name in present])
    nodes = await explain(g, cluster, spec={"names": ["x", "y"]})
    assert nodes["entries"].status is status
    assert len(nodes["entries"].objects) == 2
    assert fragment in nodes["entries"].reason


async def test_an_external_reference_that_does_not_exist_is_a_root_cause() -> None:
    g = graph([
        {"id": "ext", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "shared"}}},
        cm("a", {"x": "${ext.data.k}"}),
    ])
    nodes = await explain(g, Cluster())
    assert nodes["ext"].status is NodeStatus.WAITING
    assert nodes["ext"].is_root_cause
    assert "external reference ConfigMap team/shared does not exist" in nodes["ext"].reason
    assert nodes["a"].waiting_on == "ext"
    found = await explain(g, Cluster(live_cm("shared", {"k": "v"})))
    assert found["ext"].status is NodeStatus.READY
    assert found["a"].status is NodeStatus.MISSING


@pytest.mark.parametrize(
    ("obj", "path", "expected"),
    [
        ({"data": {"a": "1"}}, "data.a", None),
        ({"data": {"a": "1"}}, "data.b", "data.b"),
        ({}, "status.availableReplicas", "status"),
        ({"spec": {"ports": [{"port": 80}]}}, "spec.ports[0].port", None),
        ({"spec": {"ports": []}}, "spec.ports[0].port", "spec.ports[0]"),
        ({"spec": "text"}, "spec.x", "spec.x"),
    ],
    ids=["present", "missing-key", "missing-parent", "index", "index-out-of-range", "scalar"],
)
def test_first_missing(obj: dict[str, Any], path: str, expected: str | None) -> None:
    assert first_missing(obj, path) == expected


async def test_an_unreadable_child_with_a_recorded_error_is_an_error() -> None:
    nodes = await explain(graph([cm("a")]), Cluster(forbidden=["d-a"]),
                          {"a": "422 Invalid: data: bad"})
    assert nodes["a"].status is NodeStatus.ERROR
    assert nodes["a"].message == "422 Invalid: data: bad"


async def test_what_the_next_pass_would_write_is_listed() -> None:
    g = graph([cm("a", {"k": "v"}), cm("b", {"k": "v"})])
    live_a = live_cm("d-a", {"k": "old"})  # kro never applied it: its fields are nobody's
    instance = dict(INSTANCE)
    reader = ReadingClient(cast(Client, Cluster(live_a)), instance, SecretMask())
    done = await dry_run(g, instance, GVR("kro.run", "v1alpha1", "demos"), reader, {})
    assert done.would_write == (f"apply ConfigMap {NS}/d-a", f"create ConfigMap {NS}/d-b")
