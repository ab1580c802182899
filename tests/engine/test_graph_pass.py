"""One pass of the engine (kro.engine.graph_pass) over one owner, on the in-process fake API
server: what each kind of node yields, a skip that spreads to dependents, the bound on applies
in flight, the prune of what is no longer rendered, and a dry run that writes nothing.

Expected values are upstream's node states (SYNCED, SKIPPED, WAITING_FOR_READINESS,
IN_PROGRESS) and kro's labels; the engine's own words (`NodeReason`) are checked where they are
what `kro explain` shows."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kro.api.names import (
    LABEL_APPLYSET_PART_OF,
    NODE_STATE_IN_PROGRESS,
    NODE_STATE_SKIPPED,
    NODE_STATE_SYNCED,
    NODE_STATE_WAITING_FOR_READINESS,
)
from kro.applyset import Applier, ApplierOptions, tooling_for
from kro.dynamic import ObjectRef
from kro.engine import GraphPass, NodeReason, NoWatches, PassResult
from kro.engine.applyset_ownership import ApplySetOwnership
from kro.engine.owner import OwnerBinding
from kro.engine.ownership import teardown_step
from kro.engine.recording import RecordingOwnership
from kro.graph.builder import BuildOptions, build_graph
from kro.graph.evaluate import InstanceEvaluation
from kro.graph.model import Graph
from kro.graph.resolver import OfflineSchemaResolver
from kro.runtime.client import Client, ClientOptions
from kro.runtime.config import ConnectionConfig
from kro.runtime.gvk import GVR
from kro.runtime.memory import ObjectMemory
from kro.testing.fakeapi import FakeApiServer

NS = "team"
OWNERS = GVR("engine.kro.run", "v1alpha1", "owners")
CONFIGMAPS = GVR("", "v1", "configmaps")
RESOLVER = OfflineSchemaResolver.from_files()


class Binding:
    """The simplest owner adapter: children labelled with the owner's uid and their node."""

    def __init__(self, owner: Mapping[str, Any]) -> None:
        meta = owner["metadata"]
        self.gvr = OWNERS
        self.ref = ObjectRef(OWNERS, meta["namespace"], meta["name"])

    def child_labels(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        return {"test.kro.run/owner": owner["metadata"]["uid"], "test.kro.run/node": node_id}

    foreign_managers = ("other-engine.",)
    reads_in_namespace = False

    def child_annotations(self, owner: Mapping[str, Any], node_id: str) -> dict[str, str]:
        return {}

    def collection_selector(self, owner: Mapping[str, Any], node_id: str) -> str:
        return f"test.kro.run/owner={owner['metadata']['uid']},test.kro.run/node={node_id}"


def graph(
    resources: list[dict[str, Any]], spec: Mapping[str, str] | None = None, **options: Any
) -> Graph:
    """The graph of an `Owner` RGD; `options` are BuildOptions fields (feature gates)."""
    rgd = {
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "engine-test"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "Owner",
                "group": "engine.kro.run",
                "spec": dict(spec or {}),
            },
            "resources": resources,
        },
    }
    return build_graph(rgd, RESOLVER, options=BuildOptions(**options))


def cm(node_id: str, data: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "template": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "${schema.metadata.name}-" + node_id},
            "data": dict(data or {"k": "v"}),
        },
        **extra,
    }


def owner(api: FakeApiServer, spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return api.seed(
        OWNERS,
        {
            "apiVersion": "engine.kro.run/v1alpha1",
            "kind": "Owner",
            "metadata": {"name": "o", "namespace": NS},
            "spec": dict(spec or {}),
        },
    )


async def run(
    g: Graph,
    client: Client,
    obj: dict[str, Any],
    *,
    applier: Applier | None = None,
    recording: RecordingOwnership | None = None,
    binding: OwnerBinding | None = None,
) -> PassResult:
    """A controller pass over an ApplySet, or (with `recording`) a diagnosing dry run."""
    ownership = ApplySetOwnership(
        applier=applier or Applier(client, ApplierOptions(tooling=tooling_for("v0.10.0"))),
        client=client,
        gvr=OWNERS,
    )
    work = GraphPass(
        graph=g,
        owner_obj=obj,
        binding=binding or Binding(obj),
        client=client,
        ownership=ownership if recording is None else recording,
        watches=NoWatches(),
        evaluation=InstanceEvaluation(g, obj),
        diagnose=recording is not None,
    )
    return await work.run()


def recorder(client: Client) -> RecordingOwnership:
    applier = Applier(client, ApplierOptions(tooling="kro explain"))
    return RecordingOwnership(ApplySetOwnership(applier=applier, client=client, gvr=OWNERS))


async def test_every_kind_of_node_yields_its_state(api: FakeApiServer, client: Client) -> None:
    api.seed(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "shared", "namespace": NS},
            "data": {"k": "x"},
        },
    )
    api.seed(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "picked", "namespace": NS, "labels": {"pick": "yes"}},
        },
    )
    g = graph(
        [
            {
                "id": "ext",
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "shared"},
                },
            },
            {
                "id": "picked",
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"selector": {"matchLabels": {"pick": "yes"}}},
                },
            },
            cm("copy", {"k": "${ext.data.k}"}),
            {
                "id": "entries",
                "forEach": [{"n": "${schema.spec.names}"}],
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-${n}"},
                },
            },
            cm("gated", readyWhen=["${gated.data.k == 'never'}"]),
        ],
        spec={"names": "[]string"},
    )
    result = await run(g, client, owner(api, {"names": ["a", "b"]}))
    states = {r.id: r.state for r in result}
    assert states == {
        "ext": NODE_STATE_SYNCED,
        "picked": NODE_STATE_SYNCED,
        "copy": NODE_STATE_SYNCED,
        "entries": NODE_STATE_SYNCED,
        "gated": NODE_STATE_WAITING_FOR_READINESS,
    }
    assert result.nodes["gated"].reason is NodeReason.NOT_READY
    assert api.object(CONFIGMAPS, "o-copy", NS)["data"] == {"k": "x"}  # type: ignore[index]
    for name in ("o-a", "o-b"):
        item = api.object(CONFIGMAPS, name, NS)
        assert item is not None
        assert item["metadata"]["labels"]["test.kro.run/node"] == "entries"
        assert item["metadata"]["labels"][LABEL_APPLYSET_PART_OF]
    assert [str(o) for o in result.nodes["entries"].objects] == [
        f"ConfigMap {NS}/o-a",
        f"ConfigMap {NS}/o-b",
    ]
    assert result.mutated


async def test_a_skip_spreads_to_every_dependent(api: FakeApiServer, client: Client) -> None:
    g = graph(
        [
            cm("base"),
            cm("extra", {"x": "${base.data.k}"}, includeWhen=["${schema.spec.on}"]),
            cm("child", {"x": "${extra.data.x}"}),
            cm("grandchild", {"x": "${child.data.x}"}),
        ],
        spec={"on": "boolean | default=false"},
    )
    result = await run(g, client, owner(api, {"on": False}))
    assert {r.id: r.state for r in result} == {
        "base": NODE_STATE_SYNCED,
        "extra": NODE_STATE_SKIPPED,
        "child": NODE_STATE_SKIPPED,
        "grandchild": NODE_STATE_SKIPPED,
    }
    assert all(result.nodes[n].reason is NodeReason.EXCLUDED for n in ("extra", "grandchild"))
    assert api.object(CONFIGMAPS, "o-child", NS) is None
    assert api.object(CONFIGMAPS, "o-base", NS) is not None


class CountingClient(Client):
    """A client that counts the applies in flight (and lets them pile up before sending)."""

    in_flight = 0
    most = 0
    applied = 0

    async def apply(self, gvr: GVR, body: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        if gvr != CONFIGMAPS:
            return await super().apply(gvr, body, **kwargs)
        CountingClient.in_flight += 1
        CountingClient.most = max(CountingClient.most, CountingClient.in_flight)
        try:
            for _ in range(5):  # every task that may start does so before this one ends
                await asyncio.sleep(0)
            CountingClient.applied += 1
            return await super().apply(gvr, body, **kwargs)
        finally:
            CountingClient.in_flight -= 1


async def test_the_items_of_a_collection_are_applied_at_most_n_at_a_time(
    api: FakeApiServer,
) -> None:
    g = graph(
        [
            {
                "id": "entries",
                "forEach": [{"n": "${schema.spec.names}"}],
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-${n}"},
                },
            }
        ],
        spec={"names": "[]string"},
    )
    names = [f"n{i}" for i in range(12)]
    options = ClientOptions(qps=10_000.0, burst=10_000, max_retries=0)
    for limit, expected in ((3, 3), (0, 12)):  # 0 or less: the default, 20
        CountingClient.most = CountingClient.applied = 0
        async with CountingClient.from_config(ConnectionConfig(server=api.url), options) as c:
            obj = owner(api, {"names": names}) if limit else dict(api.object(OWNERS, "o", NS) or {})
            if not limit:  # a fresh set of names: every item is applied again
                obj["spec"] = {"names": [f"m{i}" for i in range(12)]}
            applier = Applier(c, ApplierOptions(tooling="kro/test", concurrency=limit))
            result = await run(g, c, obj, applier=applier)
        assert result.nodes["entries"].state == NODE_STATE_SYNCED
        assert CountingClient.applied == 12
        assert CountingClient.most == expected


async def test_what_is_no_longer_rendered_is_pruned(api: FakeApiServer, client: Client) -> None:
    g = graph(
        [
            {
                "id": "entries",
                "forEach": [{"n": "${schema.spec.names}"}],
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-${n}"},
                },
            }
        ],
        spec={"names": "[]string"},
    )
    applier = Applier(client, ApplierOptions(tooling="kro/test"))
    first = await run(g, client, owner(api, {"names": ["a", "b", "c"]}), applier=applier)
    assert not first.pruned
    obj = dict(api.object(OWNERS, "o", NS) or {})
    obj["spec"] = {"names": ["a"]}
    second = await run(g, client, obj, applier=applier)
    assert second.pruned
    assert api.object(CONFIGMAPS, "o-a", NS) is not None
    assert api.object(CONFIGMAPS, "o-b", NS) is None
    assert api.object(CONFIGMAPS, "o-c", NS) is None


async def test_nothing_is_pruned_while_a_node_waits_for_data(
    api: FakeApiServer, client: Client
) -> None:
    g = graph(
        [cm("a"), cm("b", {"x": "${schema.spec.values.key}"})], spec={"values": "map[string]string"}
    )
    applier = Applier(client, ApplierOptions(tooling="kro/test"))
    await run(g, client, owner(api, {"values": {"key": "v"}}), applier=applier)
    assert api.object(CONFIGMAPS, "o-b", NS) is not None
    obj = dict(api.object(OWNERS, "o", NS) or {})
    obj["spec"] = {"values": {}}
    result = await run(g, client, obj, applier=applier)
    assert result.nodes["b"].state == NODE_STATE_IN_PROGRESS
    assert result.pending
    assert not result.pruned
    assert api.object(CONFIGMAPS, "o-b", NS) is not None  # waiting is not removal


async def test_a_dry_run_writes_nothing_and_says_what_it_would_write(
    api: FakeApiServer, client: Client
) -> None:
    g = graph([cm("a"), cm("b", {"x": "${a.data.k}"})])
    obj = owner(api)
    before = len([r for r in api.requests if r.method != "GET"])
    recording = recorder(client)
    result = await run(g, client, obj, recording=recording)
    assert [r for r in api.requests[before:] if r.method != "GET"] == []
    assert result.nodes["a"].reason is NodeReason.NOT_CREATED
    assert result.nodes["b"].reason is NodeReason.WAITING
    assert result.nodes["b"].waiting_on == "a"
    assert recording.writes == [f"create ConfigMap {NS}/o-a"]
    await run(g, client, obj)  # the real pass creates both
    recording = recorder(client)
    again = await run(g, client, dict(api.object(OWNERS, "o", NS) or {}), recording=recording)
    assert {r.id: r.state for r in again} == {"a": NODE_STATE_SYNCED, "b": NODE_STATE_SYNCED}
    assert recording.writes == []


async def test_without_the_skip_memory_every_pass_reads_and_applies_again(
    api: FakeApiServer, client: Client
) -> None:
    g = graph([cm("a"), cm("b")])

    def writes() -> int:
        return len([r for r in api.requests if r.method in ("PATCH", "POST", "PUT")])

    for enabled, expected in ((True, 0), (False, 2)):
        api.requests.clear()
        memory = ObjectMemory(enabled=enabled)
        applier = Applier(client, ApplierOptions(tooling="kro/test"), memory=memory)
        obj = owner(api) if enabled else dict(api.object(OWNERS, "o", NS) or {})
        await run(g, client, obj, applier=applier)  # converges (or, switched off, re-applies)
        before = writes()
        again = await run(g, client, dict(api.object(OWNERS, "o", NS) or {}), applier=applier)
        assert {r.state for r in again} == {NODE_STATE_SYNCED}
        assert writes() - before == expected
        assert not again.mutated  # the server's answers show nothing changed either way


async def test_teardown_deletes_in_reverse_order_then_lets_the_owner_go(
    api: FakeApiServer, client: Client
) -> None:
    g = graph(
        [
            cm("first"),
            cm("second", {"x": "${first.data.k}"}),
            cm("third", {"x": "${second.data.x}"}),
        ]
    )
    obj = owner(api)
    obj["metadata"]["finalizers"] = ["test.kro.run/finalizer"]
    obj = api.modify(OWNERS, obj)
    await run(g, client, obj)
    live = dict(api.object(OWNERS, "o", NS) or {})
    order: list[set[str]] = []
    for _ in range(5):
        ownership = ApplySetOwnership(
            applier=Applier(client, ApplierOptions(tooling="kro/test")), client=client, gvr=OWNERS
        )
        step = await teardown_step(ownership, client, live, OWNERS, "test.kro.run/finalizer")
        if step.done:
            break
        assert not step.blocked
        order.append(
            {
                n
                for n in ("first", "second", "third")
                if api.object(CONFIGMAPS, f"o-{n}", NS) is not None
            }
        )
    assert order == [{"first", "second"}, {"first"}, set()]
    assert (api.object(OWNERS, "o", NS) or {})["metadata"].get("finalizers") in (None, [])


async def test_a_deferred_node_waits_for_its_kind_then_applies(
    api: FakeApiServer, client: Client
) -> None:
    """DeferredSchemaResolution: a node whose kind is not served waits (`SchemaPending`,
    naming the kind), its dependents wait, nothing is pruned; once the kind is served the same
    program applies it, as a node of a computed kind."""
    from kro.testing.fakeapi import FakeResource

    widget = {
        "id": "widget",
        "optional": True,
        "template": {
            "apiVersion": "deferred.example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "${schema.metadata.name}"},
            "spec": {"size": 3},
        },
    }
    g = graph(
        [cm("a"), widget, cm("b", {"size": "${string(widget.spec.size)}"})],
        deferred_schema_resolution=True,
    )
    assert g.node("widget").deferred
    applier = Applier(client, ApplierOptions(tooling="kro/test"))
    obj = owner(api)
    result = await run(g, client, obj, applier=applier)
    found = result.nodes["widget"]
    assert (found.state, found.reason) == (NODE_STATE_IN_PROGRESS, NodeReason.SCHEMA_PENDING)
    assert found.message == (
        "kind Widget of deferred.example.com/v1 is not served yet (waiting for its CRD)"
    )
    assert result.nodes["b"].state == NODE_STATE_IN_PROGRESS
    assert result.nodes["b"].reason is NodeReason.WAITING
    assert result.pending
    assert not result.pruned
    assert api.object(CONFIGMAPS, "o-a", NS) is not None

    widgets = FakeResource("deferred.example.com", "v1", "widgets", "Widget")
    api.add_resource(widgets)
    client.mapper.invalidate()  # what the controller does on a CRD event
    result = await run(g, client, dict(api.object(OWNERS, "o", NS) or obj), applier=applier)
    assert result.nodes["widget"].state == NODE_STATE_SYNCED
    assert (api.object(widgets.gvr, "o", NS) or {})["spec"] == {"size": 3}
    assert (api.object(CONFIGMAPS, "o-b", NS) or {})["data"] == {"size": "3"}
